//! Exit statuses where users look (issue 36): at the end of every subcommand's `--help`, in
//! every man page's EXIT STATUS section, and Ctrl-C ending `rocm-pin demo` with 130 as a shell
//! reports a process SIGINT ended (it exited 1, "a check failed").

use rocm_pin_testkit::assert_says;
use rocm_pin_testkit::assert_success;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::util::{bin, text};

/// Every row of the exit-status table: code and the start of its meaning.
const ROWS: &[(&str, &str)] = &[
    ("0", "success"),
    ("1", "a check ran and failed"),
    ("2", "bad input"),
    ("3", "the ROCm version gate skipped this host"),
    ("130", "interrupted by Ctrl-C"),
];

fn help(path: &[&str]) -> String {
    let out = Command::new(bin())
        .args(path)
        .arg("--help")
        .output()
        .unwrap();
    assert!(out.status.success(), "{path:?} --help: {}", text(&out));
    String::from_utf8(out.stdout).unwrap()
}

/// The subcommands a `--help` lists under "Commands:" (clap's layout), `help` left out.
fn listed_subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| l.trim_end() != "Commands:")
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        // A wrapped description continues deeper; a command's line is indented by two.
        .filter(|l| !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_string)
        .collect()
}

fn assert_has_exit_status(what: &str, help: &str) {
    let block = help
        .split_once("\nExit status:\n")
        .unwrap_or_else(|| panic!("{what}: no 'Exit status:' block:\n{help}"))
        .1;
    for (code, meaning) in ROWS {
        assert!(
            block
                .lines()
                .any(|l| l.trim_start().starts_with(&format!("{code}  {meaning}"))),
            "{what}: no row for exit {code}:\n{block}"
        );
    }
}

#[test]
fn every_subcommands_help_ends_with_the_exit_statuses() {
    // Walk the command tree as a user would, from the top-level --help down; the hidden
    // subcommands are walked too (they are run by scripts and images).
    let mut queue: Vec<Vec<String>> = vec![vec![]];
    queue.push(vec!["manpage".into()]);
    queue.push(vec!["standin".into()]);
    let mut seen = 0;
    while let Some(path) = queue.pop() {
        let args: Vec<&str> = path.iter().map(String::as_str).collect();
        let text = help(&args);
        assert_has_exit_status(&format!("rocm-pin {} --help", args.join(" ")), &text);
        for sub in listed_subcommands(&text) {
            let mut child = path.clone();
            child.push(sub);
            queue.push(child);
        }
        seen += 1;
    }
    // The top level, its 12 visible subcommands, guard's and deb's own, the hidden ones.
    assert!(seen >= 20, "only {seen} commands walked");
    // `-h` stays short: its own text, no table.
    let short = Command::new(bin()).args(["verify", "-h"]).output().unwrap();
    assert!(!String::from_utf8_lossy(&short.stdout).contains("Exit status:"));
}

#[test]
fn every_man_page_has_an_exit_status_section() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(bin())
        .args(["manpage", "--out"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_success(&out, "the command");
    let mut pages = 0;
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let path = entry.unwrap().path();
        let page = std::fs::read_to_string(&path).unwrap();
        let section = page
            .split_once(".SH \"EXIT STATUS\"\n")
            .unwrap_or_else(|| panic!("{}: no EXIT STATUS section", path.display()))
            .1;
        // Up to the next section: one tagged paragraph per code.
        let section = section.split("\n.SH ").next().unwrap().replace("\\-", "-");
        for (code, meaning) in ROWS {
            assert!(
                section.contains(&format!(".TP\n{code}\n{meaning}")),
                "{}: no paragraph for exit {code}:\n{section}",
                path.display()
            );
        }
        // Before VERSION/AUTHORS, where man-pages(7) puts it.
        if let Some(version) = page.find(".SH VERSION") {
            assert!(page.find(".SH \"EXIT STATUS\"").unwrap() < version);
        }
        pages += 1;
    }
    assert!(pages >= 13, "only {pages} man pages");
}

/// Wait (bounded) until `path` exists.
fn wait_for(path: &Path, limit: Duration) {
    let started = Instant::now();
    while !path.exists() {
        assert!(
            started.elapsed() < limit,
            "{} did not appear within {limit:?}",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn ctrl_c_ends_the_demo_with_130_after_cleaning_up() {
    rocm_pin_testkit::needs_root!("the demo's chroot");
    let cache = rocm_pin_testkit::needs_setup!("chroot/bookworm-apt.tar.zst");
    let cache = cache.parent().unwrap().parent().unwrap().to_path_buf();
    let tmp = tempfile::tempdir().unwrap();
    let keep = tmp.path().join("kept");
    // Its own process group, as a shell puts a foreground job: Ctrl-C is SIGINT to the group
    // (rocm-pin and whatever step it runs).
    let child = rocm_pin_testkit::with_default_signals(&mut Command::new(bin()))
        .args(["demo", "--cache"])
        .arg(&cache)
        .arg("--keep")
        .arg(&keep)
        .process_group(0)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The work directory's logs/ exists once the demo has started its steps.
    wait_for(&keep.join("logs"), Duration::from_secs(60));
    std::thread::sleep(Duration::from_millis(500));
    // SAFETY: kill has no memory preconditions; the group is the child's own.
    let sent = unsafe { libc::kill(-(child.id() as i32), libc::SIGINT) };
    assert_eq!(sent, 0);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", text(&out));
    let all = text(&out);
    assert_says(&all, &["demo interrupted"]);
    // The table was still printed, with the steps after the interruption not run.
    assert_says(&all, &["not run"]);
}
