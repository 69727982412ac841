//! The Dockerfile recipe (docs/docker.md) run in chroots: every RUN body of the recipe is a
//! script under docs/docker/, and these tests run those scripts VERBATIM with the environment
//! the Dockerfile sets. Only the Dockerfile wrapper itself (FROM/COPY) is not exercised: no
//! Docker engine runs here, so `COPY --from=builder /out/ /tmp/rocm-pin/` is a `cp -a`.
//!
//! - builder stage: a bookworm chroot with cmake + g++ (scripts/setup.d/21-builder-chroot.sh)
//!   standing in for the ROCm 7.2.4 image, the stand-in stock ROCm 7.2.4 set installed through
//!   apt, and `build-runtime.sh` building the stand-in source tree with `rocm-pin build`,
//!   `package` and `repo` into ONE artifact directory keyed on the commit.
//! - downstream stages: fresh chroots with the stand-in stock set, `install-runtime.sh` from the
//!   copied artifact or from its signed apt repository, the downstream apt commands that used to
//!   revert the runtime, and `verify-runtime.sh` as the last step.
//!
//! Needs root and the cached chroot images (scripts/test-setup).

use rocm_pin_testkit::assert_says;
/// The guard binary's private copy, what a default recipe image keeps.
const GUARD_COPY: &str = "/usr/lib/rocm-pin/rocm-pin-guard";
use rocm_pin_testkit::assert_success;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use rocm_pin_testkit::scratch::ScratchDir;
use std::time::Instant;

use rocm_pin_core::host::apt::Solver;
use rocm_pin_core::progress::Silent;
use rocm_pin_kit::sandbox::{ChrootImage, Sandbox, SandboxOptions};
use rocm_pin_kit::standin::chroot::{install_probe, install_stock, publish, run_probe};
use rocm_pin_kit::standin::scenarios::{scenarios, Inputs, StockNames};
use rocm_pin_kit::standin::{
    build_loader_probe, build_stock_set, StockRole, StockSet, StockSetSpec,
};

/// Where the Dockerfile COPYs docs/docker/ (see docs/docker.md).
const SCRIPTS: &str = "/usr/local/share/rocm-pin/docker";
/// `COPY --from=builder /out/ /tmp/rocm-pin/` — install-runtime.sh's default artifact path.
const ARTIFACT_IN: &str = "/tmp/rocm-pin";
const OURS: &[&str] = &["hsa-rocr-pinned", "hip-runtime-amd-pinned"];

use crate::util::{bin, cache_dir, must, rc, repo_dir, text};
use rocm_pin_testkit::runtime::{runtime_is_patched, RUNTIME_SONAMES as SONAMES};

fn assert_root() {
    // SAFETY: geteuid has no preconditions.
    assert!(
        unsafe { libc::geteuid() } == 0,
        "the Dockerfile recipe tests need root (chroot); CI runs as root"
    );
}

/// Run docs/docker/<name> inside the chroot exactly as a Dockerfile `RUN` would: bash, the
/// script file as copied from the repository, the given ENV.
fn run_script(sb: &Sandbox, name: &str, env: &[(&str, &str)]) -> Output {
    let path = format!("{SCRIPTS}/{name}");
    let mut cmd = sb.command(&["bash", &path]);
    cmd.envs(env.iter().copied());
    let t = Instant::now();
    let out = cmd.output().expect("run the recipe script in the chroot");
    eprintln!(
        "docker_recipe: {name} {env:?} -> exit {} in {:.1}s",
        rc(&out),
        t.elapsed().as_secs_f64()
    );
    out
}

fn copy_scripts(sb: &Sandbox) {
    sb.copy_in(&repo_dir().join("docs/docker"), SCRIPTS)
        .expect("copy docs/docker into the chroot");
}

/// What the builder stage produced, shared by every downstream test.
struct Built {
    _work: ScratchDir,
    stock: StockSet,
    probe: PathBuf,
    commit: String,
    /// The builder's /out, copied to the host.
    out: PathBuf,
    /// `out/rocm-pin-<12 hex>`.
    artifact: PathBuf,
}

