//! `rocm-pin demo`, the real binary as root against the test cache's chroot image: every step
//! ok, the stand-in said plainly, and the kept chroot inspected independently (dpkg-query, the
//! marker, the library bytes, `rocm-pin verify` run again). Refusals: not root (nothing
//! created), an unknown suite, a --keep directory that holds something; and a real failing
//! step (an unusable cache) that still prints the table and exits non-zero.

use rocm_pin_testkit::assert_says;
use rocm_pin_testkit::assert_success;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::util::{bin, must, text};
use rocm_pin_testkit::cache_dir as test_cache_dir;

fn require_root() {
    assert!(
        unsafe { libc::geteuid() } == 0,
        "the demo tests need root (chroot); CI runs as root"
    );
}

/// The test cache's chroot image (scripts/setup.d/20-chroot.sh makes it), so the demo does not
/// run mmdebstrap again.
fn cache_with_image() -> PathBuf {
    cache_with("bookworm")
}

fn cache_with(suite: &str) -> PathBuf {
    let cache = test_cache_dir();
    let tarball = cache.join(format!("chroot/{suite}-apt.tar.zst"));
    assert!(
        tarball.is_file(),
        "{} is missing: run scripts/test-setup",
        tarball.display()
    );
    cache
}

fn in_chroot(root: &Path, argv: &[&str]) -> Output {
    Command::new("chroot")
        .arg(root)
        .args(argv)
        .env_clear()
        .env(
            "PATH",
            "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        )
        .env("LC_ALL", "C")
        .output()
        .expect("chroot runs")
}

/// The table row for `step` (the line starting with it), panicking with the output if absent.
fn row<'a>(stdout: &'a str, step: &str) -> &'a str {
    stdout
        .lines()
        .find(|l| l.starts_with(step))
        .unwrap_or_else(|| panic!("no table row for {step:?}:\n{stdout}"))
}

const STEPS: &[&str] = &[
    "chroot image (bookworm)",
    "build stand-in runtime (rocm-pin build)",
    "stand-in stock ROCm 7.2.4 set",
    "package replacement .debs (rocm-pin package)",
    "signed apt repository (rocm-pin repo)",
    "chroot: stock ROCm 7.2.4 host (apt)",
    "chroot: rocm-pin install --mode require (from the signed repo)",
    "fix-broken (seed): dpkg -i --force-all custom rccl; apt --fix-broken install",
    "apt-get install --reinstall hip-runtime-amd",
    "apt-get install hipblas (a new dependant)",
    "apt-get upgrade (newer stock release published)",
    "apt-get dist-upgrade",
];

/// The commands the demo shows the user.
const DEMO_SHOWS: &[&str] = &[
    "rocm-pin build --source https://github.com/ROCm/rocm-systems ",
    "rocm-pin package --staging",
    "rocm-pin install --mode require",
    "rocm-pin verify",
];

/// What `--keep` keeps (directories).
const DEMO_KEEPS: &[&str] = &["src", "staging", "stock", "debs", "repo", "logs", "chroot"];

/// The kept chroot's packages: (package, text its `dpkg-query` line has or has not, has it).
/// Ours installed at the demo's commit, the stock pair not back, the seed's custom rccl went
/// in (dpkg -i --force-all) and fix-broken left it, the dependants installed.
const KEPT_STATES: &[(&str, &str, bool)] = &[
    ("hsa-rocr-pinned", " ii", true),
    ("hsa-rocr-pinned", ".g{commit7}", true),
    ("hip-runtime-amd-pinned", " ii", true),
    ("hip-runtime-amd-pinned", ".g{commit7}", true),
    ("hsa-rocr", " ii", false),
    ("hip-runtime-amd", " ii", false),
    ("rccl", "+custom", true),
    ("rocm-hip-runtime", " ii", true),
    ("hip-dev", " ii", true),
    ("hipblas", " ii", true),
];

