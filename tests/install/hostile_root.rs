//! Issue 21, "reads escape the root": the real `rocm-pin` binary run with `verify --root`,
//! `verify --json --root` and `status --root` against roots built like the ones `install`
//! leaves (gcc-built libraries, dpkg database, marker, ld.so cache from `ldconfig -r`), each
//! with one hostile file. A host canary file (unique content, in a host temp dir, named by
//! absolute path from inside the root) must never reach the output; a FIFO, a device or
//! `/proc/self/fd/0` must fail fast with an error naming the path, never hang or eat memory.

use rocm_pin_testkit::assert_says;
use std::io::{Read, Write};
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::verify_fake_root::{build_libs, host, make_root, md5_hex, sha_hex};

const MARKER: &str = "/opt/rocm-7.2.4/.info/rocm-pin.json";
const HSA_LIST: &str = "/var/lib/dpkg/info/hsa-rocr-pinned.list";
const STATUS: &str = "/var/lib/dpkg/status";
const LD_CACHE: &str = "/etc/ld.so.cache";
/// Far more than any of these runs needs, far less than an unbounded read reaches.
const TIMEOUT: Duration = Duration::from_secs(30);
const MAX_RSS_KIB: i64 = 512 * 1024;

/// A host file the hostile root points at: its path, content and hashes must never appear.
struct Canary {
    _dir: tempfile::TempDir,
    path: PathBuf,
    content: String,
}

impl Canary {
    fn new(name: &str) -> Canary {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(name);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let content = format!("ROCM-PIN-HOST-CANARY-{}-{nanos}\n", std::process::id());
        std::fs::write(&path, &content).unwrap();
        Canary {
            _dir: dir,
            path,
            content,
        }
    }

    /// The canary's path as a `../` climb from the root (relative, no leading slash).
    fn climb(&self) -> String {
        format!("../../../../../../..{}", self.path.display())
    }

    #[track_caller]
    fn assert_absent(&self, run: &Run) {
        let all = run.all();
        let md5 = md5_hex(&self.path);
        let sha = sha_hex(&self.path);
        for secret in [self.content.trim(), md5.as_str(), sha.as_str()] {
            assert!(
                !all.contains(secret),
                "the host canary {} leaked ({secret}):\n{all}",
                self.path.display()
            );
        }
    }
}

/// One finished run of the binary.
struct Run {
    code: i32,
    stdout: String,
    stderr: String,
    max_rss_kib: i64,
}

impl Run {
    fn all(&self) -> String {
        format!("{}\n{}", self.stdout, self.stderr)
    }
}

/// Run `rocm-pin args…` with a stdin pipe that is never closed (so a read of fd 0 would
/// block), kill it after `TIMEOUT`, and measure its peak RSS with `wait4`.
fn rocm_pin(args: &[&str]) -> Run {
    rocm_pin_in(Path::new("."), &[], args)
}

/// [`rocm_pin`] run in the directory `cwd` with `envs` set.
#[allow(
    clippy::zombie_processes,
    reason = "reaped by wait4 below, which also reports its peak RSS"
)]
fn rocm_pin_in(cwd: &Path, envs: &[(&str, &Path)], args: &[&str]) -> Run {
    let mut child = Command::new(rocm_pin_testkit::rocm_pin_bin!())
        .current_dir(cwd)
        .envs(envs.iter().copied())
        .args(args)
        .env("ROCM_PIN_NO_GUARD", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let _stdin_held_open = child.stdin.take();
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let pid = child.id() as libc::pid_t;
    let start = Instant::now();
    let (status, usage) = loop {
        let mut status = 0;
        // SAFETY: plain wait4 on our own child with out-pointers to locals.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        let got = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if got == pid {
            break (status, usage);
        }
        if start.elapsed() > TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "rocm-pin {} hung for more than {}s (a FIFO or a pipe read without a bound)",
                args.join(" "),
                TIMEOUT.as_secs()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        128 + libc::WTERMSIG(status)
    };
    Run {
        code,
        stdout: out_reader.join().unwrap(),
        stderr: err_reader.join().unwrap(),
        max_rss_kib: usage.ru_maxrss,
    }
}

fn verify_json(root: &Path) -> Run {
    rocm_pin(&["verify", "--json", "--root", root.to_str().unwrap()])
}

fn hostile_root() -> tempfile::TempDir {
    make_root(&build_libs())
}

/// Replace the in-root file `p` with a symlink to `target`.
fn replace_with_link(root: &Path, p: &str, target: &str) {
    let h = host(root, p);
    let _ = std::fs::remove_file(&h);
    std::fs::create_dir_all(h.parent().unwrap()).unwrap();
    symlink(target, &h).unwrap();
}

/// Replace the in-root file `p` with a FIFO nobody writes to.
/// [`hostile_root`] with a FIFO at `p` (its directories made).
fn hostile_root_with_fifo_at(p: &str) -> tempfile::TempDir {
    let d = hostile_root();
    let h = host(d.path(), p);
    std::fs::create_dir_all(h.parent().unwrap()).unwrap();
    std::fs::write(&h, b"").unwrap();
    replace_with_fifo(d.path(), p);
    d
}

