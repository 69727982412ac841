//! Shared helpers for the tests/deb_*.rs integration tests: package trees with every entry kind,
//! and parsers for what dpkg-deb prints.

use std::fs;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::Path;
use std::process::Command;

use rocm_pin_core::deb::tar::permission_letters;
use rocm_pin_core::deb::{Compression, Entry, EntryKind};

pub use super::{bin, cache_dir};
pub use rocm_pin_testkit::must;

pub const SDE: u64 = 1_700_000_000;

/// Every compression a .deb member may use, for the tests that cover each.
pub const ALL_COMPRESSIONS: [Compression; 4] = [
    Compression::Xz,
    Compression::Gzip,
    Compression::Zstd,
    Compression::None,
];

/// `len` bytes or a little more of decimal numbers from a linear congruential generator started
/// at `seed` (each its top `64 - shift` bits, space-separated): text that compresses, but only
/// to several compressor blocks, the same bytes on every run.
pub fn lcg_text(len: usize, seed: u64, shift: u32) -> Vec<u8> {
    let mut data = Vec::with_capacity(len);
    let mut x = seed;
    while data.len() < len {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        data.extend_from_slice(format!("{} ", x >> shift).as_bytes());
    }
    data
}

/// One step of building a tree (run in either order).
pub type Step = Box<dyn Fn(&Path)>;

pub fn write_file(root: &Path, rel: &str, data: &[u8], mode: u32) {
    let p = root.join(rel);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(&p, data).unwrap();
    fs::set_permissions(&p, fs::Permissions::from_mode(mode)).unwrap();
}

pub const CONTROL: &str = "Package: rocm-pin-testpkg
Version: 1:2.3~rc1-4
Architecture: amd64
Maintainer: Test <test@example.org>
Description: test package
 with a long description
 .
 over several lines.
";

/// A package tree with regular files (several modes, empty, large-ish), directories (one
/// empty), relative/absolute/dangling symlinks, a hard-linked inode with three names, long
/// names and a long symlink target. `reverse` creates everything in the opposite order, and
/// `mtime` sets every mtime, so two trees differ in everything but content.
pub fn make_tree(root: &Path, reverse: bool, mtime: i64) {
    let long_dir = format!("usr/share/{}", "d".repeat(90));
    let long_file = format!("{long_dir}/{}.txt", "f".repeat(60));
    let long_target = format!("../../{}", "t".repeat(110));
    let mut big = Vec::new();
    for i in 0..200_000u32 {
        big.extend_from_slice(format!("line {i} of a larger file\n").as_bytes());
    }
    let mut steps: Vec<Step> = vec![
        Box::new(|r| {
            fs::create_dir_all(r.join("DEBIAN")).unwrap();
            fs::write(r.join("DEBIAN/control"), CONTROL).unwrap();
        }),
        Box::new(|r| write_file(r, "usr/bin/tool", b"#!/bin/sh\necho tool\n", 0o755)),
        Box::new(|r| {
            write_file(
                r,
                "usr/lib/x86_64-linux-gnu/libfoo.so.1.2.3",
                b"\x7fELF not really",
                0o644,
            )
        }),
        Box::new(|r| write_file(r, "usr/share/doc/pkg/empty", b"", 0o644)),
        Box::new(|r| write_file(r, "usr/share/doc/pkg/private", b"secret\n", 0o600)),
        Box::new(|r| write_file(r, "usr/share/doc/pkg/name with spaces", b"spaces\n", 0o644)),
        Box::new(|r| write_file(r, "usr/sbin/setuid-tool", b"#!/bin/sh\n", 0o4755)),
        Box::new(move |r| write_file(r, "usr/share/pkg/big.txt", &big, 0o644)),
        Box::new(move |r| write_file(r, &long_file, b"long name\n", 0o644)),
        Box::new(|r| fs::create_dir_all(r.join("var/lib/pkg/empty-dir")).unwrap()),
        Box::new(|r| {
            fs::create_dir_all(r.join("usr/lib/x86_64-linux-gnu")).unwrap();
            symlink(
                "libfoo.so.1.2.3",
                r.join("usr/lib/x86_64-linux-gnu/libfoo.so.1"),
            )
            .unwrap();
        }),
        Box::new(|r| {
            fs::create_dir_all(r.join("usr/share/pkg")).unwrap();
            symlink("/etc/hostname", r.join("usr/share/pkg/absolute-link")).unwrap();
            symlink("does/not/exist", r.join("usr/share/pkg/dangling")).unwrap();
        }),
        Box::new(move |r| {
            fs::create_dir_all(r.join("usr/share/pkg")).unwrap();
            symlink(&long_target, r.join("usr/share/pkg/long-target")).unwrap();
        }),
        Box::new(|r| {
            write_file(
                r,
                "opt/pkg/lib/libbar.so.7.2.70204",
                b"versioned library bytes\n",
                0o644,
            );
            fs::create_dir_all(r.join("opt/pkg/compat")).unwrap();
            fs::hard_link(
                r.join("opt/pkg/lib/libbar.so.7.2.70204"),
                r.join("opt/pkg/lib/libbar.so.7.2.0"),
            )
            .unwrap();
            fs::hard_link(
                r.join("opt/pkg/lib/libbar.so.7.2.70204"),
                r.join("opt/pkg/compat/libbar-copy.so"),
            )
            .unwrap();
        }),
    ];
    if reverse {
        steps.reverse();
        // The control file must exist however the tree was built.
    }
    fs::create_dir_all(root).unwrap();
    for step in &steps {
        step(root);
    }
    set_mtimes(root, mtime);
}

