//! The real ROCm runtime through the whole chain (issue 15): AMD's ROCr, CLR and HIP sources
//! (`../shared/rocm-src`, assembled into rocm-systems' layout as a git repository by
//! scripts/lib/assemble-rocm-src.sh) built by `rocm-pin build` with Debian's ROCm 7.2.4
//! toolchain in the sid + experimental chroot (scripts/setup.d/22-rocm-toolchain-chroot.sh),
//! with the patch series in tests/fixtures/real-patches and ccache sharing its objects through a
//! redis server on 127.0.0.1 (remote storage only: every hit comes from the shared server).
//! Then `rocm-pin package` refuses the stand-in ROCm 7.2.4 stock set (HIP's SONAME major 6 vs
//! 7), packages against a stand-in set shaped like AMD's 6.3 packages, `rocm-pin install`s
//! into the chroot, `verify` passes only with the skipped backport check accepted, and a small
//! C program loads OUR libamdhip64.so.6 and libhsa-runtime64.so.1 — also after
//! `apt-get install --reinstall` of the stock names. The same staging, not built again, then
//! replaces Debian's own ROCm 6.4.3 packages (tests/build/real_debian.rs).
//!
//! Needs root, the cached toolchain chroot, the `sid-debian-rocm6-dev` image
//! (scripts/setup.d/23-debian-rocm-chroot.sh) and the shared sources (`ROCM_PIN_ROCM_SRC`
//! overrides `$CARGO_MANIFEST_DIR/../shared/rocm-src`). The compile cache persists in
//! `ROCM_PIN_COMPILE_CACHE` (default /var/cache/rocm-pin/compile-cache: redis' dump.rdb); the
//! test passes cold too (measured: about 12 minutes cold on 2 busy CPUs, see docs/building.md).

use rocm_pin_testkit::assert_says;
use rocm_pin_testkit::assert_success;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Instant;

use crate::util::{labeled, must, ChrootLog};
use rocm_pin_core::ops::build::BuildManifest;
use rocm_pin_core::progress::Silent;
use rocm_pin_kit::sandbox::{ChrootImage, Sandbox, SandboxOptions};
use rocm_pin_kit::standin::chroot::{install_stock, publish};
use rocm_pin_kit::standin::{build_stock_set, StockSet, StockSetSpec};

/// The chroot runs of this module, timed under its name on stderr.
const CHROOT: ChrootLog = ChrootLog("build_real");

const SRC: &str = "/src/rocm-systems";
const PATCHES: &str = "/src/patches";
const OUT: &str = "/build/staging";
const PREFIX: &str = "/opt/rocm-6.3.0";
const REDIS_DIR: &str = "/var/lib/rocm-pin-compile-cache";

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn rocm_src() -> PathBuf {
    std::env::var_os("ROCM_PIN_ROCM_SRC")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("../shared/rocm-src"))
}

fn compile_cache() -> PathBuf {
    std::env::var_os("ROCM_PIN_COMPILE_CACHE")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/var/cache/rocm-pin/compile-cache"))
}

/// A free TCP port on 127.0.0.1 for the redis server.
fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    l.local_addr().unwrap().port()
}

/// The shared compile cache: redis on 127.0.0.1 inside the chroot, loaded from and saved to
/// the persistent dump. Stopped on drop (before the sandbox goes away).
struct CompileCache<'a> {
    sb: &'a Sandbox,
    port: u16,
}