fn replace_with_fifo(root: &Path, p: &str) {
    let h = host(root, p);
    std::fs::remove_file(&h).unwrap();
    let c = std::ffi::CString::new(h.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo on a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0, "mkfifo");
}

/// Give the root its own `/dev/zero` character device, so a link to `/dev/zero` re-rooted
/// inside it still names a device (the case the regular-file check must catch).
fn give_root_dev_zero(root: &Path) {
    let h = host(root, "/dev/zero");
    std::fs::create_dir_all(h.parent().unwrap()).unwrap();
    let c = std::ffi::CString::new(h.to_str().unwrap()).unwrap();
    // SAFETY: mknod on a NUL-terminated path; char device 1:5 is /dev/zero.
    let rc = unsafe { libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(1, 5)) };
    assert_eq!(rc, 0, "mknod {}", h.display());
}

fn json(run: &Run) -> serde_json::Value {
    serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}\n{}", run.stdout, run.stderr))
}

/// The failed checks named `name`, as their subjects and details.
fn failed(run: &Run, name: &str) -> Vec<String> {
    json(run)["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["name"] == name && c["ok"] == false)
        .map(|c| format!("{} {}", c["subject"], c["detail"]))
        .collect()
}

#[track_caller]
fn assert_bounded(run: &Run, what: &str) {
    assert!(
        run.max_rss_kib < MAX_RSS_KIB,
        "{what}: peak RSS {} KiB (limit {MAX_RSS_KIB} KiB)",
        run.max_rss_kib
    );
}

#[test]
fn a_skip_record_linked_to_a_host_file_is_not_read() {
    rocm_pin_testkit::needs_root!("ldconfig -r chroots");
    let canary = Canary::new("hostname");
    let d = hostile_root();
    replace_with_link(
        d.path(),
        "/var/lib/rocm-pin/skipped",
        canary.path.to_str().unwrap(),
    );
    let run = verify_json(d.path());
    canary.assert_absent(&run);
    assert_ne!(
        run.code,
        3,
        "a link out of the root made verify skip:\n{}",
        run.all()
    );
    assert!(json(&run)["skipped"].is_null(), "{}", run.stdout);
}

#[test]
fn an_md5sums_path_climbing_out_of_the_root_is_refused() {
    rocm_pin_testkit::needs_root!("ldconfig -r chroots");
    let canary = Canary::new("hostname");
    let d = hostile_root();
    let sums = host(d.path(), "/var/lib/dpkg/info/hsa-rocr-pinned.md5sums");
    let mut text = std::fs::read_to_string(&sums).unwrap();
    text.push_str(&format!(
        "d41d8cd98f00b204e9800998ecf8427e  {}\n",
        canary.climb()
    ));
    std::fs::write(&sums, text).unwrap();
    let run = verify_json(d.path());
    canary.assert_absent(&run);
    assert_eq!(run.code, 1, "{}", run.all());
    let files = failed(&run, "files").join("\n");
    assert!(
        files.contains("refused") && files.contains("md5sums"),
        "the files check must name the md5sums file and refuse the path:\n{files}"
    );
}

#[test]
fn marker_paths_climbing_out_of_the_root_are_refused() {
    rocm_pin_testkit::needs_root!("ldconfig -r chroots");
    let canary = Canary::new("hostname");
    let climbing = format!("/{}", canary.climb());
    for edit in ["files key", "library path"] {
        let d = hostile_root();
        let mp = host(d.path(), MARKER);
        let mut marker: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&mp).unwrap()).unwrap();
        if edit == "files key" {
            marker["files"][&climbing] = serde_json::Value::String("0".repeat(64));
        } else {
            marker["libraries"][0]["path"] = serde_json::Value::String(climbing.clone());
        }
        std::fs::write(&mp, serde_json::to_string(&marker).unwrap()).unwrap();
        let run = verify_json(d.path());
        canary.assert_absent(&run);
        assert_eq!(run.code, 1, "{edit}: {}", run.all());
        let m = failed(&run, "marker").join("\n");
        assert!(
            m.contains("refused") && m.contains(&climbing),
            "{edit}: the marker check must refuse {climbing}:\n{m}"
        );
    }
}

#[test]
fn a_package_name_climbing_out_of_the_root_is_refused() {
    rocm_pin_testkit::needs_root!("ldconfig -r chroots");
    let canary = Canary::new("x.list");
    let d = hostile_root();
    let name = canary.climb().trim_end_matches(".list").to_string();
    let sp = host(d.path(), STATUS);
    let mut status = std::fs::read_to_string(&sp).unwrap();
    status.push_str(&format!(
        "\nPackage: {name}\nStatus: install ok installed\nArchitecture: amd64\nVersion: 1\nX-Rocm-Pin-Commit: b539bf7eebfd99ad0a69668caa1f4037034d501f\n"
    ));
    std::fs::write(&sp, status).unwrap();
    for args in [
        vec!["verify", "--json", "--root"],
        vec!["status", "--json", "--root"],
    ] {
        let mut args = args;
        args.push(d.path().to_str().unwrap());
        let run = rocm_pin(&args);
        canary.assert_absent(&run);
        assert_eq!(run.code, 2, "{args:?}: {}", run.all());
        assert!(
            run.stderr.contains("not a dpkg package name") && run.stderr.contains(STATUS),
            "{args:?}: the error must name the status file and the bad name:\n{}",
            run.stderr
        );
    }
}

