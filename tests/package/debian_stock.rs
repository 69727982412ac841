//! `rocm-pin package --stock-root` against Debian's own ROCm packages (issue 23, items 1, 2
//! and the install part of 4): in the `sid-debian-rocm` chroot of
//! scripts/setup.d/23-debian-rocm-chroot.sh (experimental's 7.2.4 runtime with rocminfo,
//! librocfft0 and libhipfft0), the stand-in patched pair (its SONAMEs libamdhip64.so.7 and
//! libhsa-runtime64.so.1 match Debian's 7.2.4) is packaged against the REAL stock found there
//! by SONAME: one replacement per stock package, each a good Debian package (Multi-Arch: same,
//! shlibs and symbols, the ldconfig trigger, no maintainer scripts, no /opt, lintian-clean),
//! installed with apt, judged by dpkg-shlibdeps and dpkg-gensymbols, and by what the loader
//! resolves. Versions are read from the chroot (dpkg-query), never written here.

use rocm_pin_testkit::assert_says;
use std::path::{Path, PathBuf};

use crate::util::*;
use rocm_pin_kit::sandbox::{ChrootImage, Sandbox};

pub(crate) const IMAGE: &str = "sid-debian-rocm";
/// Debian's runtime packages of the 7.2.4 image (SONAME major 7), HSA first.
const STOCK: &[&str] = &[
    "libhsa-runtime64-1",
    "libamdhip64-7",
    "libhiprtc-builtins7",
    "libhiprtc7",
];
pub(crate) const DEPENDANTS: &[&str] = &["rocminfo", "librocfft0", "libhipfft0"];

/// The image's tarball, or None after saying why the test skips (the testkit's setup-input
/// rule: a skip for a contributor's `cargo test`, a failure under scripts/test).
pub(crate) fn tarball() -> Option<PathBuf> {
    let input = format!("chroot/{IMAGE}.tar.zst");
    let path = rocm_pin_testkit::setup_input(&input);
    if path.is_none() {
        rocm_pin_testkit::skip_without_setup("debian_stock", &input);
    }
    path
}

fn query(sb: &Sandbox, format: &str, package: &str) -> String {
    sb.run_ok(&["dpkg-query", "-W", "-f", format, package])
        .unwrap_or_else(|e| panic!("{package} is not in the image's dpkg database: {e:#}"))
}

pub(crate) fn is_installed(sb: &Sandbox, package: &str) -> bool {
    sb.run(&["dpkg-query", "-W", "-f", "${db:Status-Abbrev}", package])
        .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).trim() == "ii")
}

fn control_members(deb: &Path) -> Vec<String> {
    let out = must_stdout(
        std::process::Command::new("sh")
            .arg("-c")
            .arg("dpkg-deb --ctrl-tarfile \"$1\" | tar t")
            .arg("sh")
            .arg(deb),
    );
    out.lines()
        .map(|l| l.trim_start_matches("./").to_string())
        .filter(|l| !l.is_empty())
        .collect()
}

fn control_member(deb: &Path, member: &str) -> String {
    must_stdout(
        std::process::Command::new("sh")
            .arg("-c")
            .arg("dpkg-deb --ctrl-tarfile \"$1\" | tar xO \"./$2\"")
            .arg("sh")
            .arg(deb)
            .arg(member),
    )
}

/// Package the stand-in pair against the chroot's real stock; the .debs, by stock name.
/// `rocm-pin package` of the stand-in staging (built in `w`) against the chroot's stock, into
/// `w/out`: the run and the output directory.
fn run_package_against(sb: &Sandbox, w: &Path) -> (std::process::Output, PathBuf) {
    let staging = w.join("staging");
    build_staging(&staging, &StagingSpec::like_root(sb.root()));
    let out = w.join("out");
    let res = package_staging(&staging, StockFrom::Root(sb.root()), &out, &[]);
    (res, out)
}