impl<'a> CompileCache<'a> {
    fn start(sb: &'a Sandbox) -> CompileCache<'a> {
        let dump = compile_cache().join("dump.rdb");
        std::fs::create_dir_all(sb.path(REDIS_DIR)).unwrap();
        if dump.is_file() {
            std::fs::copy(&dump, sb.path(format!("{REDIS_DIR}/dump.rdb"))).unwrap();
        }
        let port = free_port();
        CHROOT.sh_ok(
            sb,
            &format!(
                "redis-server --bind 127.0.0.1 --port {port} --daemonize yes --dir {REDIS_DIR} \
                 --dbfilename dump.rdb --save '' --appendonly no --logfile {REDIS_DIR}/redis.log \
                 && for i in $(seq 1 100); do redis-cli -p {port} ping 2>/dev/null | grep -q PONG \
                 && exit 0; sleep 0.1; done; cat {REDIS_DIR}/redis.log; exit 1"
            ),
        );
        CompileCache { sb, port }
    }

    fn env(&self) -> String {
        format!(
            "CCACHE_DIR=/tmp/ccache-local CCACHE_REMOTE_ONLY=true \
             CCACHE_REMOTE_STORAGE=redis://127.0.0.1:{}",
            self.port
        )
    }

    /// Keep the objects for the next run on this machine (atomically replaced).
    fn save(&self) {
        CHROOT.sh_ok(self.sb, &format!("redis-cli -p {} save", self.port));
        let dir = compile_cache();
        std::fs::create_dir_all(&dir).unwrap();
        let tmp = dir.join(format!(".dump.{}.rdb", std::process::id()));
        std::fs::copy(self.sb.path(format!("{REDIS_DIR}/dump.rdb")), &tmp).unwrap();
        std::fs::rename(&tmp, dir.join("dump.rdb")).unwrap();
    }
}

impl Drop for CompileCache<'_> {
    fn drop(&mut self) {
        let _ = self
            .sb
            .sh(&format!("redis-cli -p {} shutdown nosave", self.port));
    }
}

fn rocm_pin_build(
    sb: &Sandbox,
    cache: &CompileCache,
    commit: &str,
    out: &str,
    extra: &str,
) -> Output {
    CHROOT.sh(
        sb,
        &format!(
            "env {} nice -n 10 rocm-pin build --source {SRC} --commit {commit} --rocm-path /usr \
             --llvm-dir /usr/lib/llvm-22 --no-backport-check --compiler-launcher ccache \
             --clr-cmake-arg=-DHIP_ENABLE_ROCPROFILER_REGISTER=OFF \
             --clr-cmake-arg=-DBUILD_TESTS=OFF --out {out} {extra} 2>&1",
            cache.env()
        ),
    )
}

/// Refusals that must come before anything compiles: the unpatched tree's comgr request, a
/// patch that does not apply, an offload target the compiler lacks.
fn refusals_before_compiling(sb: &Sandbox, cache: &CompileCache, commit: &str) {
    let out = rocm_pin_build(sb, cache, commit, "/build/refused", "");
    let t = labeled(&out);
    assert_eq!(out.status.code(), Some(2), "{t}");
    for want in [
        "comgr 3.0.0",
        "find_package(amd_comgr 2.8",
        "projects/clr/rocclr/cmake/ROCclrLC.cmake:21",
    ] {
        assert!(t.contains(want), "missing {want:?}:\n{t}");
    }
    assert!(!t.contains("configure-rocr"), "{t}");

    // A patch against a line that is not in the tree.
    let bad = "--- a/projects/clr/rocclr/cmake/ROCclrLC.cmake\n\
               +++ b/projects/clr/rocclr/cmake/ROCclrLC.cmake\n\
               @@ -1,1 +1,1 @@\n-no such line in the tree\n+replacement\n";
    sb.write("/src/bad/0009-does-not-apply.patch", bad).unwrap();
    let out = rocm_pin_build(
        sb,
        cache,
        commit,
        "/build/refused",
        &format!("--patches {PATCHES} --patch /src/bad/0009-does-not-apply.patch"),
    );
    let t = labeled(&out);
    assert_eq!(out.status.code(), Some(2), "{t}");
    for want in [
        "0009-does-not-apply.patch",
        "projects/clr/rocclr/cmake/ROCclrLC.cmake",
        "does not apply",
    ] {
        assert!(t.contains(want), "missing {want:?}:\n{t}");
    }

    // A target clang-22 does not know, added to ROCr's hard-coded trap-handler list.
    let list = "projects/rocr-runtime/runtime/hsa-runtime/core/runtime/trap_handler/CMakeLists.txt";
    let unknown = CHROOT.sh_ok(
        sb,
        &format!(
            "cd /tmp && rm -rf t && git clone -q {SRC} t && cd t && \
             sed -i 's/set (TARGET_DEVS \"gfx900;/set (TARGET_DEVS \"gfx900;gfx9999;/' {list} && \
             git diff"
        ),
    );
    assert_says(&unknown, &["gfx9999"]);
    sb.write("/src/bad/0010-unknown-target.patch", &unknown)
        .unwrap();
    let out = rocm_pin_build(
        sb,
        cache,
        commit,
        "/build/refused",
        &format!("--patches {PATCHES} --patch /src/bad/0010-unknown-target.patch"),
    );
    let t = labeled(&out);
    assert_eq!(out.status.code(), Some(2), "{t}");
    assert!(
        t.contains("gfx9999") && t.contains(list) && t.contains("TARGET_DEVS"),
        "{}",
        t
    );
    assert!(
        !t.contains("gfx900,") && !t.contains("configure-rocr"),
        "{t}"
    );
}