#[test]
fn an_absolute_dpkg_link_judges_the_roots_database_not_the_hosts() {
    rocm_pin_testkit::needs_root!("ldconfig -r chroots");
    // A database moved inside the root and linked absolutely: judged there (passes the
    // package checks), though no such directory exists on the host.
    let d = hostile_root();
    let moved = format!("/srv/rocm-pin-image-db-{}", std::process::id());
    std::fs::create_dir_all(host(d.path(), "/srv")).unwrap();
    std::fs::rename(host(d.path(), "/var/lib/dpkg"), host(d.path(), &moved)).unwrap();
    symlink(&moved, host(d.path(), "/var/lib/dpkg")).unwrap();
    assert!(!Path::new(&moved).exists());
    let run = verify_json(d.path());
    assert!(run.code == 0 || run.code == 1, "{}", run.all());
    assert!(failed(&run, "packages").is_empty(), "{}", run.stdout);
    assert!(failed(&run, "files").is_empty(), "{}", run.stdout);

    // The link the issue found: `var/lib/dpkg -> /var/lib/dpkg`. Inside the root it names
    // itself (a loop); the host's database must never be judged instead.
    let d = hostile_root();
    std::fs::remove_dir_all(host(d.path(), "/var/lib/dpkg")).unwrap();
    symlink("/var/lib/dpkg", host(d.path(), "/var/lib/dpkg")).unwrap();
    let run = verify_json(d.path());
    assert_eq!(run.code, 2, "{}", run.all());
    assert!(
        run.stderr.contains("/var/lib/dpkg/status")
            && run.stderr.contains("too many levels of symbolic links"),
        "{}",
        run.stderr
    );
}

/// The four root files the issue made unbounded, with the exit code and check each must
/// end in when it is not a regular file: the status file is an environment error (2), the
/// others fail their check (1).
const TARGETS: [(&str, i32, &str); 4] = [
    (STATUS, 2, ""),
    (LD_CACHE, 1, "loader"),
    (MARKER, 1, "marker"),
    (HSA_LIST, 1, "packages"),
];

#[track_caller]
fn assert_refused(run: &Run, path: &str, code: i32, check: &str, what: &str) {
    assert_bounded(run, path);
    assert_eq!(run.code, code, "{path} as {what}: {}", run.all());
    let said = if check.is_empty() {
        run.stderr.clone()
    } else {
        failed(run, check).join("\n")
    };
    assert!(
        said.contains(path.trim_start_matches('/')) && said.contains(what),
        "{path} as {what}: the error must name the path and what it is:\n{said}\n{}",
        run.all()
    );
}

#[test]
fn root_files_linked_to_dev_zero_fail_fast_and_bounded() {
    rocm_pin_testkit::needs_root!("ldconfig -r chroots, mknod");
    for (path, code, check) in TARGETS {
        let d = hostile_root();
        give_root_dev_zero(d.path());
        replace_with_link(d.path(), path, "/dev/zero");
        let run = verify_json(d.path());
        assert_refused(&run, path, code, check, "a character device");
    }
    let d = hostile_root();
    give_root_dev_zero(d.path());
    replace_with_link(d.path(), STATUS, "/dev/zero");
    let run = rocm_pin(&["status", "--root", d.path().to_str().unwrap()]);
    assert_bounded(&run, "status --root");
    assert_eq!(run.code, 2, "{}", run.all());
    assert_says(&run.stderr, &[STATUS]);
}

#[test]
fn root_files_that_are_fifos_do_not_hang() {
    rocm_pin_testkit::needs_root!("ldconfig -r chroots");
    for (path, code, check) in TARGETS {
        let d = hostile_root();
        replace_with_fifo(d.path(), path);
        let run = verify_json(d.path());
        assert_refused(&run, path, code, check, "a FIFO");
    }
}

#[test]
fn root_files_linked_to_proc_self_fd_0_do_not_read_stdin() {
    rocm_pin_testkit::needs_root!("ldconfig -r chroots");
    for (path, code, check) in TARGETS {
        let d = hostile_root();
        replace_with_link(d.path(), path, "/proc/self/fd/0");
        let run = verify_json(d.path());
        // Re-rooted, the link names `<root>/proc/self/fd/0`, which the root does not have (a
        // dangling file list reads as no file list, as dpkg sees it).
        let what = if path == HSA_LIST {
            "has no file list"
        } else {
            "does not exist"
        };
        assert_refused(&run, path, code, check, what);
    }
}

#[test]
fn a_local_repository_index_that_is_a_fifo_does_not_hang() {
    rocm_pin_testkit::needs_root!("ldconfig -r chroots");
    let packages = "/var/lib/rocm-pin/repo/Packages";
    let d = hostile_root_with_fifo_at(packages);
    let run = verify_json(d.path());
    assert_refused(&run, packages, 1, "local-repo", "a FIFO");
}