pub(crate) fn package_against(sb: &Sandbox, w: &Path) -> Vec<(String, PathBuf)> {
    let (res, out) = run_package_against(sb, w);
    let stderr = String::from_utf8_lossy(&res.stderr);
    assert!(res.status.success(), "package failed: {stderr}");
    let debs = debs_in(&out);
    assert_eq!(debs.len(), STOCK.len(), "one per stock package: {debs:?}");
    STOCK
        .iter()
        .map(|s| {
            let deb = debs
                .iter()
                .find(|d| field(d, "Package") == format!("{s}-pinned"))
                .unwrap_or_else(|| panic!("no replacement for {s}: {debs:?}"))
                .clone();
            (s.to_string(), deb)
        })
        .collect()
}

/// Each replacement is shaped like Debian's own library packages.
fn check_debian_shape(sb: &Sandbox, stock: &str, deb: &Path) {
    let version = query(sb, "${Version}", stock);
    assert_eq!(field(deb, "Multi-Arch"), "same", "{}", deb.display());
    assert_eq!(field(deb, "Protected"), "yes");
    let provides = field(deb, "Provides");
    assert!(
        provides.contains(&format!("{stock} (= {version})")),
        "{stock}: exact versioned Provides: {provides}"
    );
    for f in ["Conflicts", "Replaces"] {
        assert!(field(deb, f).contains(stock), "{f}: {}", field(deb, f));
    }
    let members = control_members(deb);
    for m in ["shlibs", "symbols", "triggers"] {
        assert!(
            members.contains(&m.to_string()),
            "{stock}: no {m} in {members:?}"
        );
    }
    for script in ["preinst", "postinst", "prerm", "postrm"] {
        assert!(
            !members.contains(&script.to_string()),
            "{stock}: {script} shipped"
        );
    }
    assert!(control_member(deb, "triggers").contains("activate-noawait ldconfig"));
    // shlibs: the stock line as Debian wrote it (ours Provides that name at its exact version).
    let stock_shlibs = sb
        .sh_ok(&format!("cat /var/lib/dpkg/info/{stock}:amd64.shlibs"))
        .unwrap();
    assert_eq!(control_member(deb, "shlibs"), stock_shlibs);
    for (_, path, _) in contents(deb) {
        assert!(
            !path.starts_with("/opt") && !path.starts_with("/etc/ld.so.conf.d"),
            "{stock}: {path} shipped"
        );
    }
}

/// dpkg-shlibdeps for a program linked against our installed libraries, and
/// dpkg-gensymbols of our installed library against our symbols file, both in the chroot.
fn check_shlibdeps_and_gensymbols(sb: &Sandbox, staging_lib: &Path) {
    if sb
        .run_ok(&["sh", "-c", "command -v dpkg-shlibdeps"])
        .is_err()
    {
        let why = "the sid-debian-rocm image has no dpkg-dev (an image made before \
                   23-debian-rocm-chroot.sh installed it): remove the tarball and run scripts/test-setup";
        rocm_pin_testkit::skip(
            "debian_stock",
            &format!("its dpkg-shlibdeps/dpkg-gensymbols part did not run: {why}"),
            rocm_pin_testkit::ROOT_REQUIRED_ENV,
        );
        return;
    }
    // A program using HIP, the HSA runtime and the backport symbol, linked on this machine
    // against the staging (the same SONAMEs), judged in the chroot against what is installed.
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("probe.c");
    std::fs::write(
        &src,
        "int hsa_init(void); int hsa_amd_signal_create_v2(void); int hipInit(void);\n\
         int main(void) { return hsa_init() + hipInit() + hsa_amd_signal_create_v2(); }\n",
    )
    .unwrap();
    let probe = dir.path().join("probe");
    must(
        std::process::Command::new("gcc")
            .arg("-o")
            .arg(&probe)
            .arg(&src)
            .arg(staging_lib.join("libhsa-runtime64.so.1"))
            .arg(staging_lib.join("libamdhip64.so.7")),
    );
    sb.copy_in(&probe, "/tmp/shlibdeps/probe").unwrap();
    let script = r#"set -e
cd /tmp/shlibdeps
mkdir -p debian && printf 'Source: probe\n\nPackage: probe\nArchitecture: any\n' > debian/control
dpkg-shlibdeps -O probe
for p in libhsa-runtime64-1 libamdhip64-7; do
  lib=$(dpkg -L $p-pinned | grep -E '\.so\.[0-9]+$' | head -n1)
  dpkg-gensymbols -c4 -p$p-pinned -v"$(dpkg-query -W -f '${Version}' $p-pinned)" \
    -I/var/lib/dpkg/info/$p-pinned:amd64.symbols -e"$lib" -O/dev/null
done
"#;
    let out = sb.sh(script).unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "dpkg-shlibdeps / dpkg-gensymbols failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The program uses the backport symbol: only ours has it, so its dependency names ours;
    // hipInit is in stock too, so the HIP dependency names the stock package.
    let deps = stdout
        .lines()
        .find(|l| l.starts_with("shlibs:Depends="))
        .unwrap_or("");
    eprintln!("debian_stock: dpkg-shlibdeps of the probe: {deps}");
    assert!(deps.contains("libhsa-runtime64-1-pinned (>="), "{stdout}");
    assert!(
        deps.contains("libamdhip64-7 (>=") && !deps.contains("libamdhip64-7-pinned"),
        "{stdout}"
    );
}

