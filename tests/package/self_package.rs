//! `scripts/package-self`: rocm-pin's own .deb, judged by lintian, dpkg-deb and a real dpkg
//! install in a throwaway bookworm chroot. Packages the test binary (the debug build, stripped by
//! the script) to save CI a release build; the script runs the same steps for a release build.
//! Needs root for the chroot and the cached chroot image (scripts/test-setup).

use rocm_pin_testkit::assert_says;
use rocm_pin_testkit::assert_success;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use rocm_pin_kit::sandbox::{ChrootImage, Sandbox};
use rocm_pin_testkit::debs::field;
use rocm_pin_testkit::labeled;

fn repo_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn must(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(out.status.success(), "{cmd:?} failed:\n{}", labeled(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The Debian package that ships the file the host's loader uses for `soname`.
fn package_of_soname(soname: &str) -> String {
    let cache = must(Command::new("ldconfig").arg("-p"));
    let path = cache
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with(&format!("{soname} ")))
        .filter_map(|l| l.rsplit("=> ").next())
        .next()
        .unwrap_or_else(|| panic!("{soname} is not in the host's ld.so.cache"))
        .to_string();
    // dpkg -S knows the /usr-merged or the /lib path; try the canonical one as well.
    let mut candidates = vec![path.clone()];
    if let Ok(real) = std::fs::canonicalize(&path) {
        candidates.push(real.display().to_string());
    }
    if let Some(rest) = path.strip_prefix("/usr") {
        candidates.push(rest.to_string());
    }
    for c in &candidates {
        let out = Command::new("dpkg").args(["-S", c]).output().unwrap();
        if out.status.success() {
            let s = String::from_utf8_lossy(&out.stdout);
            let pkg = s.split(':').next().unwrap_or("").trim().to_string();
            if !pkg.is_empty() {
                return pkg;
            }
        }
    }
    panic!("no package owns {soname} ({candidates:?})");
}

#[test]
fn package_self_builds_a_lintian_clean_deb_that_installs_and_runs() {
    rocm_pin_testkit::needs_root!("a chroot and lintian");
    // SAFETY: geteuid has no preconditions.
    assert!(
        unsafe { libc::geteuid() } == 0,
        "this test installs the package in a chroot: it needs root (CI runs as root)"
    );
    let out_dir = tempfile::tempdir().unwrap();
    let t = Instant::now();
    let out = Command::new(repo_dir().join("scripts/package-self"))
        .arg(out_dir.path())
        .env("LINTIAN", "1")
        .env("ROCM_PIN_BIN", crate::util::bin())
        .output()
        .unwrap();
    eprintln!(
        "package_self: scripts/package-self (with lintian) took {:.1}s",
        t.elapsed().as_secs_f64()
    );
    assert_success(
        &out,
        "scripts/package-self failed (lintian errors/warnings fail it)",
    );
    let deb = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim().to_string());
    let version = env!("CARGO_PKG_VERSION");
    let arch = must(Command::new("dpkg").arg("--print-architecture"));
    assert_eq!(
        deb.file_name().unwrap().to_string_lossy(),
        format!("rocm-pin_{version}_{}.deb", arch.trim())
    );

    // The script ran lintian (its output on stderr): no error and no warning line; the one
    // override shows as O:, info tags as I:.
    let stderr = String::from_utf8_lossy(&out.stderr);
    let bad: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("E:") || l.starts_with("W:"))
        .collect();
    assert!(bad.is_empty(), "lintian: {bad:?}\n{}", labeled(&out));

    // Contents.
    let listing = must(Command::new("dpkg-deb").arg("-c").arg(&deb));
    let paths: BTreeSet<String> = listing
        .lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .map(str::to_string)
        .collect();
    for p in SELF_DEB_SHIPS {
        assert!(paths.contains(*p), "{p} missing from the .deb:\n{listing}");
    }
    // The hidden manpage subcommand has no page of its own.
    assert!(
        !paths.iter().any(|p| p.contains("rocm-pin-manpage")),
        "{listing}"
    );

    assert_depends_names_every_needed_library(&deb);
    installed_in_a_chroot_it_runs(&deb, version);
}