/// The local repository's permission walk goes through the root's resolver with a cap: a
/// repository of 12,000 entries (rocm-pin makes a dozen) is refused by name, where a host
/// walk (walkdir on the root's path) listed and `lstat`ed every one.
#[test]
fn a_local_repository_with_more_entries_than_any_we_make_is_refused_by_name() {
    rocm_pin_testkit::needs_root!("ldconfig -r chroots");
    let d = hostile_root();
    let pool = host(d.path(), "/var/lib/rocm-pin/repo/pool");
    std::fs::create_dir_all(&pool).unwrap();
    for i in 0..12_000 {
        std::fs::write(pool.join(format!("f{i}")), b"").unwrap();
    }
    let run = verify_json(d.path());
    let said = failed(&run, "local-repo").join("\n");
    assert!(
        said.contains("/var/lib/rocm-pin/repo/pool") && said.contains("more than"),
        "the walk must stop at its cap and name the directory:\n{said}\n{}",
        run.all()
    );
    // Under the cap, the walk still finds a group/other-writable entry.
    use std::os::unix::fs::PermissionsExt;
    let d = hostile_root();
    let index = host(d.path(), "/var/lib/rocm-pin/repo/pool/main/x.deb");
    std::fs::create_dir_all(index.parent().unwrap()).unwrap();
    std::fs::write(&index, b"").unwrap();
    std::fs::set_permissions(&index, std::fs::Permissions::from_mode(0o666)).unwrap();
    let said = failed(&verify_json(d.path()), "local-repo").join("\n");
    assert_says(
        &said,
        &["/var/lib/rocm-pin/repo/pool/main/x.deb is group/other-writable (666)"],
    );
}

#[test]
fn an_apt_cache_that_is_a_fifo_does_not_hang_verify() {
    rocm_pin_testkit::needs_root!("ldconfig -r chroots");
    // verify links the root's pkgcache.bin for `apt-cache policy`, found inside the root like
    // every other read (an unusable cache, a FIFO here, is simply not linked).
    let cache = "/var/cache/apt/pkgcache.bin";
    let d = hostile_root_with_fifo_at(cache);
    let run = verify_json(d.path());
    assert_bounded(&run, cache);
    assert!(run.code == 0 || run.code == 1, "{}", run.all());
}

#[test]
fn apt_inputs_that_are_fifos_or_lead_out_of_the_root_are_refused_before_apt_reads_them() {
    rocm_pin_testkit::needs_root!("ldconfig -r chroots");
    // `apt-cache policy -o Dir=<root>` opens these itself, with the host's lookup: a FIFO
    // would block it, a link would make it read the host's configuration.
    let prefs = "/etc/apt/preferences";
    let d = hostile_root();
    std::fs::create_dir_all(host(d.path(), "/etc/apt/preferences.d")).unwrap();
    std::fs::write(host(d.path(), prefs), b"").unwrap();
    replace_with_fifo(d.path(), prefs);
    let run = verify_json(d.path());
    assert_bounded(&run, prefs);
    assert!(run.all().contains(prefs), "{}", run.all());
    assert!(run.all().contains("a FIFO"), "{}", run.all());
    assert_ne!(run.code, 0, "{}", run.all());

    let d = hostile_root();
    let _ = std::fs::remove_dir_all(host(d.path(), "/var/lib/apt/lists"));
    replace_with_link(d.path(), "/var/lib/apt/lists", "/var/lib/apt/lists");
    let run = verify_json(d.path());
    assert!(
        failed(&run, "pin-effective")
            .iter()
            .any(|c| c.contains("/var/lib/apt/lists")),
        "a link to the host's package lists was not refused: {}",
        run.all()
    );
    assert_ne!(run.code, 0, "{}", run.all());
}

/// Debian's HIP package as a hostile root could list it: one runtime library in each of
/// `dirs` made-up multiarch directories, none present, each absent by a dpkg path-exclude
/// (how dpkg installs an excluded file, so in-place detection reads the path and moves on).
fn root_listing_many_library_dirs(dirs: usize) -> tempfile::TempDir {
    const EMPTY_MD5: &str = "d41d8cd98f00b204e9800998ecf8427e";
    let d = tempfile::tempdir().unwrap();
    let r = d.path();
    let (mut sums, mut list) = (String::new(), String::new());
    for i in 0..dirs {
        let dir = format!("usr/lib/x{i}-linux-gnu");
        sums.push_str(&format!("{EMPTY_MD5}  {dir}/libamdhip64.so.7\n"));
        list.push_str(&format!("/{dir}\n/{dir}/libamdhip64.so.7\n"));
    }
    let info = host(r, "/var/lib/dpkg/info");
    std::fs::create_dir_all(&info).unwrap();
    std::fs::write(info.join("libamdhip64-7:amd64.md5sums"), sums).unwrap();
    std::fs::write(info.join("libamdhip64-7:amd64.list"), list).unwrap();
    std::fs::create_dir_all(host(r, "/etc/dpkg/dpkg.cfg.d")).unwrap();
    std::fs::write(
        host(r, "/etc/dpkg/dpkg.cfg.d/excludes"),
        "path-exclude=/usr/lib/x*\n",
    )
    .unwrap();
    std::fs::write(
        host(r, STATUS),
        "Package: libamdhip64-7\nStatus: install ok installed\nPriority: optional\n\
         Section: libs\nInstalled-Size: 1\nMaintainer: nobody <nobody@example.org>\n\
         Architecture: amd64\nMulti-Arch: same\nSource: rocm-hipamd\nVersion: 7.2.4-1~exp2\n\
         Description: HIP runtime\n",
    )
    .unwrap();
    d
}