fn manifest(sb: &Sandbox) -> BuildManifest {
    let text = std::fs::read_to_string(sb.path(format!("{OUT}/rocm-pin-build.json"))).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn sha256(path: &Path) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(Sha256::digest(std::fs::read(path).unwrap()))
}

/// A CLR configure that fails after ROCr built; the next build with the same ROCr inputs must
/// not rebuild ROCr. Then the real build, and the manifest's provenance.
fn build_with_cached_rocr_stage(sb: &Sandbox, cache: &CompileCache, commit: &str) {
    let out = rocm_pin_build(
        sb,
        cache,
        commit,
        OUT,
        &format!("--patches {PATCHES} --clr-cmake-arg=-DHIPCC_BIN_DIR=/nonexistent"),
    );
    let t = labeled(&out);
    assert!(!out.status.success(), "{t}");
    assert!(
        t.contains("build-rocr: done") && t.contains("configure-clr: FAILED"),
        "{}",
        t
    );

    let out = rocm_pin_build(
        sb,
        cache,
        commit,
        OUT,
        &format!("--patches {PATCHES} --clr-cmake-arg=-DHIPCC_BIN_DIR=/usr/bin"),
    );
    let t = labeled(&out);
    assert!(out.status.success(), "{t}");
    assert_says(&t, &["ROCr's stage is cached"]);
    assert!(!t.contains("build-rocr:"), "ROCr was rebuilt:\n{t}");
    eprintln!("{t}");

    let m = manifest(sb);
    assert_eq!(m.commit, commit);
    assert_eq!(m.llvm_dir.as_deref(), Some("/usr/lib/llvm-22"));
    assert!(m.backport_check_skipped);
    assert!(
        m.tools
            .get("amd_comgr")
            .is_some_and(|v| v.starts_with("3.")),
        "{:?}",
        m.tools
    );
    let fixtures = repo().join("tests/fixtures/real-patches");
    let mut names: Vec<String> = std::fs::read_dir(&fixtures)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let recorded: Vec<(String, String)> = m
        .patches
        .iter()
        .map(|p| (p.name.clone(), p.sha256.clone()))
        .collect();
    let expected: Vec<(String, String)> = names
        .iter()
        .map(|n| (n.clone(), sha256(&fixtures.join(n))))
        .collect();
    assert_eq!(recorded, expected);
    let launcher = m.compiler_launcher.as_ref().expect("launcher recorded");
    assert_eq!(launcher.program, "ccache");
    assert_eq!(
        launcher.config.get("remote_storage").map(String::as_str),
        Some(format!("redis://127.0.0.1:{}", cache.port).as_str())
    );
    let lib = |soname: &str| {
        m.libraries
            .iter()
            .find(|l| l.soname.as_deref() == Some(soname))
            .unwrap_or_else(|| panic!("no {soname} in {:#?}", m.libraries))
    };
    let hip = lib("libamdhip64.so.6");
    assert!(
        hip.path.starts_with("lib/libamdhip64.so.6.3."),
        "{}",
        hip.path
    );
    assert!(
        hip.needed.iter().any(|n| n == "libamd_comgr.so.3"),
        "{:?}",
        hip.needed
    );
    assert!(
        hip.needed.iter().any(|n| n == "libhsa-runtime64.so.1"),
        "{:?}",
        hip.needed
    );
    let hsa = lib("libhsa-runtime64.so.1");
    assert_eq!(hsa.path, "lib/libhsa-runtime64.so.1.18.0");
    assert_eq!(hsa.backport_symbol, Some(false));
    let elf = rocm_pin_core::elf::read_elf(&sb.path(format!("{OUT}/{}", hsa.path))).unwrap();
    assert!(
        elf.export("hsa_ext_image_create").is_some(),
        "image support built"
    );
    assert!(elf.export("hsa_amd_signal_create").is_some());
}