static BUILT: OnceLock<Built> = OnceLock::new();

fn built() -> &'static Built {
    BUILT.get_or_init(run_builder_stage)
}

fn run_builder_stage() -> Built {
    assert_root();
    let t0 = Instant::now();
    let work = ScratchDir::new("docker").expect("scratch directory");
    let w = work.path();
    let spec = StockSetSpec::for_host().expect("host architecture");
    let stock = build_stock_set(&spec, &w.join("stock"), &Silent).expect("stand-in stock set");
    let probe = build_loader_probe(&w.join("probe")).expect("loader probe");
    let src = w.join("src");
    let commit =
        rocm_pin_kit::standin::tree::write_standin_checkout(&src).expect("stand-in checkout");

    let tarball = cache_dir().join("chroot/bookworm-builder.tar.zst");
    assert!(
        tarball.is_file(),
        "{} is missing: run scripts/test-setup (scripts/setup.d/21-builder-chroot.sh makes it)",
        tarball.display()
    );
    let image = ChrootImage::from_tarball("bookworm", &tarball).expect("builder image");
    let sb = Sandbox::new(&image).expect("builder sandbox");
    // The ROCm 7.2.4 image: the stock runtime installed through apt, /opt/rocm -> 7.2.4.
    publish(&sb, "stock", &stock).expect("stock repository");
    install_stock(&sb, &stock).expect("stock set in the builder");
    // The recipe's tool stage: rocm-pin on PATH (from its .deb or a COPY), its guard binary
    // beside it.
    sb.install_rocm_pin(&bin()).unwrap();
    sb.install_rocm_pin_guard(&rocm_pin_testkit::rocm_pin_guard_bin!())
        .unwrap();
    copy_scripts(&sb);
    sb.copy_in(&src, "/src/rocm-systems").unwrap();

    let out = run_script(
        &sb,
        "build-runtime.sh",
        &[
            ("ROCM_PIN_SOURCE", "/src/rocm-systems"),
            ("ROCM_PIN_COMMIT", &commit),
            ("MAX_JOBS", "2"),
        ],
    );
    assert_eq!(rc(&out), 0, "build-runtime.sh failed:\n{}", text(&out));

    let short = &commit[..12];
    let in_chroot = sb.path(format!("/out/rocm-pin-{short}"));
    assert!(
        in_chroot.is_dir(),
        "no artifact {} (keyed on the commit):\n{}",
        in_chroot.display(),
        text(&out)
    );
    // Exactly one artifact, nothing half-made next to it.
    let entries: Vec<String> = std::fs::read_dir(sb.path("/out"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        entries,
        vec![format!("rocm-pin-{short}")],
        "/out holds {entries:?}"
    );
    let host_out = w.join("out");
    let st = Command::new("cp")
        .arg("-a")
        .arg(sb.path("/out"))
        .arg(&host_out)
        .status()
        .unwrap();
    assert!(st.success());
    let artifact = host_out.join(format!("rocm-pin-{short}"));

    // A second run for the same commit refuses: an artifact is never overwritten in place.
    let again = run_script(
        &sb,
        "build-runtime.sh",
        &[
            ("ROCM_PIN_SOURCE", "/src/rocm-systems"),
            ("ROCM_PIN_COMMIT", &commit),
        ],
    );
    assert_eq!(rc(&again), 1, "second build-runtime.sh:\n{}", text(&again));
    assert!(text(&again).contains("already exists"), "{}", text(&again));
    let st = Command::new("diff")
        .arg("-r")
        .arg(sb.path("/out"))
        .arg(&host_out)
        .status()
        .unwrap();
    assert!(st.success(), "the refused second run changed /out");
    eprintln!(
        "docker_recipe: builder stage done in {:.1}s",
        t0.elapsed().as_secs_f64()
    );
    Built {
        _work: work,
        stock,
        probe,
        commit,
        out: host_out,
        artifact,
    }
}

/// A downstream image: a fresh bookworm chroot like an Ubuntu ROCm image (dpkg path-excludes),
/// the stand-in stock set installed through apt, the recipe's scripts copied in.
fn downstream(stock: &StockSet, probe: &Path) -> Sandbox {
    let tarball = cache_dir().join("chroot/bookworm-apt.tar.zst");
    assert!(
        tarball.is_file(),
        "{} is missing: run scripts/test-setup",
        tarball.display()
    );
    let image = ChrootImage::cached("bookworm", &cache_dir()).expect("bookworm image");
    let sb = Sandbox::with_options(
        &image,
        &SandboxOptions {
            dpkg_excludes: true,
            ..Default::default()
        },
    )
    .expect("downstream sandbox");
    publish(&sb, "stock", stock).expect("stock repository");
    install_stock(&sb, stock).expect("stock set");
    install_probe(&sb, probe).expect("probe");
    copy_scripts(&sb);
    sb
}

/// Every scenario of the list, in order, each ending as the list says under bookworm's
/// (classic) solver, with verify-runtime.sh's answer as the list says and the patched pair live
/// after it. The newer stock release is published before the first scenario that wants it.
fn run_scenarios_in_order(sb: &Sandbox, stock: &StockSet) {
    let work = tempfile::tempdir().unwrap();
    let spec = StockSetSpec::for_host().unwrap();
    let custom = build_stock_set(
        &spec.clone().only(&[StockRole::CustomRccl]),
        &work.path().join("custom"),
        &Silent,
    )
    .unwrap();
    let newer =
        build_stock_set(&spec.newer_release(), &work.path().join("newer"), &Silent).unwrap();
    let mut newer_published = false;
    let in_chroot = |deb: &Path, dir: &str| {
        let to = format!("{dir}/{}", deb.file_name().unwrap().to_string_lossy());
        sb.copy_in(deb, &to).unwrap();
        to
    };
    let hip = stock.require(StockRole::HipRuntime).unwrap();
    let inputs = Inputs {
        custom_rccl_deb: in_chroot(&custom.packages[0].deb, "/root/custom"),
        stock_hsa_deb: in_chroot(
            &stock.require(StockRole::HsaRocr).unwrap().deb,
            "/root/stock",
        ),
        stock_hip_deb: in_chroot(&hip.deb, "/root/stock"),
        stock_hip_request: hip.pinned_request(),
        names: StockNames::amd(),
    };
    // The list's order, except that the scenarios after a newer stock release come last: here
    // they share one chroot, and the others are about the release the image was built on.
    let (mut ordered, later): (Vec<_>, Vec<_>) =
        scenarios(&inputs).into_iter().partition(|s| !s.newer_stock);
    ordered.extend(later);
    for s in ordered {
        if s.newer_stock && !newer_published {
            publish(sb, "stock", &newer).unwrap();
            newer_published = true;
        }
        let want = s.expect(&Solver::Classic);
        let o = sb.sh(&s.script).unwrap();
        assert_eq!(rc(&o), want.rc, "scenario {}:\n{}", s.id, text(&o));
        let out = run_script(sb, "verify-runtime.sh", &[]);
        assert_eq!(
            rc(&out) == 0,
            want.verify_ok,
            "scenario {}: verify-runtime.sh:\n{}",
            s.id,
            text(&out)
        );
        assert!(all_patched(sb), "scenario {}: not the patched pair", s.id);
    }
}

fn verify_json(sb: &Sandbox) -> serde_json::Value {
    // The full rocm-pin when the image keeps it, else the guard binary (the recipe's default).
    let tool = if sb.path("/usr/local/bin/rocm-pin").exists() {
        "rocm-pin"
    } else {
        GUARD_COPY
    };
    let out = sb.run(&[tool, "verify", "--json"]).unwrap();
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("verify --json: {e}: {}", text(&out)))
}