#[test]
fn a_stock_package_listing_thousands_of_library_dirs_is_read_in_one_pass() {
    // In-place detection groups the stock files by library directory. Filtering every md5sums
    // line for each directory cost dirs × lines: 20 000 directories took 89 s (a7d7621's debug
    // binary), past the timeout; 0.6 s in one pass.
    let d = root_listing_many_library_dirs(20_000);
    let root = d.path().to_str().unwrap();
    let status = rocm_pin(&["status", "--root", root]);
    assert_bounded(&status, "status");
    assert_eq!(status.code, 0, "{}", status.all());
    assert!(
        status.stdout.contains("libamdhip64-7"),
        "status does not name the stock package: {}",
        status.all()
    );
    // No file carries a SONAME, so verify finds no runtime: a failed check, not a hang.
    let verify = rocm_pin(&["verify", "--root", root]);
    assert_bounded(&verify, "verify");
    assert_eq!(verify.code, 1, "{}", verify.all());
}

/// What a hostile root writes into a text field: a newline then a line that reads like a
/// passing check, an OSC sequence that sets the terminal's title, an erase-line sequence
/// (hides the line it lands on, a FAIL line), a C1 CSI and a right-to-left override.
const FORGED_LINE: &str = "ok   forged           all checks passed";
const FORGED: &str =
    "\nok   forged           all checks passed\x1b]0;owned\x07\x1b[2K\u{9b}2K\u{202e}";

/// The text has none of the forged bytes raw: no control character but the newlines and
/// tabs the renderer lays it out with, no bidi override, no forged line of its own.
#[track_caller]
fn assert_escaped(text: &str, what: &str) {
    rocm_pin_testkit::assert_escaped(text, FORGED_LINE, what);
    assert!(
        text.contains("\\nok   forged"),
        "{what}: the forged text must still be shown, escaped:\n{text}"
    );
}

/// Issue 31 item 7: the marker's commit and a file it lists, and a stock package's dpkg
/// Version, carry newlines and escape sequences. `verify`, `verify --quiet` (what the guard
/// prints into apt's output) and `status` show them escaped; their JSON keeps the exact value.
#[test]
fn control_characters_from_the_root_are_escaped_in_text_and_exact_in_json() {
    rocm_pin_testkit::needs_root!("ldconfig -r chroots");
    let d = hostile_root();
    let r = d.path().to_str().unwrap();
    let mp = host(d.path(), MARKER);
    let mut marker: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&mp).unwrap()).unwrap();
    let commit = format!("{}{FORGED}", marker["commit"].as_str().unwrap());
    // (A newline in a marker path is refused by name already; the escapes are not.)
    let file = "/opt/rocm-7.2.4/lib/forged\x1b]0;owned\x07\x1b[2K\u{9b}2K\u{202e}".to_string();
    marker["commit"] = serde_json::Value::String(commit.clone());
    marker["files"][&file] = serde_json::Value::String("0".repeat(64));
    // A patch whose name forges a line and whose "sha256" has a character across byte 12,
    // where verify cuts the hash short (it panicked there).
    marker["patches"] =
        serde_json::json!([{"name": format!("0001.patch{FORGED}"), "sha256": "aéééééé"}]);
    std::fs::write(&mp, serde_json::to_string(&marker).unwrap()).unwrap();
    // A stock package installed next to ours, its Version and Description hostile.
    let stock_version = "7.2.53211.70204-93~24.04\x1b]0;owned\x07\x1b[2K\u{202e}";
    let mut status = std::fs::read_to_string(host(d.path(), STATUS)).unwrap();
    status.push_str(&format!(
        "\nPackage: hip-runtime-amd\nStatus: install ok installed\nArchitecture: amd64\n\
         Version: {stock_version}\nDescription: stock\x1b[2K\n .\x1b]0;owned\x07\n"
    ));
    std::fs::write(host(d.path(), STATUS), status).unwrap();

    let text = rocm_pin(&["verify", "--root", r]);
    assert_eq!(text.code, 1, "{}", text.all());
    assert_escaped(&text.stdout, "verify");
    let quiet = rocm_pin(&["verify", "--quiet", "--root", r]);
    assert_escaped(&quiet.stderr, "verify --quiet");
    let status_text = rocm_pin(&["status", "--root", r]);
    assert_escaped(&status_text.stdout, "status");
    assert!(
        status_text.stdout.contains("\\x1b]0;owned\\x07"),
        "status must show the stock Version escaped:\n{}",
        status_text.stdout
    );

    let run = verify_json(d.path());
    let checks = json(&run)["checks"].as_array().unwrap().clone();
    assert!(
        checks.iter().any(|c| c["subject"] == file.as_str()),
        "verify --json must name the file exactly: {}",
        run.stdout
    );
    let status_json = rocm_pin(&["status", "--json", "--root", r]);
    let s = json(&status_json);
    assert_eq!(s["commit"], commit.as_str(), "{}", status_json.stdout);
    assert!(
        s["stock"]
            .as_array()
            .unwrap()
            .iter()
            .any(|st| st["version"] == stock_version),
        "status --json must keep the stock Version exactly: {}",
        status_json.stdout
    );
}