/// `rocm-pin package` in the chroot against `stock`'s debs, copied in under /stock/<tag>.
/// `rocm-pin package` of the real build against the stand-in AMD stock set `stock`. That set is
/// the kit's, not AMD's: it exports the stand-in's probe (`rocm_pin_identity`) and hiprtc
/// version nodes no real build has, so the ABI check is told to let them through
/// (`--allow-missing-symbols`, recorded in the packages); the ABI check itself is judged
/// against Debian's real libraries (`real_debian`, `tests/package/debian_abi.rs`).
fn package(sb: &Sandbox, stock: &StockSet, tag: &str) -> Output {
    let dir = format!("/stock/{tag}");
    sb.copy_in(&stock.out_dir, &dir).unwrap();
    let debs: Vec<String> = stock
        .debs()
        .iter()
        .map(|d| format!("{dir}/{}", d.file_name().unwrap().to_string_lossy()))
        .collect();
    CHROOT.sh(
        sb,
        &format!(
            "rocm-pin package --allow-missing-symbols --staging {OUT} --stock-deb {} --out /debs/{tag} 2>&1",
            debs.join(" ")
        ),
    )
}

fn load(sb: &Sandbox) -> (i64, i64, i64, Vec<String>) {
    let out = CHROOT.sh_ok(sb, "/usr/local/bin/load-hip libamdhip64.so.6");
    eprintln!("{out}");
    let field = |name: &str, i: usize| -> i64 {
        out.lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split('\t').nth(i))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {name} in:\n{out}"))
    };
    let mapped = out
        .lines()
        .filter_map(|l| l.strip_prefix("mapped\t"))
        .map(str::to_string)
        .collect();
    (
        field("hipRuntimeGetVersion", 2),
        field("hipGetDeviceCount", 1),
        field("hipGetDeviceCount", 2),
        mapped,
    )
}

/// OUR files are the ones mapped: under the prefix, same bytes as the marker records.
fn assert_ours_loaded(sb: &Sandbox) {
    let (version, count_rc, _count, mapped) = load(sb);
    // HIP 6.3 (the VERSION file of the HIP tarball): 6 * 10^7 + 3 * 10^5 + build.
    assert_eq!(version / 10_000_000, 6, "hipRuntimeGetVersion {version}");
    assert_eq!(
        (version / 100_000) % 100,
        3,
        "hipRuntimeGetVersion {version}"
    );
    assert_eq!(
        count_rc, 100,
        "hipGetDeviceCount must be hipErrorNoDevice without a GPU"
    );
    let marker: rocm_pin_core::rocm::Marker = serde_json::from_str(
        &sb.read_to_string(&format!("{PREFIX}/.info/rocm-pin.json"))
            .unwrap(),
    )
    .unwrap();
    for soname in ["libamdhip64.so.6", "libhsa-runtime64.so.1"] {
        let path = mapped
            .iter()
            .find(|p| p.ends_with(&format!("/{soname}")) || p.contains(&format!("/{soname}.")))
            .unwrap_or_else(|| panic!("{soname} not mapped: {mapped:?}"));
        assert!(
            path.starts_with(&format!("{PREFIX}/lib/")),
            "{soname} came from {path}, not from {PREFIX}/lib: {mapped:?}"
        );
        let real = sb.path(sb.resolve(path).unwrap());
        let ours = marker
            .libraries
            .iter()
            .find(|l| l.soname == soname)
            .unwrap();
        assert_eq!(
            sha256(&real),
            ours.sha256,
            "{path} is not our {}",
            ours.path
        );
    }
}

