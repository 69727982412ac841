//! What a new user meets on a machine without ROCm (issue 16): every hint leads somewhere, is
//! said once, and nothing expensive starts before what can be checked has been checked.

use rocm_pin_testkit::assert_says;
use rocm_pin_testkit::assert_success;
use std::path::Path;
use std::process::{Command, Output};

use crate::util::{image, packages, text, OURS_DIR};
use rocm_pin_kit::sandbox::Sandbox;

fn rocm_pin(args: &[&str]) -> Output {
    Command::new(crate::util::bin())
        .args(args)
        .env_remove("ROCM_PIN_MODE")
        .output()
        .expect("rocm-pin runs")
}

/// A root like a fresh Debian machine's, as far as rocm-pin looks: a dpkg database that knows
/// no ROCm package, and no /opt/rocm.
fn root_without_rocm(dir: &Path) -> String {
    std::fs::create_dir_all(dir.join("var/lib/dpkg/info")).unwrap();
    std::fs::write(
        dir.join("var/lib/dpkg/status"),
        "Package: libc6\nStatus: install ok installed\nVersion: 2.36-9\nArchitecture: amd64\n\
         Maintainer: x <x@example.org>\nDescription: libc\n\n",
    )
    .unwrap();
    dir.to_str().unwrap().to_string()
}