#[test]
fn demo_runs_the_whole_chain_and_keeps_it_for_inspection() {
    rocm_pin_testkit::needs_root!("the demo's chroot");
    require_root();
    let cache = cache_with_image();
    let tmp = tempfile::tempdir().unwrap();
    let keep = tmp.path().join("kept");
    let started = std::time::Instant::now();
    let out = Command::new(bin())
        .args(["demo", "--cache"])
        .arg(&cache)
        .arg("--keep")
        .arg(&keep)
        .env_remove("SOURCE_DATE_EPOCH")
        .output()
        .unwrap();
    let all = text(&out);
    eprintln!(
        "rocm-pin demo took {:.1}s:\n{}",
        started.elapsed().as_secs_f64(),
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(out.status.success(), "demo failed ({}):\n{all}", out.status);
    let stdout = String::from_utf8_lossy(&out.stdout);
    for step in STEPS {
        let r = row(&stdout, step);
        assert!(
            r[step.len()..].trim_start().starts_with("ok "),
            "step not ok: {r}"
        );
    }
    assert!(row(&stdout, "total").contains(" ok "), "{stdout}");
    // The fix-broken scenario runs first among the downstream commands.
    let pos = |s: &str| stdout.find(s).unwrap();
    assert!(pos(STEPS[7]) < pos(STEPS[8]) && pos(STEPS[6]) < pos(STEPS[7]));
    assert_says(&stdout, &["STAND-IN runtime, not AMD's"]);
    assert_says(&stdout, DEMO_SHOWS);
    // Progress: every step with its time on stderr.
    let stderr = String::from_utf8_lossy(&out.stderr);
    for step in STEPS {
        assert!(
            stderr.contains(&format!("{step}: done in ")),
            "no timed progress line for {step}:\n{stderr}"
        );
    }

    // The kept artifacts.
    let keep = std::fs::canonicalize(&keep).unwrap();
    assert!(
        stdout.contains(&keep.display().to_string()),
        "where it kept things is not printed:\n{stdout}"
    );
    for d in DEMO_KEEPS {
        assert!(keep.join(d).is_dir(), "{d} not kept");
    }
    assert!(keep.join("repo/dists/stable/InRelease").is_file());
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(keep.join("logs/demo-report.json")).unwrap())
            .unwrap();
    assert_eq!(report["standin"], true);
    let commit = report["commit"].as_str().unwrap().to_string();
    assert_eq!(commit.len(), 40);

    check_the_kept_chroot(&keep.join("chroot"), &commit);
    let fix_log = std::fs::read_dir(keep.join("logs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().contains("chroot-03-fix-broken"))
        .expect("the fix-broken log");
    let fix_log = std::fs::read_to_string(fix_log).unwrap();
    assert!(
        fix_log.contains("apt --fix-broken install -y") && fix_log.contains("verify: all"),
        "{}",
        fix_log
    );
}

/// The kept chroot, judged by dpkg-query, the files and rocm-pin verify run again.
fn check_the_kept_chroot(root: &Path, commit: &str) {
    let q = in_chroot(
        root,
        &[
            "dpkg-query",
            "-W",
            "-f=${binary:Package} ${db:Status-Abbrev}|${Version}\n",
        ],
    );
    let status = String::from_utf8_lossy(&q.stdout).into_owned();
    let state = |pkg: &str| {
        status
            .lines()
            .find(|l| l.split(' ').next() == Some(pkg))
            .map(|l| l.to_string())
            .unwrap_or_default()
    };
    for (pkg, has, is) in KEPT_STATES {
        let has = has.replace("{commit7}", &commit[..7]);
        assert_eq!(
            state(pkg).contains(&has),
            *is,
            "{pkg}: {has:?} {is}: {status}"
        );
    }
    let marker = std::fs::read_to_string(root.join("opt/rocm-7.2.4/.info/rocm-pin.json")).unwrap();
    assert_says(&marker, &[commit]);
    // The stock library bytes are not back anywhere in the prefix.
    for e in std::fs::read_dir(root.join("opt/rocm-7.2.4/lib")).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if !(name.starts_with("libhsa-runtime64") || name.starts_with("libamdhip64")) {
            continue;
        }
        let bytes = std::fs::read(&p).unwrap();
        let has = |s: &str| bytes.windows(s.len()).any(|w| w == s.as_bytes());
        assert!(!has("-STOCK-"), "stock bytes in {}", p.display());
        assert!(has("-PATCHED-"), "not patched: {}", p.display());
    }
    // Our repository is trusted through its key only.
    let sources =
        std::fs::read_to_string(root.join("etc/apt/sources.list.d/rocm-pin-demo.list")).unwrap();
    assert!(
        sources.contains("signed-by=") && !sources.contains("trusted=yes"),
        "{}",
        sources
    );
    let v = in_chroot(root, &["rocm-pin", "verify"]);
    assert_success(&v, "verify in the kept chroot");
}

#[test]
fn a_non_root_run_says_so_and_creates_nothing() {
    rocm_pin_testkit::needs_root!("the demo's chroot");
    require_root();
    let tmp = tempfile::tempdir().unwrap();
    // A copy of the binary the unprivileged user can reach (the build tree may be under /root).
    let bin_dir = tmp.path().join("bin");
    std::fs::create_dir(&bin_dir).unwrap();
    let exe = bin_dir.join("rocm-pin");
    std::fs::copy(bin(), &exe).unwrap();
    for p in [tmp.path(), bin_dir.as_path()] {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let (cache, keep) = (tmp.path().join("cache"), tmp.path().join("keep"));
    let out = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--reset-env",
        ])
        .arg(&exe)
        .args(["demo", "--cache"])
        .arg(&cache)
        .arg("--keep")
        .arg(&keep)
        .output()
        .expect("setpriv (util-linux) runs");
    let all = text(&out);
    assert_eq!(out.status.code(), Some(2), "{all}");
    assert!(
        all.contains("needs root") && all.contains("sudo scripts/demo"),
        "{}",
        all
    );
    assert!(!all.contains("==>"), "it started work:\n{all}");
    assert!(!cache.exists() && !keep.exists(), "it created something");
    let left: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, ["bin"]);
}