fn install_and_load(sb: &Sandbox, stock63: &StockSet) {
    publish(sb, "stock63", stock63).unwrap();
    install_stock(sb, stock63).unwrap();
    // Without the acceptance, install's own verify fails on the recorded skip (exit 1), and the
    // packages stay installed for the operator to judge; with it, verify passes.
    let out = CHROOT.sh(
        sb,
        "rocm-pin install --mode require $(ls /debs/stock63/*.deb) 2>&1",
    );
    let t = labeled(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert_says(&t, &["FAIL backport-symbol"]);
    let out = CHROOT.sh(
        sb,
        "rocm-pin install --mode require --accept-skipped-backport-check $(ls /debs/stock63/*.deb) 2>&1",
    );
    assert_success(&out, "the command");

    let out = CHROOT.sh(sb, "rocm-pin verify 2>&1");
    let t = labeled(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(
        t.contains("backport-symbol") && t.contains("--accept-skipped-backport-check"),
        "{}",
        t
    );
    let out = CHROOT.sh(sb, "rocm-pin verify --accept-skipped-backport-check 2>&1");
    let t = labeled(&out);
    assert!(out.status.success(), "{t}");
    assert!(
        t.contains("0001-rocclr-accept-comgr-3.patch"),
        "patches shown: {t}"
    );
    eprintln!("{t}");
    // status: the series and the skip shown; unhealthy unless the skip is accepted.
    let out = CHROOT.sh(sb, "rocm-pin status 2>&1");
    assert_eq!(out.status.code(), Some(1), "{}", labeled(&out));
    assert!(
        labeled(&out).contains("backport-symbol"),
        "{}",
        labeled(&out)
    );
    let status = CHROOT.sh_ok(sb, "rocm-pin status --accept-skipped-backport-check");
    assert!(
        status.contains("0002-hip-define-wavefront-size-for-llvm-22.patch")
            && status.contains("--no-backport-check"),
        "{}",
        status
    );
    let status = CHROOT.sh_ok(sb, "dpkg-query -W -f='${X-Rocm-Pin-Patches}|${X-Rocm-Pin-Backport-Check}\\n' hsa-rocr-pinned hip-runtime-amd-pinned");
    for line in status.lines() {
        assert!(
            line.contains("0003-") && line.ends_with("|skipped"),
            "{status}"
        );
    }

    sb.copy_in(
        &repo().join("tests/fixtures/real-load/load_hip.c"),
        "/tmp/load_hip.c",
    )
    .unwrap();
    CHROOT.sh_ok(sb, "gcc -O1 -o /usr/local/bin/load-hip /tmp/load_hip.c");
    assert_ours_loaded(sb);

    let out = CHROOT.sh(
        sb,
        "apt-get install --reinstall -y hip-runtime-amd hsa-rocr 2>&1",
    );
    eprintln!("{}", labeled(&out));
    assert_ours_loaded(sb);
    let out = CHROOT.sh(sb, "rocm-pin verify --accept-skipped-backport-check 2>&1");
    assert_success(&out, "the command");
}

#[test]
fn real_rocm_runtime_builds_packages_installs_and_loads() {
    rocm_pin_testkit::needs_root!("a chroot");
    let t0 = Instant::now();
    let tarball = rocm_pin_testkit::needs_setup!("chroot/sid-rocm-toolchain.tar.zst");
    // Checked before the build, which takes minutes: the Debian step needs it at the end.
    let debian_tarball = rocm_pin_testkit::needs_setup!(crate::real_debian::IMAGE);
    // ROCm's sources are not downloaded by scripts/test-setup: they sit beside the clone.
    if !rocm_src().is_dir() {
        rocm_pin_testkit::skip(
            "real_rocm_runtime_builds_packages_installs_and_loads",
            &format!(
                "needs ROCm's sources at {} (a directory beside the clone, ../shared/rocm-src; \
                 ROCM_PIN_ROCM_SRC names another)",
                rocm_src().display()
            ),
            rocm_pin_testkit::SETUP_REQUIRED_ENV,
        );
        return;
    }
    let work = tempfile::Builder::new()
        .prefix("rocm-pin-build-real-")
        .tempdir()
        .unwrap();
    let src = work.path().join("rocm-systems");
    let out = must(
        Command::new("bash")
            .arg(repo().join("scripts/lib/assemble-rocm-src.sh"))
            .arg(rocm_src())
            .arg(&src),
    );
    let commit = String::from_utf8_lossy(&out.stdout).trim().to_string();
    eprintln!("build_real: sources assembled at commit {commit}");

    let spec = StockSetSpec::for_host().unwrap();
    let stock72 = build_stock_set(&spec, &work.path().join("stock72"), &Silent).unwrap();
    let arch = spec.architecture.clone();
    let stock63 = build_stock_set(
        &StockSetSpec::rocm_6_3(&arch),
        &work.path().join("stock63"),
        &Silent,
    )
    .unwrap();

    let image = ChrootImage::from_tarball("sid", &tarball).unwrap();
    let sb = Sandbox::with_options(
        &image,
        &SandboxOptions {
            mount_proc: true,
            ..SandboxOptions::default()
        },
    )
    .unwrap();
    sb.install_rocm_pin(&crate::util::bin()).unwrap();
    sb.copy_in(&src, SRC).unwrap();
    sb.copy_in(&repo().join("tests/fixtures/real-patches"), PATCHES)
        .unwrap();

    let cache = CompileCache::start(&sb);
    refusals_before_compiling(&sb, &cache, &commit);
    build_with_cached_rocr_stage(&sb, &cache, &commit);
    cache.save();
    drop(cache);
    eprintln!("build_real: built in {:.0}s", t0.elapsed().as_secs_f64());

    let out = package(&sb, &stock72, "stock72");
    let t = labeled(&out);
    assert_eq!(out.status.code(), Some(2), "{t}");
    assert!(
        t.contains("SONAME change")
            && t.contains("libamdhip64.so.7")
            && t.contains("libamdhip64.so.6"),
        "{}",
        t
    );
    let out = package(&sb, &stock63, "stock63");
    assert_success(&out, "the command");
    install_and_load(&sb, &stock63);
    eprintln!(
        "build_real: AMD-shaped chain in {:.0}s",
        t0.elapsed().as_secs_f64()
    );

    // The same staging, not built again, replacing Debian's own packages (issue 23, item 5).
    let staging = keep_staging(&sb, work.path());
    drop(sb);
    crate::real_debian::replaces_debian_stock(&crate::util::bin(), &staging, &debian_tarball);
    eprintln!(
        "build_real: whole chain in {:.0}s",
        t0.elapsed().as_secs_f64()
    );
}

/// The build's staging copied out of the build chroot (into `work`, removed with it), and also
/// to `ROCM_PIN_REAL_STAGING_KEEP` when set: the input of the Debian step alone
/// (`kept_real_staging_replaces_debian_stock`, `ROCM_PIN_REAL_STAGING`) without a rebuild.
fn keep_staging(sb: &Sandbox, work: &Path) -> PathBuf {
    let copy = |dest: &Path| {
        must(Command::new("cp").arg("-a").arg(sb.path(OUT)).arg(dest));
    };
    let staging = work.join("staging");
    copy(&staging);
    if let Some(keep) = std::env::var_os("ROCM_PIN_REAL_STAGING_KEEP").filter(|v| !v.is_empty()) {
        let keep = PathBuf::from(keep);
        if keep.exists() {
            std::fs::remove_dir_all(&keep).unwrap();
        }
        copy(&keep);
        eprintln!("build_real: staging kept in {}", keep.display());
    }
    staging
}