/// Set every mtime under `root` (symlinks themselves included) with `touch -h -d @mtime`.
pub fn set_mtimes(root: &Path, mtime: i64) {
    let status = Command::new("sh")
        .arg("-c")
        .arg(format!("find . -depth -exec touch -h -d @{mtime} {{}} +"))
        .current_dir(root)
        .status()
        .unwrap();
    assert!(status.success());
}

/// One line of `dpkg-deb -c`, reduced to what both sides must agree on.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Listed {
    pub path: String,
    /// `-`, `d`, `l`, `h`
    pub kind: char,
    pub perms: String,
    pub size: u64,
    pub target: Option<String>,
}

pub fn dpkg_contents(deb: &Path) -> Vec<Listed> {
    let out = must(Command::new("dpkg-deb").arg("-c").arg(deb));
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(parse_contents_line)
        .collect()
}

/// `drwxr-xr-x root/root         0 2023-02-19 10:34 ./usr/` (symlinks `… -> target`, hard links
/// `… link to target`).
pub fn parse_contents_line(line: &str) -> Listed {
    let mut fields = line
        .splitn(6, char::is_whitespace)
        .filter(|s| !s.is_empty());
    let mode = fields.next().unwrap();
    // splitn on single spaces leaves padding; re-split robustly.
    let rest: Vec<&str> = line.split_whitespace().collect();
    let size: u64 = rest[2].parse().unwrap();
    // Path starts after date and time (fields 3 and 4).
    let idx = line.find(rest[4]).unwrap() + rest[4].len() + 1;
    let tail = &line[idx..];
    let kind = mode.chars().next().unwrap();
    let (path, target) = match kind {
        'l' => {
            let (p, t) = tail.split_once(" -> ").unwrap();
            (p.to_string(), Some(t.to_string()))
        }
        'h' => {
            let (p, t) = tail.split_once(" link to ").unwrap();
            (p.to_string(), Some(t.to_string()))
        }
        _ => (tail.to_string(), None),
    };
    Listed {
        path,
        kind,
        perms: mode[1..].to_string(),
        size,
        target,
    }
}

/// Our reader's entries in the same shape as `dpkg-deb -c`.
pub fn ours_as_listed(entries: &[Entry]) -> Vec<Listed> {
    entries
        .iter()
        .map(|e| {
            let kind = e.kind.type_char();
            let target = match &e.kind {
                EntryKind::Symlink(t) | EntryKind::Hardlink(t) => Some(t.clone()),
                EntryKind::File | EntryKind::Dir => None,
            };
            Listed {
                path: e.path.clone(),
                kind,
                perms: permission_letters(if kind == 'l' { 0o777 } else { e.mode }),
                size: e.size,
                target,
            }
        })
        .collect()
}