#[test]
fn unknown_suite_and_a_used_keep_directory_are_refused_before_anything() {
    rocm_pin_testkit::needs_root!("the demo's chroot");
    require_root();
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    let out = Command::new(bin())
        .args(["demo", "--suite", "sid", "--cache"])
        .arg(&cache)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("bookworm") && text(&out).contains("trixie"),
        "{}",
        text(&out)
    );

    let keep = tmp.path().join("used");
    std::fs::create_dir(&keep).unwrap();
    std::fs::write(keep.join("precious"), "mine\n").unwrap();
    let out = Command::new(bin())
        .args(["demo", "--cache"])
        .arg(&cache)
        .arg("--keep")
        .arg(&keep)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("is not an empty directory"),
        "{}",
        text(&out)
    );
    assert_eq!(
        std::fs::read_dir(&keep).unwrap().count(),
        1,
        "it wrote into --keep"
    );
    assert!(!cache.exists());
}

#[test]
fn a_failing_step_prints_the_table_and_exits_non_zero() {
    rocm_pin_testkit::needs_root!("the demo's chroot");
    require_root();
    // A real failure: the cache "directory" is a regular file, so the chroot image cannot be
    // made there. The first step fails, nothing else runs, the table still prints.
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("not-a-dir");
    std::fs::write(&cache, "").unwrap();
    let keep = tmp.path().join("kept");
    let out = Command::new(bin())
        .args(["demo", "--cache"])
        .arg(&cache)
        .arg("--keep")
        .arg(&keep)
        .output()
        .unwrap();
    let all = text(&out);
    assert_eq!(out.status.code(), Some(1), "{all}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(row(&stdout, STEPS[0]).contains("FAILED"), "{stdout}");
    for step in &STEPS[1..] {
        assert!(row(&stdout, step).contains("not run"), "{stdout}");
    }
    assert!(row(&stdout, "total").contains("FAILED"), "{stdout}");
    assert!(
        stdout.contains(&format!("FAILED: {}", STEPS[0])) && stdout.contains("not-a-dir"),
        "the failure does not say what and where:\n{stdout}"
    );
    assert_says(&all, &["demo failed: 1 step(s) failed"]);
    // Nothing was built: only the logs (and the report) are in --keep.
    let kept: Vec<String> = std::fs::read_dir(&keep)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(kept, ["logs"]);

    // The same with --json: the report on stdout, one entry per step, the exit code unchanged.
    let out = Command::new(bin())
        .args(["demo", "--json", "--cache"])
        .arg(&cache)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("--json stdout: {e}: {}", text(&out)));
    let steps = v["steps"].as_array().unwrap();
    assert_eq!(steps.len(), STEPS.len(), "{v}");
    assert_eq!(steps[0]["status"], "failed");
    assert!(steps[0]["error"].as_str().unwrap().contains("not-a-dir"));
    assert!(steps[1..].iter().all(|s| s["status"] == "not-run"), "{v}");
    assert_eq!(v["standin"], true);
}

