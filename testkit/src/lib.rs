//! Test machinery shared by rocm-pin's integration tests. Nothing here ships in the product.

pub mod cpack;
pub mod deb_table;
pub mod debs;
pub mod fixture;
pub mod gcc;
pub mod http;
pub mod runtime;
pub mod scratch;
pub mod staging;
pub mod timed;

use std::path::{Path, PathBuf};
use std::process::Output;

use rocm_pin_kit::sandbox::{ChrootImage, Sandbox, SandboxOptions};

/// The rocm-pin binary under test. Cargo sets `CARGO_BIN_EXE_rocm-pin` only while it compiles an
/// integration-test crate, so this expands there (each test binary's `util::bin()` is this).
#[macro_export]
macro_rules! rocm_pin_bin {
    () => {
        ::std::path::PathBuf::from(env!("CARGO_BIN_EXE_rocm-pin"))
    };
}

/// The guard binary under test (`rocm-pin-guard`: guard + verify of a root), like
/// [`rocm_pin_bin!`].
#[macro_export]
macro_rules! rocm_pin_guard_bin {
    () => {
        ::std::path::PathBuf::from(env!("CARGO_BIN_EXE_rocm-pin-guard"))
    };
}

/// The workspace root (the rocm-pin checkout).
pub fn workspace_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("testkit lives in the workspace root")
}

/// Where `scripts/test-setup` puts the test inputs (chroot tarballs, Debian's .debs, image
/// bases): `$ROCM_PIN_CACHE` when set and not empty, else `.cache` in the workspace root.
pub fn cache_dir() -> PathBuf {
    std::env::var_os("ROCM_PIN_CACHE")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_dir().join(".cache"))
}

/// The cached chroot image of `suite` with apt (`<cache>/chroot/<suite>-apt.tar.zst`, made by
/// `scripts/test-setup`); a missing tarball fails the test saying so.
pub fn chroot_image(suite: &str) -> ChrootImage {
    ChrootImage::existing(suite, &cache_dir()).unwrap_or_else(|e| panic!("{e:#}"))
}

/// A sandbox of `image` with the options `set` turns on, the rest at their defaults:
/// `sandbox_with(&image, |o| o.mount_proc = true)`.
pub fn sandbox_with(image: &ChrootImage, set: impl FnOnce(&mut SandboxOptions)) -> Sandbox {
    let mut options = SandboxOptions::default();
    set(&mut options);
    Sandbox::with_options(image, &options).unwrap_or_else(|e| panic!("a sandbox: {e:#}"))
}

/// A command's exit code (-1 when a signal ended it).
pub fn rc(out: &Output) -> i32 {
    out.status.code().unwrap_or(-1)
}

/// What is wrong with a `verify` run `v` that should pass (`want_ok`) or fail: None when it did
/// as expected, else its exit code, the expectation and its output.
pub fn verify_unexpected(v: &Output, want_ok: bool) -> Option<String> {
    (v.status.success() != want_ok).then(|| {
        format!(
            "verify rc {} (expected {}):\n{}",
            rc(v),
            if want_ok { "pass" } else { "fail" },
            text(v)
        )
    })
}