/// A process of the root's own `/proc` (as a hand-made root or an image can ship one) that
/// maps a deleted copy of the HIP runtime, so `status` reads its `maps` and its `comm`.
fn give_root_a_stale_process(root: &Path, pid: u32) {
    let dir = host(root, &format!("/proc/{pid}"));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("comm"), "python3\n").unwrap();
    std::fs::write(
        dir.join("maps"),
        "7f00-7f01 r-xp 00000000 08:01 123 /opt/rocm-7.2.4/lib/libamdhip64.so.7.2.70204 (deleted)\n",
    )
    .unwrap();
}

fn status_root(root: &Path, json: bool) -> Run {
    let root = root.to_str().unwrap();
    let run = if json {
        rocm_pin(&["status", "--json", "--root", root])
    } else {
        rocm_pin(&["status", "--root", root])
    };
    assert_bounded(&run, "status --root");
    assert!(run.code == 0 || run.code == 1, "{}", run.all());
    run
}

/// Issue 31 item 1: `status --root` read the root's `/proc/<pid>/comm` and `maps` with host
/// lookups and no cap (fails on f225f56: a `comm` linked to a host file printed it whole, a
/// FIFO hung, `maps -> /dev/zero` grew without bound, `/proc/1 -> /proc/1` read the host's
/// PID 1). Now each is read inside the root, capped, and what could not be read is said.
#[test]
fn a_roots_proc_is_read_inside_the_root_bounded() {
    rocm_pin_testkit::needs_root!("ldconfig -r chroots");
    let canary = Canary::new("shadow");
    let d = hostile_root();
    give_root_a_stale_process(d.path(), 4242);
    replace_with_link(d.path(), "/proc/4242/comm", canary.path.to_str().unwrap());
    for json in [false, true] {
        let run = status_root(d.path(), json);
        canary.assert_absent(&run);
        assert!(
            run.stdout.contains("libamdhip64.so.7.2.70204"),
            "{}",
            run.all()
        );
    }

    let d = hostile_root();
    give_root_a_stale_process(d.path(), 4242);
    replace_with_fifo(d.path(), "/proc/4242/comm");
    let run = status_root(d.path(), false);
    assert!(run.stdout.contains("4242"), "{}", run.all());

    // maps a device (the root's own /dev/zero) or a link to the host's PID 1: not read, said.
    let d = hostile_root();
    give_root_a_stale_process(d.path(), 4242);
    give_root_dev_zero(d.path());
    replace_with_link(d.path(), "/proc/4242/maps", "/dev/zero");
    symlink("/proc/1", host(d.path(), "/proc/1")).unwrap();
    let run = status_root(d.path(), false);
    assert!(
        run.stdout
            .contains("could not look at processes: the maps of 2 of 2 processes"),
        "{}",
        run.all()
    );
    let run = status_root(d.path(), true);
    let unseen = json(&run)["processes_unseen"].as_str().unwrap().to_string();
    assert_says(&unseen, &["/proc/1/maps"]);

    // No /proc at all (an image): status says it could not look, in text and JSON.
    let d = hostile_root();
    let _ = std::fs::remove_dir_all(host(d.path(), "/proc"));
    let run = status_root(d.path(), false);
    assert!(
        run.stdout.contains("could not look at processes: /proc")
            && !run.stdout.contains("none maps a deleted runtime library"),
        "{}",
        run.all()
    );
    let run = status_root(d.path(), true);
    assert!(json(&run)["processes_unseen"].is_string(), "{}", run.stdout);
}

/// Issue 31 item 11: verify's symlink check `lstat`ed a listed path with the host's lookup, so a
/// root-internal link to `/` made it an existence oracle for host symlinks (fails on f225f56: a
/// host symlink named through `/hostlink` was reported as a dangling link of ours).
#[test]
fn the_symlink_check_does_not_lstat_through_a_link_to_the_host() {
    rocm_pin_testkit::needs_root!("ldconfig -r chroots");
    let outside = tempfile::tempdir().unwrap();
    let host_link = outside.path().join("host-only-link");
    symlink("/nonexistent-target", &host_link).unwrap();
    let d = hostile_root();
    symlink("/", host(d.path(), "/hostlink")).unwrap();
    let listed = format!("/hostlink{}", host_link.display());
    let list = host(d.path(), HSA_LIST);
    let mut text = std::fs::read_to_string(&list).unwrap();
    text.push_str(&format!("\n{listed}\n"));
    std::fs::write(&list, text).unwrap();
    let run = verify_json(d.path());
    assert_bounded(&run, "verify");
    let symlinks = failed(&run, "symlinks");
    assert!(
        symlinks.is_empty(),
        "the host's {} was looked at: {symlinks:?}",
        host_link.display()
    );
}