#[test]
fn packages_debians_runtime_as_good_debian_packages_and_installs_them() {
    rocm_pin_testkit::needs_root!("a chroot");
    let Some(tarball) = tarball() else { return };
    let sb = Sandbox::new(&ChrootImage::from_tarball("sid", &tarball).unwrap()).unwrap();
    let work = tempfile::tempdir().unwrap();
    let debs = package_against(&sb, work.path());
    for (stock, deb) in &debs {
        check_debian_shape(&sb, stock, deb);
        assert_lintian_clean(deb);
    }

    // Keep the stock .debs where `rocm-pin install` keeps them (rollback reads them there),
    // repacked from the chroot's dpkg database as install does.
    let kept = keep_stock_debs(&sb, work.path());

    // Install with apt from the chroot's own view: stock out, ours in, dependants stay.
    // sid's apt 3 stops with "Pathname to install is not absolute" on a local .deb whose
    // file name holds `~` and `+` (ours: `7.2.4-1~exp2+pin…`): each goes in as <stock>.deb.
    sb.run_ok(&["mkdir", "-p", "/tmp/ours"]).unwrap();
    let mut argv = vec!["apt-get", "install", "-y", "-q"];
    let paths: Vec<String> = debs
        .iter()
        .map(|(stock, deb)| {
            let at = format!("/tmp/ours/{stock}-pinned.deb");
            sb.copy_in(deb, &at).unwrap();
            at
        })
        .collect();
    argv.extend(paths.iter().map(String::as_str));
    let out = sb.run(&argv).unwrap();
    assert!(
        out.status.success(),
        "apt-get install ours: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    for (stock, _) in &debs {
        assert!(
            is_installed(&sb, &format!("{stock}-pinned")),
            "{stock}-pinned"
        );
        assert!(!is_installed(&sb, stock), "stock {stock} still installed");
    }
    for d in DEPENDANTS {
        assert!(is_installed(&sb, d), "dependant {d} was removed");
    }
    // The loader resolves rocminfo's runtime to the file our marker records.
    let marker: serde_json::Value = serde_json::from_str(
        &sb.read_to_string("/var/lib/rocm-pin/marker/amd64.json")
            .unwrap(),
    )
    .unwrap();
    let (resolved, sha) = rocm_pin_testkit::runtime::resolved_sha256(
        &sb,
        "/usr/bin/rocminfo",
        "libhsa-runtime64.so.1",
    );
    let recorded = rocm_pin_testkit::runtime::marker_sha256s(&marker);
    assert!(
        !recorded.is_empty(),
        "the marker records no library: {marker:#}"
    );
    assert!(
        recorded.contains(&sha),
        "rocminfo loads {resolved} (sha256 {sha}), not ours {recorded:?}"
    );
    // verify on the Debian-flavour host: our marker under the state directory, the loader
    // mapping ours (stock and ours share the path: sha256 against the marker), no loader entry.
    let v = rocm_pin_on_root("verify", sb.root());
    let report = String::from_utf8_lossy(&v.stdout);
    assert_eq!(
        v.status.code(),
        Some(0),
        "verify:\n{report}\n{}",
        String::from_utf8_lossy(&v.stderr)
    );
    assert!(
        report.contains("/var/lib/rocm-pin/marker/amd64.json")
            && report.contains("= ours")
            && report.contains("Debian's packaging: no ld.so.conf.d entry"),
        "{}",
        report
    );
    check_shlibdeps_and_gensymbols(&sb, &work.path().join("staging/lib"));
    downstream_keeps_ours(&sb, &debs, &kept, work.path());
    rollback_restores_stock(&sb);
}