/// A command's stdout followed by its stderr, for matching and messages.
pub fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A command's stdout and stderr under headings, for assertion messages.
pub fn labeled(out: &Output) -> String {
    format!(
        "--- stdout ---\n{}\n--- stderr ---\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The last 60 lines of [`labeled`] (a long build's output), for assertion messages.
pub fn tail(out: &Output) -> String {
    let all = labeled(out);
    let lines: Vec<&str> = all.lines().collect();
    lines[lines.len().saturating_sub(60)..].join("\n")
}

/// Is this process root?
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Set by `scripts/test`: there, not being root fails a root test instead of skipping it, so
/// the project's test command can never go green by skipping.
pub const ROOT_REQUIRED_ENV: &str = "ROCM_PIN_TESTS_NEED_ROOT";

/// Called by [`needs_root!`] when not root: one line saying why the test is skipped, or a
/// failure under `scripts/test`.
pub fn skip_without_root(test: &str, why: &str) {
    skip(
        test,
        &format!("needs root ({why}); scripts/test runs it as root"),
        ROOT_REQUIRED_ENV,
    );
}

/// The tests of this test binary skipped so far: `name: reason`.
static SKIPPED: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
static SUMMARY_AT_EXIT: std::sync::Once = std::sync::Once::new();

/// Skip the calling test (its caller returns right after) with a one-line reason, or fail it
/// when `strict_env` is set (scripts/test sets them: a skip there is a failure).
///
/// The harness shows a passing test's output only with `--nocapture`, so the reason alone
/// would be invisible in a plain `cargo test`: every skip is also kept, and when the test
/// binary exits (after its `test result:` line) the list of its skipped tests and their
/// reasons is written to stderr directly, past the harness's capture.
pub fn skip(test: &str, reason: &str, strict_env: &str) {
    // libtest runs each test on a thread named after it; the module path otherwise.
    let current = std::thread::current();
    let name = current
        .name()
        .filter(|n| *n != "main")
        .unwrap_or(test)
        .to_string();
    if std::env::var_os(strict_env).is_some_and(|v| !v.is_empty()) {
        panic!("{name} {reason}; {strict_env} is set (scripts/test), so this fails instead of skipping");
    }
    eprintln!("skipped {name}: {reason}");
    SKIPPED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .push(format!("{name}: {reason}"));
    SUMMARY_AT_EXIT.call_once(|| {
        // SAFETY: atexit registers a plain function, which runs once at process exit.
        unsafe { libc::atexit(print_skipped_at_exit) };
    });
}

extern "C" fn print_skipped_at_exit() {
    let skipped = std::mem::take(
        &mut *SKIPPED
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
    );
    let binary = std::env::args()
        .next()
        .and_then(|a| {
            Path::new(&a)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
        })
        .unwrap_or_default();
    let mut text = format!(
        "\nSKIPPED: {} test(s) of {binary} did not run (they passed without checking anything):\n",
        skipped.len()
    );
    for line in &skipped {
        text.push_str(&format!("  {line}\n"));
    }
    text.push_str(
        "  scripts/test runs them (as root, after scripts/test-setup) and fails on a skip.\n\n",
    );
    // Not eprintln!: the harness may still capture that; fd 2 itself is what the user sees.
    let _ = std::io::Write::write_all(&mut std::io::stderr(), text.as_bytes());
    // scripts/cargo-test collects every binary's list to repeat them after cargo's last line.
    if let Some(file) = std::env::var_os(SKIPS_FILE_ENV).filter(|v| !v.is_empty()) {
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(file)
        {
            let lines: String = skipped.iter().map(|l| format!("  {l}\n")).collect();
            let _ = std::io::Write::write_all(&mut f, lines.as_bytes());
        }
    }
}

/// Set by `scripts/cargo-test`: a file every test binary appends its skipped tests to.
pub const SKIPS_FILE_ENV: &str = "ROCM_PIN_TEST_SKIPS_FILE";

/// First line of a test that needs root (chroots, mounts, dpkg in a sandbox, OCI builds):
/// returns from the test with a one-line reason when not root, so a contributor's plain
/// `cargo test` is green, and fails instead under `scripts/test`.
#[macro_export]
macro_rules! needs_root {
    ($why:expr) => {
        if !$crate::is_root() {
            $crate::skip_without_root(module_path!(), $why);
            return;
        }
    };
}

/// A table of root tests that share one driver: each row `name => arg` is a `#[test] fn name`
/// that needs root (see [`needs_root!`], `why` says for what) and runs `driver(arg)`. A new
/// configuration is one row. Attributes and doc comments before a row go on its test.
#[macro_export]
macro_rules! root_tests {
    ($why:expr, $driver:path { $( $(#[$meta:meta])* $name:ident => $arg:expr ),+ $(,)? }) => {
        $(
            $(#[$meta])*
            #[test]
            fn $name() {
                $crate::needs_root!($why);
                $driver($arg);
            }
        )+
    };
}

/// Set by `scripts/test`: there, a test input `scripts/test-setup` did not prepare fails the
/// test instead of skipping it, as [`ROOT_REQUIRED_ENV`] does for root.
pub const SETUP_REQUIRED_ENV: &str = "ROCM_PIN_TESTS_NEED_SETUP";

/// The test input `input` (a path under [`cache_dir`], e.g. `debian-debs`) when
/// `scripts/test-setup` prepared it: a file, or a directory with something in it.
pub fn setup_input(input: &str) -> Option<PathBuf> {
    let path = cache_dir().join(input);
    let meta = std::fs::metadata(&path).ok()?;
    if meta.is_dir() {
        std::fs::read_dir(&path).ok()?.next()?.ok()?;
    }
    Some(path)
}

/// Called by [`needs_setup!`] when `input` is missing: one line saying why the test is skipped
/// and how to get the input, or a failure under `scripts/test`.
pub fn skip_without_setup(test: &str, input: &str) {
    let path = cache_dir().join(input);
    skip(
        test,
        &format!(
            "needs {} (made by scripts/test-setup; set ROCM_PIN_CACHE to where it is)",
            path.display()
        ),
        SETUP_REQUIRED_ENV,
    );
}

/// A test's first line when it needs an input `scripts/test-setup` downloads or builds (Debian
/// .debs, cross binutils, chroot tarballs): evaluates to the input's path under [`cache_dir`],
/// or returns from the test with a one-line reason when it is missing, so a contributor's plain
/// `cargo test` is green; under `scripts/test` ([`SETUP_REQUIRED_ENV`]) it fails instead.
#[macro_export]
macro_rules! needs_setup {
    ($input:expr) => {
        match $crate::setup_input($input) {
            Some(path) => path,
            None => {
                $crate::skip_without_setup(module_path!(), $input);
                return;
            }
        }
    };
}

/// Run `cmd`; panic with its output unless it succeeds.
pub fn must(cmd: &mut std::process::Command) -> std::process::Output {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Run `cmd`; panic with its output unless it succeeds; its stdout.
pub fn must_stdout(cmd: &mut std::process::Command) -> String {
    String::from_utf8_lossy(&must(cmd).stdout).into_owned()
}

/// `rocm-pin build` (the binary `bin`) of the stand-in source checkout `src` at `commit`,
/// against a ROCm 7.2.4 tree made under `work/rocm` (only its `.info/version` is read); the
/// staging goes to `work/staging`, which is returned.
pub fn build_standin_staging(bin: &Path, src: &Path, commit: &str, work: &Path) -> PathBuf {
    let rocm = work.join("rocm/opt/rocm-7.2.4");
    std::fs::create_dir_all(rocm.join(".info")).unwrap();
    std::fs::write(rocm.join(".info/version"), "7.2.4-93\n").unwrap();
    let staging = work.join("staging");
    let mut cmd = std::process::Command::new(bin);
    cmd.args(["build", "--source"])
        .arg(src)
        .args(["--commit", commit, "--rocm-path"])
        .arg(&rocm)
        .arg("--out")
        .arg(&staging)
        .env_remove("MAX_JOBS");
    // scripts/bench-verify: `HSA,HIP[,HIPRTC,BUILTINS]` bytes of padding for the rebuilt
    // libraries (the stand-in source's STANDIN_*PAYLOAD_BYTES), so they have the real sizes.
    if let Ok(payload) = std::env::var("ROCM_PIN_BENCH_PAYLOAD") {
        let bytes: Vec<&str> = payload.split(',').collect();
        let options = [
            "--rocr-cmake-arg=-DSTANDIN_PAYLOAD_BYTES",
            "--clr-cmake-arg=-DSTANDIN_PAYLOAD_BYTES",
            "--clr-cmake-arg=-DSTANDIN_HIPRTC_PAYLOAD_BYTES",
            "--clr-cmake-arg=-DSTANDIN_HIPRTC_BUILTINS_PAYLOAD_BYTES",
        ];
        assert!(
            matches!(bytes.len(), 2 | 4),
            "ROCM_PIN_BENCH_PAYLOAD is HSA,HIP[,HIPRTC,BUILTINS] bytes, not {payload:?}"
        );
        for (option, n) in options.iter().zip(bytes) {
            cmd.arg(format!("{option}={n}"));
        }
    }
    must(&mut cmd);
    staging
}

/// Text rocm-pin printed must carry no control character raw but the renderer's own newlines
/// and tabs, and no right-to-left override (the hostile-input tests' escaping check: what a
/// root, an image or a .deb wrote into a name or field is shown escaped).
#[track_caller]
pub fn assert_no_raw_controls(text: &str, what: &str) {
    let raw: Vec<char> = text
        .chars()
        .filter(|&c| (c.is_control() && c != '\n' && c != '\t') || c == '\u{202e}')
        .collect();
    assert!(
        raw.is_empty(),
        "{what}: control characters reached the terminal raw {raw:?}:\n{text:?}"
    );
}

/// [`assert_no_raw_controls`], and no line of `text` begins with `forged_line` (a line a hostile
/// name or field wrote to pass for one of the renderer's own).
#[track_caller]
pub fn assert_escaped(text: &str, forged_line: &str, what: &str) {
    assert_no_raw_controls(text, what);
    assert!(
        !text
            .lines()
            .any(|l| l.trim_start().starts_with(forged_line)),
        "{what}: a forged line stands on its own:\n{text}"
    );
}

/// Assert that `text` (a command's output, an error) holds every one of `phrases`; the message
/// names the missing phrase and shows all of `text`.
#[track_caller]
pub fn assert_says(text: &str, phrases: &[&str]) {
    for p in phrases {
        assert!(text.contains(p), "lacks {p:?}:\n{text}");
    }
}

/// Assert that the command behind `out` refused (exit 2, no panic) saying each of `phrases` on
/// stderr; returns that stderr. `what` names the case in the message.
#[track_caller]
pub fn assert_refused(out: &Output, what: &str, phrases: &[&str]) -> String {
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{what}: {err}");
    assert!(!err.contains("panicked"), "{what}: {err}");
    for p in phrases {
        assert!(err.contains(p), "{what}: lacks {p:?}:\n{err}");
    }
    err
}

/// [`assert_refused`], in one line (a trailing newline aside).
#[track_caller]
pub fn assert_refused_in_one_line(out: &Output, what: &str, phrases: &[&str]) -> String {
    let err = assert_refused(out, what, phrases);
    assert_eq!(
        err.trim_end().lines().count(),
        1,
        "{what}: not one line: {err}"
    );
    err
}

/// Assert that the command behind `out` succeeded; the message says `what` ran and shows its
/// output.
#[track_caller]
pub fn assert_success(out: &Output, what: &str) {
    assert!(
        out.status.success(),
        "{what}: {}\n{}",
        out.status,
        labeled(out)
    );
}

/// Every catchable signal whose default action ends a process, by name: what a run must clean
/// up after (rocm-pin removes its temporary files on each and ends with 128+signal).
pub const TERMINATING_SIGNALS: &[(&str, i32)] = &[
    ("TERM", libc::SIGTERM),
    ("INT", libc::SIGINT),
    ("HUP", libc::SIGHUP),
    ("QUIT", libc::SIGQUIT),
    ("USR1", libc::SIGUSR1),
    ("USR2", libc::SIGUSR2),
    ("ALRM", libc::SIGALRM),
    ("VTALRM", libc::SIGVTALRM),
    ("PROF", libc::SIGPROF),
    ("XCPU", libc::SIGXCPU),
    ("XFSZ", libc::SIGXFSZ),
    ("IO", libc::SIGIO),
    ("PWR", libc::SIGPWR),
    ("STKFLT", libc::SIGSTKFLT),
];

/// Start `cmd` with every terminating signal at its default action, as a foreground program
/// in a terminal is. A shell without job control (`cmd &` in a script, a CI runner's shell)
/// starts background jobs with SIGINT and SIGQUIT ignored, and rocm-pin rightly keeps an
/// inherited ignore (nohup's contract); a test that sends those signals means the terminal
/// case, so it must not inherit how the test run itself was started.
pub fn with_default_signals(cmd: &mut std::process::Command) -> &mut std::process::Command {
    use std::os::unix::process::CommandExt as _;
    // SAFETY: signal(2) between fork and exec is async-signal-safe; nothing else runs there.
    unsafe {
        cmd.pre_exec(|| {
            for sig in [libc::SIGINT, libc::SIGQUIT, libc::SIGHUP, libc::SIGTERM] {
                libc::signal(sig, libc::SIG_DFL);
            }
            Ok(())
        })
    }
}