/// The checks of a verify run as (name, subject, ok, detail), the root's own path taken out.
fn check_outcomes(run: &Run, root: &Path) -> Vec<[String; 4]> {
    let (absolute, name) = (
        root.to_str().unwrap(),
        root.file_name().unwrap().to_str().unwrap(),
    );
    let text = |v: &serde_json::Value| {
        v.as_str()
            .unwrap()
            .replace(absolute, "<root>")
            .replace(name, "<root>")
    };
    json(run)["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            [
                text(&c["name"]),
                text(&c["subject"]),
                c["ok"].to_string(),
                text(&c["detail"]),
            ]
        })
        .collect()
}

/// Issue 31 item 11: a relative `--root` handed apt a status path it resolved against its
/// `Dir`, so apt ran without the root's dpkg status (fails on f225f56: the pin check said "apt
/// knows no version of it in any source" where the absolute path gives "1 version(s) at
/// priority -1"). The root is made absolute once.
#[test]
fn a_relative_root_is_the_same_root_as_its_absolute_path() {
    rocm_pin_testkit::needs_root!("ldconfig -r chroots");
    let d = hostile_root();
    let parent = d.path().parent().unwrap();
    let name = d.path().file_name().unwrap().to_str().unwrap();
    let absolute = verify_json(d.path());
    let relative = rocm_pin_in(parent, &[], &["verify", "--json", "--root", name]);
    assert_eq!(
        check_outcomes(&relative, d.path()),
        check_outcomes(&absolute, d.path()),
        "relative:\n{}\nabsolute:\n{}",
        relative.all(),
        absolute.all()
    );
    assert_eq!(relative.code, absolute.code);
}

/// What is left in a private TMPDIR.
fn left_in(tmp: &Path) -> Vec<String> {
    std::fs::read_dir(tmp)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

/// Issue 31 item 4: apt-cache opened `<root>/etc/machine-id` itself, outside the view of apt's
/// files: a FIFO there (or a link to a host FIFO) hung verify and status (fails on f225f56:
/// the run hung past the test's timeout). apt now reads a copy made inside the root.
#[test]
fn a_machine_id_that_is_a_fifo_does_not_hang_apt() {
    rocm_pin_testkit::needs_root!("ldconfig -r chroots");
    let outside = tempfile::tempdir().unwrap();
    let host_fifo = outside.path().join("fifo");
    let c = std::ffi::CString::new(host_fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo on a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0, "mkfifo");
    for linked in [false, true] {
        let d = hostile_root();
        let id = host(d.path(), "/etc/machine-id");
        std::fs::write(&id, b"").unwrap();
        if linked {
            replace_with_link(d.path(), "/etc/machine-id", host_fifo.to_str().unwrap());
        } else {
            replace_with_fifo(d.path(), "/etc/machine-id");
        }
        let tmp = tempfile::tempdir().unwrap();
        let envs = [("TMPDIR", tmp.path())];
        let root = d.path().to_str().unwrap();
        for args in [
            ["verify", "--json", "--root", root],
            ["status", "--json", "--root", root],
        ] {
            let run = rocm_pin_in(Path::new("."), &envs, &args);
            assert_bounded(&run, "machine-id");
            assert!(run.code == 0 || run.code == 1, "{}", run.all());
            assert!(left_in(tmp.path()).is_empty(), "{:?}", left_in(tmp.path()));
        }
    }
}

/// The pid of an `apt-cache` whose parent is `parent`, from /proc.
fn apt_cache_child_of(parent: u32) -> Option<u32> {
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: u32 = e.file_name().to_str()?.parse().ok()?;
        let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
        let (comm, rest) = stat.split_once(" (")?.1.rsplit_once(") ")?;
        let ppid: u32 = rest.split(' ').nth(1)?.parse().ok()?;
        (comm == "apt-cache" && ppid == parent).then_some(pid)
    })
}

/// A root whose apt has a large package list to read (200 000 packages, 47 MB): apt-cache
/// policy then takes seconds, a window to signal verify while it runs apt over the root.
fn root_with_large_package_lists() -> tempfile::TempDir {
    let d = hostile_root();
    let lists = host(d.path(), "/var/lib/apt/lists");
    std::fs::create_dir_all(&lists).unwrap();
    std::fs::write(
        host(d.path(), "/etc/apt/sources.list"),
        "deb [trusted=yes] http://example.org/debian x main\n",
    )
    .unwrap();
    let mut text = String::new();
    for i in 0..200_000 {
        text.push_str(&format!(
            "Package: pkg{i}\nVersion: 1.{i}\nArchitecture: amd64\nMaintainer: n <n@e.org>\n\
             Installed-Size: 1\nFilename: pool/p{i}.deb\nSize: 100\nSHA256: {}\n\
             Description: package {i}\n\n",
            "0".repeat(64)
        ));
    }
    std::fs::write(
        lists.join("example.org_debian_dists_x_main_binary-amd64_Packages"),
        text,
    )
    .unwrap();
    d
}