fn all_patched(sb: &Sandbox) -> bool {
    let (lines, ok) = run_probe(sb, SONAMES).expect("probe");
    ok && runtime_is_patched(
        lines.iter().map(|l| l.identity.as_deref().unwrap_or("")),
        None,
    )
}

fn installed(sb: &Sandbox, pkg: &str) -> bool {
    sb.installed_version(pkg).unwrap().is_some()
}

#[test]
fn builder_stage_makes_one_signed_artifact_keyed_on_the_commit() {
    rocm_pin_testkit::needs_root!("a chroot");
    let b = built();
    let a = &b.artifact;
    assert_eq!(
        std::fs::read_to_string(a.join("COMMIT")).unwrap().trim(),
        b.commit
    );
    let mut debs: Vec<String> = std::fs::read_dir(a.join("debs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    debs.sort();
    assert_eq!(debs.len(), 2, "{debs:?}");
    assert!(debs[0].starts_with("hip-runtime-amd-pinned_"), "{debs:?}");
    assert!(debs[1].starts_with("hsa-rocr-pinned_"), "{debs:?}");
    for deb in &debs {
        let out = Command::new("dpkg-deb")
            .arg("-f")
            .arg(a.join("debs").join(deb))
            .arg("X-Rocm-Pin-Commit")
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            b.commit,
            "{deb}"
        );
    }
    assert!(a.join("bin/rocm-pin").is_file() && a.join("bin/rocm-pin-guard").is_file());
    // The repository is signed and gpgv (apt's verifier) accepts it with the shipped key.
    let repo = a.join("repo");
    let inrelease = repo.join("dists/stable/InRelease");
    assert!(inrelease.is_file(), "{} missing", inrelease.display());
    must(
        Command::new("gpgv")
            .arg("--keyring")
            .arg(repo.join("archive-key.gpg"))
            .arg(&inrelease),
    );
    // Only the public half of the signing key travels in the artifact.
    let out = Command::new("grep")
        .args(["-rlI", "PRIVATE KEY"])
        .arg(a)
        .output()
        .unwrap();
    assert!(
        out.stdout.is_empty(),
        "secret key material in the artifact: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    // Every file is covered by SHA256SUMS and matches it.
    let out = Command::new("sha256sum")
        .args(["--strict", "-c", "SHA256SUMS"])
        .current_dir(a)
        .output()
        .unwrap();
    assert_success(&out, "the command");
    let sums = std::fs::read_to_string(a.join("SHA256SUMS")).unwrap();
    for f in [
        "COMMIT",
        "bin/rocm-pin",
        "bin/rocm-pin-guard",
        "repo/dists/stable/InRelease",
    ] {
        assert!(
            sums.contains(&format!("  {f}\n")),
            "{f} not in SHA256SUMS:\n{sums}"
        );
    }
}

#[test]
fn copied_artifact_installs_survives_downstream_apt_and_guard_fails_the_breaking_command() {
    rocm_pin_testkit::needs_root!("a chroot");
    let b = built();
    let sb = downstream(&b.stock, &b.probe);
    // COPY --from=builder /out/ /tmp/rocm-pin/
    sb.copy_in(&b.out, ARTIFACT_IN).unwrap();
    let before = sb.installed_packages().unwrap();

    // Refusals first, nothing installed by them: another commit than the Dockerfile pins…
    let wrong = "0".repeat(40);
    let out = run_script(&sb, "install-runtime.sh", &[("ROCM_PIN_COMMIT", &wrong)]);
    assert_eq!(rc(&out), 1, "{}", text(&out));
    assert!(
        text(&out).contains(&format!("ROCM_PIN_COMMIT={wrong}")),
        "{}",
        text(&out)
    );
    // …and an artifact whose bytes do not match its SHA256SUMS (a broken or altered COPY).
    let short = &b.commit[..12];
    let tampered = format!("/tmp/tampered/rocm-pin-{short}");
    sb.copy_in(&b.artifact, &tampered).unwrap();
    let deb = std::fs::read_dir(sb.path(format!("{tampered}/debs")))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let mut bytes = std::fs::read(&deb).unwrap();
    bytes.push(b'\n');
    std::fs::write(&deb, bytes).unwrap();
    let out = run_script(
        &sb,
        "install-runtime.sh",
        &[("ROCM_PIN_ARTIFACT", "/tmp/tampered")],
    );
    assert_eq!(rc(&out), 1, "{}", text(&out));
    assert!(
        text(&out).contains("does not match its SHA256SUMS"),
        "{}",
        text(&out)
    );
    assert_eq!(
        sb.installed_packages().unwrap(),
        before,
        "a refused install changed packages"
    );

    let out = run_script(&sb, "install-runtime.sh", &[]);
    assert_eq!(rc(&out), 0, "install-runtime.sh:\n{}", text(&out));
    // The default (ROCM_PIN_KEEP_TOOL=guard): only the guard binary stays, as the hooks' copy.
    assert!(
        sb.path(GUARD_COPY).is_file() && !sb.path("/usr/local/bin/rocm-pin").exists(),
        "not the guard binary alone in the image"
    );
    assert!(
        !sb.path(format!("{ARTIFACT_IN}/rocm-pin-{}", &b.commit[..12]))
            .exists(),
        "the artifact is left in the image"
    );
    assert!(
        sb.path("/etc/apt/apt.conf.d/80rocm-pin-guard").is_file(),
        "no --guard hook"
    );
    for p in OURS {
        assert!(installed(&sb, p), "{p} not installed:\n{}", text(&out));
    }

    // The downstream image's own apt steps: the scenario list (testdata/scenarios.json) the demo
    // and the install tests run, here one after another in the one image-like chroot, with the
    // recipe's guard on.
    run_scenarios_in_order(&sb, &b.stock);

    let out = run_script(&sb, "verify-runtime.sh", &[]);
    assert_eq!(rc(&out), 0, "verify-runtime.sh:\n{}", text(&out));
    let v = verify_json(&sb);
    assert_eq!(v["ok"], true, "{v}");
    for p in OURS {
        let ok = v["checks"].as_array().unwrap().iter().any(|c| {
            c["name"] == "packages" && c["subject"].as_str() == Some(p) && c["ok"] == true
        });
        assert!(ok, "verify does not report {p} installed: {v}");
    }
    assert!(
        all_patched(&sb),
        "the loader does not open the patched pair"
    );

    // --guard: an apt command that breaks the runtime fails AT that command.
    let o = sb
        .sh("apt-get remove -y --allow-remove-essential hip-runtime-amd-pinned")
        .unwrap();
    assert_ne!(
        rc(&o),
        0,
        "the breaking apt command succeeded:\n{}",
        text(&o)
    );
    assert!(
        text(&o).contains("rocm-pin verify: FAIL"),
        "apt failed, but not because of the guard:\n{}",
        text(&o)
    );
    // …and the recipe's last step fails the build too.
    let out = run_script(&sb, "verify-runtime.sh", &[]);
    assert_eq!(
        rc(&out),
        1,
        "verify-runtime.sh after a removal:\n{}",
        text(&out)
    );
}

#[test]
fn apt_repository_install_then_a_later_revert_fails_verify_runtime() {
    rocm_pin_testkit::needs_root!("a chroot");
    let b = built();
    let sb = downstream(&b.stock, &b.probe);
    // The repository on a static file host (here: a file: URL), rocm-pin from its own .deb.
    sb.copy_in(&b.artifact.join("repo"), "/srv/rocm-pin-repo")
        .unwrap();
    sb.install_rocm_pin(&bin()).unwrap();
    let hip_stock = b.stock.require(StockRole::HipRuntime).unwrap().deb.clone();
    sb.copy_in(&hip_stock, "/root/hip-runtime-amd-stock.deb")
        .unwrap();
    let env = [
        ("ROCM_PIN_APT_REPO", "file:/srv/rocm-pin-repo"),
        ("ROCM_PIN_APT_KEY", "/srv/rocm-pin-repo/archive-key.gpg"),
        ("ROCM_PIN_GUARD", "0"),
    ];
    let out = run_script(&sb, "install-runtime.sh", &env);
    assert_eq!(
        rc(&out),
        0,
        "install-runtime.sh from the apt repository:\n{}",
        text(&out)
    );
    assert!(!sb.path("/etc/apt/apt.conf.d/80rocm-pin-guard").exists());
    let list = sb
        .read_to_string("/etc/apt/sources.list.d/rocm-pin.list")
        .unwrap();
    assert_says(&list, &["signed-by=/usr/share/keyrings/rocm-pin.gpg"]);
    let o = sb.sh("apt-get --fix-broken install -y").unwrap();
    assert_eq!(rc(&o), 0, "{}", text(&o));
    let out = run_script(&sb, "verify-runtime.sh", &[]);
    assert_eq!(rc(&out), 0, "verify-runtime.sh:\n{}", text(&out));
    assert!(all_patched(&sb));

    // A later step reverts the runtime behind apt's back (no guard here): ours purged by force,
    // the stock .deb put back.
    let o = sb
        .sh("dpkg --purge --force-remove-protected --force-depends hip-runtime-amd-pinned && dpkg -i /root/hip-runtime-amd-stock.deb")
        .unwrap();
    assert_eq!(rc(&o), 0, "the revert itself: {}", text(&o));
    assert!(
        !all_patched(&sb),
        "the revert did not bring the stock HIP back"
    );
    let out = run_script(&sb, "verify-runtime.sh", &[]);
    assert_eq!(
        rc(&out),
        1,
        "verify-runtime.sh after a revert:\n{}",
        text(&out)
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("verify-runtime: ERROR"),
        "{}",
        text(&out)
    );
}

#[test]
fn wrong_rocm_version_fails_by_default_and_auto_mode_ends_in_exit_3() {
    rocm_pin_testkit::needs_root!("a chroot");
    let b = built();
    let mut spec = StockSetSpec::for_host().unwrap();
    spec.rocm_version = "7.2.3".into();
    let work = tempfile::tempdir().unwrap();
    let other = build_stock_set(&spec, &work.path().join("stock-723"), &Silent)
        .expect("stand-in ROCm 7.2.3 set");
    let sb = downstream(&other, &b.probe);
    sb.copy_in(&b.out, ARTIFACT_IN).unwrap();
    let before = sb.installed_packages().unwrap();

    // Default mode (require): the build stops, nothing changed.
    let out = run_script(&sb, "install-runtime.sh", &[]);
    assert_eq!(
        rc(&out),
        2,
        "install-runtime.sh on ROCm 7.2.3:\n{}",
        text(&out)
    );
    assert!(
        text(&out).contains("7.2.4"),
        "the refusal does not name the wanted version:\n{}",
        text(&out)
    );
    assert_eq!(
        sb.installed_packages().unwrap(),
        before,
        "a refused install changed packages"
    );
    assert!(!sb.path("/var/lib/rocm-pin/skipped").exists());

    // auto: install exits 0 and records the skip; the last step exits 3 unless told otherwise.
    let out = run_script(&sb, "install-runtime.sh", &[("ROCM_PIN_MODE", "auto")]);
    assert_eq!(
        rc(&out),
        0,
        "install-runtime.sh ROCM_PIN_MODE=auto:\n{}",
        text(&out)
    );
    assert!(
        sb.path("/var/lib/rocm-pin/skipped").is_file(),
        "no skip record"
    );
    assert_eq!(
        sb.installed_packages().unwrap(),
        before,
        "a skipped install changed packages"
    );
    let out = run_script(&sb, "verify-runtime.sh", &[]);
    assert_eq!(
        rc(&out),
        3,
        "verify-runtime.sh on a skipped image:\n{}",
        text(&out)
    );
    let out = run_script(&sb, "verify-runtime.sh", &[("ROCM_PIN_ALLOW_SKIPPED", "1")]);
    assert_eq!(
        rc(&out),
        0,
        "verify-runtime.sh ROCM_PIN_ALLOW_SKIPPED=1:\n{}",
        text(&out)
    );
}

/// docs/docker.md's Dockerfile calls exactly the scripts that exist (and this file runs).
#[test]
fn recipe_doc_names_every_script() {
    let doc = std::fs::read_to_string(repo_dir().join("docs/docker.md")).expect("docs/docker.md");
    for name in [
        "build-runtime.sh",
        "install-runtime.sh",
        "verify-runtime.sh",
    ] {
        assert!(
            repo_dir().join("docs/docker").join(name).is_file(),
            "{name} missing"
        );
        assert!(
            doc.contains(&format!("{SCRIPTS}/{name}")),
            "docs/docker.md does not RUN {SCRIPTS}/{name}"
        );
    }
}