#[test]
fn ctrl_c_stops_the_demo_and_cleans_up_the_chroot() {
    rocm_pin_testkit::needs_root!("the demo's chroot");
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    require_root();
    let cache = cache_with_image();
    // setsid: the demo leads its own process group, so a SIGINT to the group reaches it and the
    // apt/dpkg it runs, as Ctrl-C on a terminal does.
    let mut child = rocm_pin_testkit::with_default_signals(&mut Command::new("setsid"))
        .arg(bin())
        .args(["demo", "--cache"])
        .arg(&cache)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id() as i32;
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    let mut line = String::new();
    while stderr.read_line(&mut line).unwrap() > 0 {
        seen.push_str(&line);
        let started = line.contains("==> chroot: rocm-pin install");
        line.clear();
        if started {
            // SAFETY: signals our own child's process group.
            assert_eq!(unsafe { libc::kill(-pid, libc::SIGINT) }, 0);
            break;
        }
    }
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
    seen.push_str(&rest);
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    // Ctrl-C ends the demo as it ends any program: 128 + SIGINT.
    assert_eq!(out.status.code(), Some(130), "{stdout}\n{seen}");
    assert_says(&seen, &["demo interrupted"]);
    assert!(row(&stdout, STEPS[11]).contains("not run"), "{stdout}");
    // The overlay chroot it used is unmounted and removed.
    let sandbox = seen
        .split_whitespace()
        .find(|w| w.starts_with("/tmp/rocm-pin-sandbox-") || w.contains("/rocm-pin-sandbox-"))
        .map(|w| w.trim_end_matches("/root").to_string())
        .unwrap_or_else(|| panic!("no chroot path printed:\n{seen}"));
    assert!(!Path::new(&sandbox).exists(), "{sandbox} left behind");
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap();
    assert!(!mounts.contains(&sandbox), "{sandbox} still mounted");
    // And the temporary work directory (sources, staging, .debs, repository) is gone.
    let work = seen
        .split("work directory ")
        .nth(1)
        .and_then(|r| r.split(',').next())
        .unwrap_or_else(|| panic!("no work directory printed:\n{seen}"));
    assert_says(work, &["rocm-pin-demo-"]);
    assert!(!Path::new(work).exists(), "{work} left behind");
}

#[test]
fn demo_on_trixie_with_json() {
    rocm_pin_testkit::needs_root!("the demo's chroot");
    require_root();
    let cache = cache_with("trixie");
    let out = must(
        Command::new(bin())
            .args(["demo", "--suite", "trixie", "--json", "--cache"])
            .arg(&cache),
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("--json stdout: {e}: {}", text(&out)));
    assert_eq!(v["suite"], "trixie");
    assert_eq!(v["standin"], true);
    assert_eq!(v["kept"], serde_json::Value::Null);
    let names: Vec<&str> = v["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            assert_eq!(s["status"], "ok", "{s}");
            s["name"].as_str().unwrap()
        })
        .collect();
    let mut want = STEPS.to_vec();
    want[0] = "chroot image (trixie)";
    assert_eq!(names, want);
}