/// Repack each stock package from the chroot's dpkg database into rocm-pin's kept-stock
/// directory and a host copy for a local repository; (stock name, path in the chroot).
fn keep_stock_debs(sb: &Sandbox, w: &Path) -> Vec<(String, String)> {
    use rocm_pin_core::host::{layout::StateLayout, repack, root::Root};
    use rocm_pin_core::ops::install;
    let root = Root::new(sb.root());
    let entries = rocm_pin_core::rocm::read_status(&root).unwrap();
    let host_dir = w.join("stock-repo");
    std::fs::create_dir_all(&host_dir).unwrap();
    let mut kept = vec![];
    for stock in STOCK {
        let e = entries.iter().find(|e| e.package == *stock).unwrap();
        let name = install::deb_file_name(&e.package, &e.version, &e.architecture);
        let at = StateLayout::stock_dir().join(&name);
        std::fs::create_dir_all(sb.path(StateLayout::stock_dir())).unwrap();
        repack::repack(&root, e, &sb.path(&at)).unwrap();
        std::fs::copy(sb.path(&at), host_dir.join(&name)).unwrap();
        kept.push((stock.to_string(), at.display().to_string()));
    }
    kept
}

/// Ours installed, every dependant installed, and verify passing (it checks the loader maps
/// ours by content): the state every downstream step must leave.
fn assert_ours_hold(sb: &Sandbox, after: &str) {
    for stock in STOCK {
        assert!(
            is_installed(sb, &format!("{stock}-pinned")),
            "after {after}: {stock}-pinned gone"
        );
    }
    for d in DEPENDANTS {
        assert!(is_installed(sb, d), "after {after}: dependant {d} removed");
    }
    let v = rocm_pin_on_root("verify", sb.root());
    assert_eq!(
        v.status.code(),
        Some(0),
        "verify after {after}:\n{}",
        String::from_utf8_lossy(&v.stdout)
    );
}