/// Issue 31 item 9: a signal while `verify --root` runs apt-cache left the apt view in TMPDIR
/// and apt-cache running (fails on f225f56: SIGTERM left `rocm-pin-apt-view-*` behind). Each
/// terminating signal now ends the run with 128+signal, apt-cache killed, TMPDIR empty.
#[test]
fn every_terminating_signal_mid_verify_leaves_tmpdir_empty() {
    rocm_pin_testkit::needs_root!("ldconfig -r chroots");
    let d = root_with_large_package_lists();
    for &(name, number) in rocm_pin_testkit::TERMINATING_SIGNALS {
        let tmp = tempfile::tempdir().unwrap();
        let mut child = rocm_pin_testkit::with_default_signals(&mut Command::new(
            rocm_pin_testkit::rocm_pin_bin!(),
        ))
        .args(["verify", "--root", d.path().to_str().unwrap()])
        .env("TMPDIR", tmp.path())
        .env("ROCM_PIN_NO_GUARD", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
        let start = Instant::now();
        let apt = loop {
            if let Some(pid) = apt_cache_child_of(child.id()) {
                break pid;
            }
            assert!(
                child.try_wait().unwrap().is_none(),
                "SIG{name}: verify ended first"
            );
            assert!(start.elapsed() < TIMEOUT, "SIG{name}: apt-cache never ran");
            std::thread::sleep(Duration::from_millis(5));
        };
        // SAFETY: kill(2) on our own child.
        assert_eq!(unsafe { libc::kill(child.id() as i32, number) }, 0);
        let sent = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            assert!(sent.elapsed() < TIMEOUT, "SIG{name}: verify did not end");
            std::thread::sleep(Duration::from_millis(10));
        };
        let code = status.code().unwrap_or_else(|| {
            128 + std::os::unix::process::ExitStatusExt::signal(&status).unwrap()
        });
        assert_eq!(code, 128 + number, "SIG{name}");
        // The killed apt-cache is gone (reaped by init once its parent ended).
        let gone = Instant::now();
        while Path::new(&format!("/proc/{apt}")).exists() && gone.elapsed() < TIMEOUT {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(
            left_in(tmp.path()).is_empty(),
            "SIG{name}: left in TMPDIR: {:?}",
            left_in(tmp.path())
        );
        assert!(
            !Path::new(&format!("/proc/{apt}")).exists(),
            "SIG{name}: apt-cache {apt} runs on"
        );
    }
}

/// A signal rocm-pin was started with ignored (`nohup` ignores HUP) stays ignored: verify
/// carries on to its normal end.
#[test]
fn a_signal_ignored_at_start_stays_ignored() {
    use std::os::unix::process::CommandExt;
    rocm_pin_testkit::needs_root!("ldconfig -r chroots");
    let d = root_with_large_package_lists();
    let tmp = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(rocm_pin_testkit::rocm_pin_bin!());
    cmd.args(["verify", "--root", d.path().to_str().unwrap()])
        .env("TMPDIR", tmp.path())
        .env("ROCM_PIN_NO_GUARD", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // SAFETY: signal(2) in the child before exec, as nohup does.
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGHUP, libc::SIG_IGN);
            Ok(())
        });
    }
    let mut child = cmd.spawn().unwrap();
    let start = Instant::now();
    while apt_cache_child_of(child.id()).is_none() {
        assert!(child.try_wait().unwrap().is_none(), "verify ended first");
        assert!(start.elapsed() < TIMEOUT, "apt-cache never ran");
        std::thread::sleep(Duration::from_millis(5));
    }
    // SAFETY: kill(2) on our own child.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGHUP) }, 0);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0), "{status:?}");
    assert!(left_in(tmp.path()).is_empty(), "{:?}", left_in(tmp.path()));
}

/// A dpkg status over its cap (a root can make one of any size): refused by its size, in one
/// line, without parsing it. Under the old 512 MiB cap a 200 MB status was parsed whole (about
/// 9 bytes of memory per byte, minutes of CPU in a debug build), so this ran past `TIMEOUT`.
#[test]
fn a_dpkg_status_over_its_cap_is_refused_without_parsing() {
    let d = tempfile::tempdir().unwrap();
    let status = host(d.path(), STATUS);
    std::fs::create_dir_all(status.parent().unwrap()).unwrap();
    let mut w = std::io::BufWriter::new(std::fs::File::create(&status).unwrap());
    let mut written = 0usize;
    let mut i = 0u64;
    while written < 200 << 20 {
        let para = format!(
            "Package: pkg{i}\nStatus: install ok installed\nArchitecture: amd64\n\
             Version: 1.0-{i}\nDepends: libc6 (>= 2.36)\nDescription: generated {i}\n\n"
        );
        written += para.len();
        w.write_all(para.as_bytes()).unwrap();
        i += 1;
    }
    w.flush().unwrap();
    drop(w);
    let root = d.path().to_str().unwrap();
    for args in [["status", "--root", root], ["verify", "--root", root]] {
        let run = rocm_pin(&args);
        assert_bounded(&run, args[0]);
        assert_eq!(run.code, 2, "{}: {}", args[0], run.all());
        assert!(
            run.all().contains("larger than the") && run.all().contains("dpkg status"),
            "{}: {}",
            args[0],
            run.all()
        );
    }
}