/// What rocm-pin's own .deb ships (`dpkg-deb -c` paths): the binary, the man pages (the
/// hidden manpage subcommand has none), the completions, the docs (the README and the docs that
/// list the exit statuses and the JSON fields, compressed as Debian policy 12.3 wants files over
/// 4 KiB), the recipe's scripts.
const SELF_DEB_SHIPS: &[&str] = &[
    "./usr/bin/rocm-pin",
    // The guard binary the hooks run (its page is rocm-pin-guard.1, the guard subcommand's).
    "./usr/bin/rocm-pin-guard",
    "./usr/share/man/man1/rocm-pin-guard.1.gz",
    "./usr/share/man/man1/rocm-pin.1.gz",
    "./usr/share/man/man1/rocm-pin-install.1.gz",
    "./usr/share/man/man1/rocm-pin-verify.1.gz",
    "./usr/share/bash-completion/completions/rocm-pin",
    "./usr/share/zsh/vendor-completions/_rocm-pin",
    "./usr/share/fish/vendor_completions.d/rocm-pin.fish",
    "./usr/share/doc/rocm-pin/copyright",
    "./usr/share/doc/rocm-pin/changelog.gz",
    // The README and the docs that list the exit statuses and the JSON fields, compressed
    // as Debian policy 12.3 wants files over 4 KiB.
    "./usr/share/doc/rocm-pin/README.md.gz",
    "./usr/share/doc/rocm-pin/docs/security.md.gz",
    "./usr/share/doc/rocm-pin/docs/verify-json.md.gz",
    "./usr/share/doc/rocm-pin/docs/status-json.md.gz",
    "./usr/share/rocm-pin/docker/install-runtime.sh",
    "./usr/share/rocm-pin/docker/verify-runtime.sh",
];

/// Depends names the package of every library the binary links (NEEDED), independently of how
/// the script computed it.
fn assert_depends_names_every_needed_library(deb: &Path) {
    let depends = field(deb, "Depends");
    let dyn_section = must(Command::new("objdump").arg("-p").arg(crate::util::bin()));
    let needed: Vec<&str> = dyn_section
        .lines()
        .filter_map(|l| l.trim().strip_prefix("NEEDED"))
        .map(str::trim)
        .collect();
    assert!(needed.contains(&"libc.so.6"), "{dyn_section}");
    for soname in needed {
        let pkg = package_of_soname(soname);
        let pkg = pkg.split(':').next().unwrap();
        assert!(
            depends
                .split(',')
                .any(|d| d.split_whitespace().next() == Some(pkg)),
            "NEEDED {soname} comes from {pkg}, which Depends ({depends}) does not name"
        );
    }
    assert!(
        depends.contains("libc6 (>= 2."),
        "no versioned libc6: {depends}"
    );
}

/// Installed with dpkg (its Depends must be satisfied by a plain bookworm) in a throwaway root,
/// it runs from there; its man page and completion are the installed binary's; purge removes it.
fn installed_in_a_chroot_it_runs(deb: &Path, version: &str) {
    let cache = rocm_pin_testkit::cache_dir();
    assert!(
        cache.join("chroot/bookworm-apt.tar.zst").is_file(),
        "the bookworm chroot image is missing: run scripts/test-setup"
    );
    let image = ChrootImage::cached("bookworm", &cache).unwrap();
    let sb = Sandbox::new(&image).unwrap();
    sb.copy_in(deb, "/tmp/rocm-pin.deb").unwrap();
    sb.run_ok(&["dpkg", "-i", "/tmp/rocm-pin.deb"])
        .expect("dpkg -i of rocm-pin's own .deb");
    let v = sb.run_ok(&["/usr/bin/rocm-pin", "--version"]).unwrap();
    assert_eq!(v.trim(), format!("rocm-pin {version}"));
    let v = sb
        .run_ok(&["/usr/bin/rocm-pin-guard", "--version"])
        .unwrap();
    assert_eq!(v.trim(), format!("rocm-pin-guard {version}"));
    let files = sb.run_ok(&["dpkg", "-L", "rocm-pin"]).unwrap();
    assert!(
        files
            .lines()
            .any(|l| l == "/usr/share/man/man1/rocm-pin.1.gz"),
        "{files}"
    );
    // The installed man page has the exit statuses (man-pages(7)'s EXIT STATUS section).
    let page = sb
        .run_ok(&["sh", "-c", "zcat /usr/share/man/man1/rocm-pin-verify.1.gz"])
        .unwrap();
    assert_says(&page, &[".SH \"EXIT STATUS\""]);
    // The installed completion script is what the installed binary prints.
    let installed = sb
        .read_to_string("/usr/share/bash-completion/completions/rocm-pin")
        .unwrap();
    let printed = sb
        .run_ok(&["/usr/bin/rocm-pin", "completions", "bash"])
        .unwrap();
    assert_eq!(installed, printed);
    sb.run_ok(&["dpkg", "--purge", "rocm-pin"]).unwrap();
    assert!(!sb.path("/usr/bin/rocm-pin").exists());
    assert!(!sb.path("/usr/bin/rocm-pin-guard").exists());
}