#[test]
fn verify_without_rocm_says_there_is_no_rocm_instead_of_sending_to_install() {
    let tmp = tempfile::tempdir().unwrap();
    let root = root_without_rocm(tmp.path());
    let out = rocm_pin(&["verify", "--json", "--root", &root]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let checks = report["checks"].as_array().unwrap();
    assert_eq!(checks.len(), 1, "{report:#}");
    assert_eq!(checks[0]["name"], "rocm", "{report:#}");
    let detail = checks[0]["detail"].as_str().unwrap();
    assert_says(detail, &["no ROCm installation found"]);
    assert!(
        detail.contains("/opt/rocm") && detail.contains(&root),
        "says where it looked: {detail}"
    );
    assert!(
        !detail.contains("rocm-pin install"),
        "install would only refuse on this host: {detail}"
    );
}

#[test]
fn status_without_rocm_says_what_the_gate_would_decide_under_each_mode() {
    let tmp = tempfile::tempdir().unwrap();
    let root = root_without_rocm(tmp.path());
    let out = rocm_pin(&["status", "--root", &root]);
    assert_success(&out, "the command");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let gate = stdout.lines().find(|l| l.starts_with("gate:")).unwrap();
    assert!(
        gate.contains("would refuse") && gate.contains("mode require"),
        "{}",
        gate
    );
    assert_says(gate, &["/opt/rocm-7.2.4/.info/version is missing"]);

    let out = Command::new(crate::util::bin())
        .args(["status", "--json", "--root", &root])
        .env("ROCM_PIN_MODE", "auto")
        .output()
        .unwrap();
    let s: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let gate = s["gate"].as_str().unwrap();
    assert!(
        gate.contains("would skip this host") && gate.contains("mode auto"),
        "{}",
        gate
    );
}

#[test]
fn package_against_a_root_without_rocm_points_to_stock_debs_with_or_without_prefix() {
    let tmp = tempfile::tempdir().unwrap();
    let w = tmp.path();
    let staging = w.join("staging");
    rocm_pin_testkit::staging::build_staging(
        &staging,
        &rocm_pin_testkit::staging::StagingSpec::default(),
    );
    let commit_time = rocm_pin_testkit::staging::COMMIT_TIME.to_string();
    let root = root_without_rocm(&w.join("root"));
    for prefix in [None, Some("/opt/rocm-7.2.4")] {
        let out_dir = w.join("out");
        let mut args = vec![
            "package",
            "--staging",
            staging.to_str().unwrap(),
            "--commit",
            rocm_pin_testkit::staging::COMMIT,
            "--commit-time",
            &commit_time,
            "--out",
            out_dir.to_str().unwrap(),
            "--stock-root",
            &root,
        ];
        if let Some(p) = prefix {
            args.extend(["--prefix", p]);
        }
        let out = rocm_pin(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{prefix:?}: {stderr}");
        assert!(
            stderr.contains("--stock-deb hsa-rocr_*.deb hip-runtime-amd_*.deb"),
            "{prefix:?}: the way forward without a ROCm host is the stock .debs: {stderr}"
        );
        match prefix {
            None => assert!(stderr.contains("no ROCm installation under"), "{stderr}"),
            Some(p) => {
                assert_says(&stderr, &[&format!("--prefix {p} does not exist")]);
                assert!(
                    !stderr.contains("give --prefix"),
                    "with --prefix given, asking for --prefix again loops: {stderr}"
                );
            }
        }
        assert!(
            !out_dir.exists() || std::fs::read_dir(&out_dir).unwrap().next().is_none(),
            "nothing written"
        );
    }
}

#[test]
fn build_from_a_url_without_rocm_refuses_before_fetching() {
    let tmp = tempfile::tempdir().unwrap();
    let out_dir = tmp.path().join("staging");
    let missing_rocm = tmp.path().join("no-rocm-here");
    // A URL nobody answers: reaching the fetch would fail with git's error, not ours.
    let out = rocm_pin(&[
        "build",
        "--source",
        "https://rocm-pin.invalid/rocm-systems",
        "--rocm-path",
        missing_rocm.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_says(
        &stderr,
        &[&format!(
            "ROCm path {} does not exist; nothing was fetched",
            missing_rocm.display()
        )],
    );
    assert!(!stderr.contains("==> fetch"), "{stderr}");
    assert!(!out_dir.exists(), "nothing written to --out");
}

/// The demo prints the real-host chain; it must be the README's, `--guard` included.
#[test]
fn the_demo_prints_the_readme_real_host_commands() {
    let readme = include_str!("../../README.md");
    let squash = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let readme_lines: Vec<String> = readme.lines().map(squash).collect();
    for cmd in rocm_pin_kit::demo::real_host_commands() {
        if cmd.starts_with('#') {
            continue;
        }
        let command = squash(cmd.split('#').next().unwrap());
        assert!(
            readme_lines.iter().any(|l| l.starts_with(&command)),
            "the demo prints `{command}`, which README.md does not show"
        );
    }
    assert!(rocm_pin_kit::demo::real_host_commands()
        .iter()
        .any(|c| c.contains("rocm-pin install") && c.contains("--guard")));
}

#[test]
fn install_on_a_host_without_rocm_refuses_once() {
    rocm_pin_testkit::needs_root!("a chroot");
    let p = packages();
    let sb = Sandbox::new(&image("bookworm")).expect("sandbox");
    sb.install_rocm_pin(&crate::util::bin()).unwrap();
    sb.copy_in(&p.ours_dir, OURS_DIR).unwrap();
    let out = sb.run(&crate::util::install_argv(&p.ours)).unwrap();
    let all = text(&out);
    assert_eq!(out.status.code(), Some(2), "{all}");
    let reason = ".info/version is missing";
    assert_eq!(
        all.matches(reason).count(),
        1,
        "the refusal is said exactly once:\n{all}"
    );
}

/// A fresh cloud machine often has apt's lock held at boot (unattended-upgrades). install-deps
/// waits for it, saying so, and gives up after its timeout with a message — run in a chroot
/// whose only apt source is a local repository, with the real dpkg lock held from outside.
#[test]
fn install_deps_waits_for_apts_lock_and_gives_up_after_its_timeout() {
    rocm_pin_testkit::needs_root!("a chroot");
    let tmp = tempfile::tempdir().unwrap();
    let debs = tmp.path().join("debs");
    std::fs::create_dir(&debs).unwrap();
    let tree = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/sample-pkg");
    let out = rocm_pin(&[
        "deb",
        "build",
        "-q",
        tree.to_str().unwrap(),
        debs.join("sample.deb").to_str().unwrap(),
    ]);
    assert_success(&out, "the command");
    let package = rocm_pin(&[
        "deb",
        "inspect",
        "--json",
        debs.join("sample.deb").to_str().unwrap(),
    ]);
    let info: serde_json::Value = serde_json::from_slice(&package.stdout).unwrap();
    let package = info["control"]["Package"].as_str().unwrap().to_string();

    let sb = Sandbox::new(&image("bookworm")).expect("sandbox");
    // Only the local repository: the test must not depend on the archive.
    for f in [
        "etc/apt/sources.list",
        "etc/apt/sources.list.d/debian.sources",
    ] {
        let _ = std::fs::remove_file(sb.path(format!("/{f}")));
    }
    sb.add_local_repo("sample", &debs)
        .expect("local repository");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/install-deps");
    sb.copy_in(&script, "/root/install-deps").unwrap();

    // The real lock: an fcntl write lock on dpkg's frontend lock file, as apt takes it.
    let lock_file = sb.path("/var/lib/dpkg/lock-frontend");
    let mut holder = Command::new("python3")
        .args([
            "-c",
            "import fcntl, sys, time\n\
             f = open(sys.argv[1], 'a')\n\
             fcntl.lockf(f, fcntl.LOCK_EX)\n\
             print('locked', flush=True)\n\
             time.sleep(float(sys.argv[2]))\n",
        ])
        .arg(&lock_file)
        .arg("14")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python3 holds the lock");
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(holder.stdout.as_mut().unwrap()),
        &mut line,
    )
    .unwrap();
    assert_eq!(line.trim(), "locked");

    let install_deps = |timeout: &str| {
        sb.run(&[
            "env",
            &format!("ROCM_PIN_APT_LOCK_TIMEOUT={timeout}"),
            "bash",
            "/root/install-deps",
            &package,
        ])
        .unwrap()
    };
    // Held longer than the timeout: a clear failure, nothing installed.
    let out = install_deps("5");
    let all = text(&out);
    assert_ne!(out.status.code(), Some(0), "{all}");
    assert_says(&all, &["waiting for apt's lock", "still held after"]);
    // Released while it waits: it goes on and installs.
    let out = install_deps("120");
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    assert_says(&all, &["waiting for apt's lock"]);
    holder.wait().unwrap();
    let state = sb
        .run_ok(&["dpkg-query", "-W", "-f=${db:Status-Abbrev}", &package])
        .unwrap();
    assert_eq!(state.trim(), "ii", "{all}");
}

/// `scripts/demo` on a fresh machine: the Rust version is checked first (with how to get a
/// newer one), and the long first build says what it is instead of looking hung. A `cargo`
/// first on PATH reports the version asked for and records its arguments, then fails, so the
/// script stops right after the build step.
#[test]
fn the_demo_script_checks_rust_and_announces_the_build() {
    let tmp = tempfile::tempdir().unwrap();
    let bin_dir = tmp.path().join("bin");
    std::fs::create_dir(&bin_dir).unwrap();
    let log = tmp.path().join("cargo-args");
    let fake_cargo = bin_dir.join("cargo");
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let run_demo = |version: &str| {
        let path = script_on_path(
            &fake_cargo,
            &format!(
                "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'cargo {version} (test)'; exit 0; fi\n\
                 echo \"$*\" >> '{}'\nexit 1\n",
                log.display()
            ),
        );
        Command::new("bash")
            .arg(repo.join("scripts/demo"))
            .env("PATH", path)
            .output()
            .unwrap()
    };
    let out = run_demo("1.63.0");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    let manifest = include_str!("../../Cargo.toml");
    let need = manifest
        .lines()
        .find_map(|l| l.strip_prefix("rust-version = \""))
        .and_then(|v| v.strip_suffix('"'))
        .unwrap();
    assert_says(
        &stderr,
        &[
            &format!("needs Rust {need} or newer; cargo here is 1.63.0"),
            "rustup",
        ],
    );
    assert!(!log.exists(), "no build with a too-old Rust");

    let out = run_demo("1.95.0");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_says(&stderr, &["demo: building rocm-pin (release"]);
    let args = std::fs::read_to_string(&log).unwrap();
    assert_eq!(
        args.trim(),
        "build --release --locked",
        "cargo's own progress is shown"
    );
    // A failed build's exit code is the script's.
    assert_eq!(out.status.code(), Some(1), "{stderr}");
}

/// The first build's minutes are never silent: a line at every tick while cargo runs (cargo
/// itself prints nothing while the last crates compile and link), none after it ended.
#[test]
fn the_demo_script_says_the_build_is_still_going() {
    let tmp = tempfile::tempdir().unwrap();
    let bin_dir = tmp.path().join("bin");
    std::fs::create_dir(&bin_dir).unwrap();
    let fake_cargo = bin_dir.join("cargo");
    // A build that takes 3.5 s and fails (so the demo itself never runs here).
    let path = script_on_path(
        &fake_cargo,
        "#!/bin/sh
if [ \"$1\" = --version ]; then echo 'cargo 1.95.0 (test)'; exit 0; fi
\
         sleep 3.5\nexit 7\n",
    );
    let started = std::time::Instant::now();
    let out = Command::new("bash")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/demo"))
        .env("PATH", path)
        .env("ROCM_PIN_DEMO_TICK_SECONDS", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(7), "{stderr}");
    let ticks = stderr
        .lines()
        .filter(|l| l.starts_with("demo: still building rocm-pin ("))
        .count();
    assert!((2..=4).contains(&ticks), "{ticks} ticks:\n{stderr}");
    // The ticker ended with the script: `output()` waits for every holder of the pipes, and
    // a ticker left behind would hold stderr until its next tick at the earliest.
    assert!(
        started.elapsed() < std::time::Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );
}

/// The README's key command, pasted in a fresh checkout: `keys/` does not exist yet. rocm-pin
/// makes it (private: it holds the secret key) instead of failing "directory keys does not
/// exist".
#[test]
fn repo_keygen_makes_the_directory_of_its_out_path() {
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new(crate::util::bin())
        .args(["repo", "keygen", "--out", "keys/rocm-pin.asc"])
        .current_dir(tmp.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let keys = tmp.path().join("keys");
    for name in ["rocm-pin.asc", "rocm-pin.pub.asc", "rocm-pin.pub.gpg"] {
        assert!(keys.join(name).is_file(), "{name} missing: {}", text(&out));
    }
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&keys).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700, "keys/ holds the secret key");
}

/// A mistyped path is named as what it is, not as a tree without DEBIAN/ or as an unreadable
/// `/` inside a root.
#[test]
fn a_path_that_does_not_exist_is_said_to_not_exist() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("nonexistent");
    let missing_s = missing.to_str().unwrap();
    let file = tmp.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    let file_s = file.to_str().unwrap();
    let deb = tmp.path().join("out.deb");
    let deb_s = deb.to_str().unwrap();
    let cases: Vec<(Vec<&str>, String)> = vec![
        (
            vec!["deb", "build", missing_s, deb_s],
            format!("{missing_s}: the package tree does not exist"),
        ),
        (
            vec!["deb", "build", file_s, deb_s],
            format!("{file_s}: is not a directory"),
        ),
        (
            vec!["verify", "--root", missing_s],
            format!("root {missing_s} does not exist"),
        ),
        (
            vec!["verify", "--root", file_s],
            format!("root {file_s} is not a directory"),
        ),
        (
            vec!["status", "--root", missing_s],
            format!("root {missing_s} does not exist"),
        ),
    ];
    for (args, expected) in cases {
        let out = rocm_pin(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        assert!(
            stderr.contains(&expected),
            "{args:?}: want {expected:?} in:\n{stderr}"
        );
        assert!(
            !stderr.contains("no DEBIAN directory") && !stderr.contains("cannot read / "),
            "{args:?}: {stderr}"
        );
    }
    assert!(!deb.exists());
}

/// `deb inspect -` reads the package from standard input, as `deb inspect /dev/stdin` did.
#[test]
fn deb_inspect_dash_reads_standard_input() {
    let tmp = tempfile::tempdir().unwrap();
    let tree = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/sample-pkg");
    let deb = tmp.path().join("sample.deb");
    let built = rocm_pin(&[
        "deb",
        "build",
        "-q",
        tree.to_str().unwrap(),
        deb.to_str().unwrap(),
    ]);
    assert_success(&built, "the command");
    let by_path = rocm_pin(&["deb", "inspect", "--json", deb.to_str().unwrap()]);
    assert_success(&by_path, "the command");
    let piped = Command::new(crate::util::bin())
        .args(["deb", "inspect", "--json", "-"])
        .stdin(std::fs::File::open(&deb).unwrap())
        .output()
        .unwrap();
    assert_eq!(piped.status.code(), Some(0), "{}", text(&piped));
    let a: serde_json::Value = serde_json::from_slice(&by_path.stdout).unwrap();
    let b: serde_json::Value = serde_json::from_slice(&piped.stdout).unwrap();
    assert_eq!(a["control"], b["control"]);
    assert_eq!(a["entries"], b["entries"]);
}

/// `script` written to `file` as an executable: the PATH with `file`'s directory first.
fn script_on_path(file: &Path, script: &str) -> String {
    std::fs::write(file, script).unwrap();
    std::fs::set_permissions(file, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let dir = file.parent().unwrap();
    format!("{}:{}", dir.display(), std::env::var("PATH").unwrap())
}