/// The downstream commands that used to put stock back, with stock and ours both published.
fn downstream_keeps_ours(
    sb: &Sandbox,
    debs: &[(String, PathBuf)],
    kept: &[(String, String)],
    w: &Path,
) {
    let ours_dir = w.join("ours-repo");
    std::fs::create_dir_all(&ours_dir).unwrap();
    for (_, deb) in debs {
        std::fs::copy(deb, ours_dir.join(deb.file_name().unwrap())).unwrap();
    }
    sb.add_local_repo("ours", &ours_dir).unwrap();
    sb.add_local_repo("stock", &w.join("stock-repo")).unwrap();
    sb.apt_update().unwrap();
    for stock in STOCK {
        let step = format!("apt-get install --reinstall -y {stock}");
        let out = sb.sh(&step).unwrap();
        eprintln!("debian_stock: `{step}` rc {:?}", out.status.code());
        assert_ours_hold(sb, &step);
    }
    let step = "apt-get -f install -y";
    let out = sb.sh(step).unwrap();
    assert!(
        out.status.success(),
        "{step}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_ours_hold(sb, step);
    let (stock, at) = &kept[1];
    let step = format!("dpkg -i --force-all {at} || true; apt --fix-broken install -y");
    let out = sb.sh(&step).unwrap();
    eprintln!(
        "debian_stock: `{step}` rc {:?}; {stock}: {}",
        out.status.code(),
        query(sb, "${db:Status-Abbrev} ${Version}", stock)
    );
    assert_ours_hold(sb, &step);
}

/// `rocm-pin rollback` inside the chroot puts Debian's packages back from the kept .debs.
fn rollback_restores_stock(sb: &Sandbox) {
    rocm_pin_inside_ok(sb, &["rollback"]);
    for stock in STOCK {
        assert!(is_installed(sb, stock), "rollback did not restore {stock}");
        assert!(
            !is_installed(sb, &format!("{stock}-pinned")),
            "{stock}-pinned left"
        );
    }
    for d in DEPENDANTS {
        assert!(is_installed(sb, d), "rollback removed dependant {d}");
    }
}

/// `rocm-pin install` on the Debian-flavour host: the gate reads the release from the stock
/// packages' versions, the swap keeps the dependants, verify passes.
#[test]
fn rocm_pin_install_on_a_debian_host() {
    rocm_pin_testkit::needs_root!("a chroot");
    let Some(tarball) = tarball() else { return };
    let sb = Sandbox::new(&ChrootImage::from_tarball("sid", &tarball).unwrap()).unwrap();
    let work = tempfile::tempdir().unwrap();
    let debs = package_against(&sb, work.path());
    sb.install_rocm_pin(&bin()).unwrap();
    let mut argv = vec!["rocm-pin".to_string(), "install".into()];
    for (stock, deb) in &debs {
        let at = format!("/tmp/ours/{stock}-pinned.deb");
        sb.copy_in(deb, &at).unwrap();
        argv.push(at);
    }
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let out = sb.run(&argv).unwrap();
    let said = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "rocm-pin install:\n{said}");
    let release = query(
        &sb,
        "${source:Upstream-Version}",
        "libhsa-runtime64-1-pinned",
    );
    assert!(
        said.contains("from the package versions") && said.contains("matches"),
        "the gate reads the package versions ({release}):\n{said}"
    );
    // Debian's library directory is the loader's own: no ld.so.conf.d entry of ours.
    let entries = sb.run_ok(&["ls", "/etc/ld.so.conf.d"]).unwrap();
    assert!(
        !entries.contains("pinned"),
        "a loader entry was written: {entries}"
    );
    assert!(!said.contains("/etc/ld.so.conf.d"), "{said}");
    assert_ours_hold(&sb, "rocm-pin install");
}

/// A Debian host where only the pair's own packages are installed (sid's `apt install
/// libamdhip64-6` does not pull `libhiprtc6`): package refuses in one line naming the one
/// `apt-get install` that makes the host pinnable, not only "no stock owner".
#[test]
fn a_host_without_debians_hiprtc_packages_is_told_what_to_install() {
    rocm_pin_testkit::needs_root!("a chroot");
    let Some(tarball) = tarball() else { return };
    let sb = Sandbox::new(&ChrootImage::from_tarball("sid", &tarball).unwrap()).unwrap();
    sb.sh_ok("dpkg -r --force-depends libhiprtc7 libhiprtc-builtins7")
        .unwrap();
    let work = tempfile::tempdir().unwrap();
    let (res, out) = run_package_against(&sb, work.path());
    let stderr = String::from_utf8_lossy(&res.stderr);
    assert_eq!(res.status.code(), Some(2), "{stderr}");
    assert_says(&stderr, &["no stock owner"]);
    let hint = stderr
        .split("`apt-get install ")
        .nth(1)
        .and_then(|rest| rest.split('`').next())
        .unwrap_or_else(|| panic!("no apt-get install named: {stderr}"));
    let mut named: Vec<&str> = hint.split(' ').collect();
    named.sort();
    assert_eq!(named, ["libhiprtc-builtins7", "libhiprtc7"], "{stderr}");
    assert!(!out.exists() || debs_in(&out).is_empty(), "nothing written");
}
