//! What `rocm-pin deb build` writes, judged by dpkg-deb, dpkg and lintian: same entries
//! (types, modes, sizes, link targets, hard links) in `dpkg-deb -c`, `--info` and `--extract`,
//! hard links sharing an inode after a real `dpkg --root` install, byte-identical rebuilds.

use rocm_pin_testkit::assert_says;
use std::collections::HashMap;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::Command;

use crate::util::deb::*;
use rocm_pin_core::deb::{self, BuildOptions, Compression, EntryKind, ReadLimits};
use rocm_pin_core::progress::Silent;

fn opts(c: Compression, threads: u32) -> BuildOptions {
    BuildOptions {
        compression: c,
        level: None,
        threads: Some(threads),
        source_date_epoch: Some(SDE),
        read_ahead: None,
    }
}

fn build(tree: &Path, out: &Path, o: &BuildOptions) -> deb::BuildSummary {
    deb::build_from_dir(tree, out, o, &Silent).unwrap()
}

#[test]
fn dpkg_deb_sees_the_same_entries_for_every_compression() {
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("tree");
    make_tree(&tree, false, 1_600_000_000);
    for c in ALL_COMPRESSIONS {
        let out = tmp.path().join(format!("pkg-{c}.deb"));
        let summary = build(&tree, &out, &opts(c, 2));
        let info = deb::reader::read_deb(&out, &ReadLimits::default()).unwrap();
        assert_eq!(summary.entries, info.entries.len());
        assert_eq!(
            info.members
                .iter()
                .map(|m| m.name.clone())
                .collect::<Vec<_>>(),
            [
                "debian-binary".to_string(),
                format!("control.tar{}", c.suffix()),
                format!("data.tar{}", c.suffix())
            ]
        );
        // dpkg-deb --info accepts it and reports our control.
        let fields = must(Command::new("dpkg-deb").arg("-f").arg(&out));
        let text = String::from_utf8(fields.stdout).unwrap();
        assert_says(
            &text,
            &[
                "Package: rocm-pin-testpkg",
                "Version: 1:2.3~rc1-4",
                "Installed-Size: ",
            ],
        );
        must(Command::new("dpkg-deb").arg("--info").arg(&out));

        // dpkg-deb -c lists exactly our entries (order included).
        let theirs = dpkg_contents(&out);
        let ours = ours_as_listed(&info.entries);
        assert_eq!(theirs, ours, "{c}: dpkg-deb -c vs our reader");
        // Every kind is present, including a hard link and a long name.
        assert!(theirs.iter().any(|l| l.kind == 'h'));
        assert!(theirs.iter().any(|l| l.path.len() > 100));
        assert!(theirs
            .iter()
            .any(|l| l.target.as_ref().is_some_and(|t| t.len() > 100)));
        assert!(theirs.iter().any(|l| l.perms == "rwsr-xr-x"));
        assert!(theirs.iter().all(|l| l.path.starts_with("./")));
    }
}

#[test]
fn dpkg_deb_extract_matches_the_tree_and_our_extraction() {
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("tree");
    make_tree(&tree, false, 1_600_000_000);
    let out = tmp.path().join("pkg.deb");
    build(&tree, &out, &opts(Compression::Xz, 2));

    let theirs = tmp.path().join("theirs");
    let ours = tmp.path().join("ours");
    fs::create_dir(&ours).unwrap();
    must(
        Command::new("dpkg-deb")
            .arg("--extract")
            .arg(&out)
            .arg(&theirs),
    );
    deb::reader::extract_data(&out, &ours, &ReadLimits::default()).unwrap();

    for root in [&theirs, &ours] {
        let list = snapshot(root);
        let src = snapshot_without_debian(&tree);
        assert_eq!(list, src, "extracted {} vs source tree", root.display());
        // Hard links were recreated as hard links.
        let a = fs::metadata(root.join("opt/pkg/lib/libbar.so.7.2.70204")).unwrap();
        let b = fs::metadata(root.join("opt/pkg/lib/libbar.so.7.2.0")).unwrap();
        let c = fs::metadata(root.join("opt/pkg/compat/libbar-copy.so")).unwrap();
        assert_eq!(a.ino(), b.ino());
        assert_eq!(a.ino(), c.ino());
        assert_eq!(a.nlink(), 3);
    }
}

/// (relative path, kind, mode, contents or link target) for every path under `root`.
fn snapshot(root: &Path) -> Vec<(String, char, u32, Vec<u8>)> {
    let mut out = Vec::new();
    for e in walkdir::WalkDir::new(root).sort_by_file_name() {
        let e = e.unwrap();
        let rel = e
            .path()
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let m = fs::symlink_metadata(e.path()).unwrap();
        let (kind, data) = if m.is_dir() {
            ('d', Vec::new())
        } else if m.file_type().is_symlink() {
            (
                'l',
                fs::read_link(e.path())
                    .unwrap()
                    .to_string_lossy()
                    .into_owned()
                    .into_bytes(),
            )
        } else {
            ('-', fs::read(e.path()).unwrap())
        };
        let mode = if kind == 'l' {
            0o777
        } else {
            m.mode() & 0o7777
        };
        // The root directory's mode depends on the temp dir, not on the package.
        if rel.is_empty() {
            continue;
        }
        out.push((rel, kind, mode, data));
    }
    out
}

fn snapshot_without_debian(root: &Path) -> Vec<(String, char, u32, Vec<u8>)> {
    snapshot(root)
        .into_iter()
        .filter(|(p, ..)| p != "DEBIAN" && !p.starts_with("DEBIAN/"))
        .collect()
}

#[test]
fn dpkg_installs_it_into_a_throwaway_root_with_hard_links_sharing_an_inode() {
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("tree");
    make_tree(&tree, false, 1_600_000_000);
    let out = tmp.path().join("pkg.deb");
    build(&tree, &out, &opts(Compression::Xz, 2));

    let root = tmp.path().join("root");
    for d in [
        "var/lib/dpkg/info",
        "var/lib/dpkg/updates",
        "var/lib/dpkg/triggers",
    ] {
        fs::create_dir_all(root.join(d)).unwrap();
    }
    fs::write(root.join("var/lib/dpkg/status"), "").unwrap();
    fs::write(root.join("var/lib/dpkg/available"), "").unwrap();
    // dpkg refuses to run unless ldconfig and start-stop-daemon are on PATH, and a non-root
    // user's PATH on Debian has no sbin directory (/etc/profile): add them, as root's has.
    let path = format!(
        "{}:/usr/sbin:/sbin",
        std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into())
    );
    must(
        Command::new("dpkg")
            .env("PATH", path)
            .arg(format!("--root={}", root.display()))
            .args([
                "--force-not-root",
                "--force-script-chrootless",
                "--log=/dev/null",
                "-i",
            ])
            .arg(&out),
    );
    let a = fs::metadata(root.join("opt/pkg/lib/libbar.so.7.2.70204")).unwrap();
    let b = fs::metadata(root.join("opt/pkg/lib/libbar.so.7.2.0")).unwrap();
    let c = fs::metadata(root.join("opt/pkg/compat/libbar-copy.so")).unwrap();
    assert_eq!((a.ino(), a.nlink()), (b.ino(), 3));
    assert_eq!(a.ino(), c.ino());
    // dpkg's own database agrees with the files: status installed, --verify (its output, not
    // its exit code, which is 0 even on mismatch) reports nothing.
    let status = must(
        Command::new("dpkg-query")
            .arg(format!("--admindir={}/var/lib/dpkg", root.display()))
            .args(["-W", "-f=${Status} ${Version}", "rocm-pin-testpkg"]),
    );
    assert_eq!(
        String::from_utf8_lossy(&status.stdout),
        "install ok installed 1:2.3~rc1-4"
    );
    let verify = must(
        Command::new("dpkg")
            .arg(format!("--root={}", root.display()))
            .args(["--verify", "rocm-pin-testpkg"]),
    );
    assert!(
        verify.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&verify.stdout)
    );
    // The generated md5sums made it into dpkg's database.
    let md5sums =
        fs::read_to_string(root.join("var/lib/dpkg/info/rocm-pin-testpkg.md5sums")).unwrap();
    assert_says(
        &md5sums,
        &[" usr/share/pkg/big.txt\n", " opt/pkg/lib/libbar.so.7.2.0\n"],
    );
}

#[test]
fn rebuild_is_byte_identical_across_mtimes_creation_order_and_threads() {
    let tmp = tempfile::tempdir().unwrap();
    let a = tmp.path().join("a");
    let b = tmp.path().join("b");
    make_tree(&a, false, 1_500_000_000);
    make_tree(&b, true, 1_650_000_000);
    for c in [Compression::Xz, Compression::Zstd, Compression::Gzip] {
        let out_a = tmp.path().join(format!("a-{c}.deb"));
        let out_b = tmp.path().join(format!("b-{c}.deb"));
        let out_a2 = tmp.path().join(format!("a2-{c}.deb"));
        build(&a, &out_a, &opts(c, 1));
        build(&b, &out_b, &opts(c, 2));
        build(&a, &out_a2, &opts(c, 2));
        let bytes = fs::read(&out_a).unwrap();
        assert_eq!(
            bytes,
            fs::read(&out_b).unwrap(),
            "{c}: tree a (1 thread) vs tree b (2 threads)"
        );
        assert_eq!(
            bytes,
            fs::read(&out_a2).unwrap(),
            "{c}: 1 thread vs 2 threads"
        );
        // Every mtime is SOURCE_DATE_EPOCH, not only clamped to it.
        let out = must(Command::new("dpkg-deb").arg("-c").arg(&out_a));
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(
            text.lines().all(|l| l.contains("2023-11-14 22:13")),
            "{text}"
        );
    }
    // xz multi-block: at level 1 (3 MiB blocks) 8 MiB is three blocks, compressed in parallel;
    // the bytes must still not depend on the thread count.
    let big = tmp.path().join("big");
    fs::create_dir_all(big.join("DEBIAN")).unwrap();
    fs::write(big.join("DEBIAN/control"), CONTROL).unwrap();
    let data = lcg_text(8 << 20, 1, 50);
    write_file(&big, "usr/share/big/blob", &data, 0o644);
    let one = tmp.path().join("big1.deb");
    let two = tmp.path().join("big2.deb");
    let o1 = BuildOptions {
        level: Some(1),
        ..opts(Compression::Xz, 1)
    };
    let o2 = BuildOptions {
        level: Some(1),
        ..opts(Compression::Xz, 2)
    };
    build(&big, &one, &o1);
    build(&big, &two, &o2);
    assert_eq!(fs::read(&one).unwrap(), fs::read(&two).unwrap());
}

#[test]
fn lintian_accepts_the_sample_package() {
    let tmp = tempfile::tempdir().unwrap();
    let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/sample-pkg");
    // git does not keep modes beyond the executable bit: copy and normalise like a checkout.
    let tree = tmp.path().join("sample");
    must(Command::new("cp").arg("-a").arg(&sample).arg(&tree));
    let out = tmp.path().join("sample.deb");
    must(
        Command::new(bin())
            .args(["deb", "build", "-q"])
            .arg(&tree)
            .arg(&out)
            .env("SOURCE_DATE_EPOCH", SDE.to_string()),
    );
    // lintian leaves its mldbm-elf-* files in TMPDIR: give it this test's directory.
    let lint = Command::new("lintian")
        .args(["--pedantic", "-I", "-E", "--no-tag-display-limit"])
        .arg(&out)
        .env("TMPDIR", tmp.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&lint.stdout);
    let tags: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("E:") || l.starts_with("W:"))
        .collect();
    assert!(tags.is_empty(), "lintian errors/warnings: {text}");
    // And it says something at all (it really ran on our package).
    assert!(
        lint.status.success(),
        "lintian failed: {text} {}",
        String::from_utf8_lossy(&lint.stderr)
    );
    // inspect's md5sums check passes on it.
    let inspect = must(Command::new(bin()).args(["deb", "inspect"]).arg(&out));
    let report = String::from_utf8_lossy(&inspect.stdout);
    assert_says(&report, &["0 mismatched"]);
}

#[test]
fn md5sums_and_installed_size_are_generated_like_the_debian_tools() {
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("tree");
    make_tree(&tree, false, 1_600_000_000);
    let out = tmp.path().join("pkg.deb");
    let summary = build(&tree, &out, &opts(Compression::Gzip, 1));
    let info = deb::reader::read_deb(&out, &ReadLimits::default()).unwrap();
    let md5sums = String::from_utf8(info.control_file("md5sums").unwrap().to_vec()).unwrap();
    // Every regular file and hard link, each checked against md5sum(1).
    let regular: Vec<&deb::Entry> = info
        .entries
        .iter()
        .filter(|e| matches!(e.kind, EntryKind::File | EntryKind::Hardlink(_)))
        .collect();
    assert_eq!(md5sums.lines().count(), regular.len());
    for line in md5sums.lines() {
        let (sum, path) = line.split_once("  ").unwrap();
        let real = must(Command::new("md5sum").arg(tree.join(path)));
        assert!(
            String::from_utf8_lossy(&real.stdout).starts_with(sum),
            "{path}"
        );
    }
    // Installed-Size: dpkg-gencontrol's rule (files and symlinks by size in KiB rounded up,
    // each inode once; 1 per other entry), computed independently with find(1).
    let listing = must(
        Command::new("find")
            .arg(".")
            .args([
                "-path",
                "./DEBIAN",
                "-prune",
                "-o",
                "-printf",
                "%y %s %i\\n",
            ])
            .current_dir(&tree),
    );
    let mut seen = std::collections::HashSet::new();
    let mut kib = 0u64;
    for l in String::from_utf8(listing.stdout).unwrap().lines() {
        let mut f = l.split(' ');
        let (t, s, i) = (f.next().unwrap(), f.next().unwrap(), f.next().unwrap());
        let s: u64 = s.parse().unwrap();
        match t {
            "f" => {
                if seen.insert(i.to_string()) {
                    kib += s.div_ceil(1024);
                }
            }
            "l" => kib += s.div_ceil(1024),
            _ => kib += 1,
        }
    }
    assert_eq!(summary.installed_size_kib, kib);
    assert_eq!(
        info.control.get("Installed-Size"),
        Some(kib.to_string().as_str())
    );
}

#[test]
fn deb_build_refuses_bad_control_and_leaves_nothing_behind() {
    let cases: Vec<(&str, Step, &str)> = vec![
        (
            "missing Maintainer",
            Box::new(|t: &Path| {
                fs::write(
                    t.join("DEBIAN/control"),
                    "Package: pk\nVersion: 1.0\nArchitecture: all\nDescription: d\n",
                )
                .unwrap()
            }),
            "Maintainer",
        ),
        (
            "missing Description",
            Box::new(|t: &Path| {
                fs::write(
                    t.join("DEBIAN/control"),
                    "Package: pk\nVersion: 1.0\nArchitecture: all\nMaintainer: m <m@x>\n",
                )
                .unwrap()
            }),
            "Description",
        ),
        (
            "invalid version",
            Box::new(|t: &Path| {
                fs::write(
                    t.join("DEBIAN/control"),
                    "Package: pk\nVersion: 1.0 beta\nArchitecture: all\nMaintainer: m <m@x>\nDescription: d\n",
                )
                .unwrap()
            }),
            "version",
        ),
        (
            "two paragraphs",
            Box::new(|t: &Path| {
                fs::write(
                    t.join("DEBIAN/control"),
                    format!("{CONTROL}\nPackage: injected\n"),
                )
                .unwrap()
            }),
            "control",
        ),
        (
            "maintainer script not executable",
            Box::new(|t: &Path| write_file(t, "DEBIAN/postinst", b"#!/bin/sh\n", 0o644)),
            "postinst",
        ),
        (
            "conffile not in the package",
            Box::new(|t: &Path| write_file(t, "DEBIAN/conffiles", b"/etc/missing.conf\n", 0o644)),
            "/etc/missing.conf",
        ),
        (
            "no DEBIAN directory",
            Box::new(|t: &Path| fs::remove_dir_all(t.join("DEBIAN")).unwrap()),
            "DEBIAN",
        ),
    ];
    for (what, break_it, needle) in cases {
        let tmp = tempfile::tempdir().unwrap();
        let tree = tmp.path().join("tree");
        make_tree(&tree, false, 1_600_000_000);
        break_it(&tree);
        let outdir = tmp.path().join("out");
        fs::create_dir(&outdir).unwrap();
        let out = outdir.join("p.deb");
        let res = Command::new(bin())
            .args(["deb", "build", "-q"])
            .arg(&tree)
            .arg(&out)
            .output()
            .unwrap();
        rocm_pin_testkit::assert_refused(&res, what, &[needle]);
        assert_eq!(
            fs::read_dir(&outdir).unwrap().count(),
            0,
            "{what}: something was left in the output directory"
        );
    }
}

#[test]
fn inspect_reports_md5_mismatch_with_exit_1() {
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("tree");
    make_tree(&tree, false, 1_600_000_000);
    // A hand-written md5sums with one wrong line is kept as is (not regenerated).
    write_file(
        &tree,
        "DEBIAN/md5sums",
        b"00000000000000000000000000000000  usr/bin/tool\n",
        0o644,
    );
    let out = tmp.path().join("pkg.deb");
    build(&tree, &out, &opts(Compression::Xz, 1));
    let res = Command::new(bin())
        .args(["deb", "inspect", "--json"])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(res.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&res.stdout).unwrap();
    assert_eq!(v["md5sums"]["mismatches"][0], "./usr/bin/tool");
    let err = String::from_utf8_lossy(&res.stderr);
    assert_says(&err, &["md5sums check failed"]);
}

#[test]
fn inspect_lists_entries_like_dpkg_deb() {
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("tree");
    make_tree(&tree, false, 1_600_000_000);
    let out = tmp.path().join("pkg.deb");
    build(&tree, &out, &opts(Compression::Zstd, 2));
    let res = must(
        Command::new(bin())
            .args(["deb", "inspect", "--json"])
            .arg(&out),
    );
    let v: serde_json::Value = serde_json::from_slice(&res.stdout).unwrap();
    let entries: Vec<deb::Entry> = v["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| deb::Entry {
            path: e["path"].as_str().unwrap().to_string(),
            kind: match e["kind"]["type"].as_str().unwrap() {
                "file" => EntryKind::File,
                "dir" => EntryKind::Dir,
                "symlink" => EntryKind::Symlink(e["kind"]["target"].as_str().unwrap().into()),
                "hardlink" => EntryKind::Hardlink(e["kind"]["target"].as_str().unwrap().into()),
                other => panic!("unknown kind {other}"),
            },
            mode: e["mode"].as_u64().unwrap() as u32,
            size: e["size"].as_u64().unwrap(),
        })
        .collect();
    assert_eq!(ours_as_listed(&entries), dpkg_contents(&out));
    let members: HashMap<String, String> = v["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["name"].as_str().unwrap().to_string(),
                m["compression"].as_str().unwrap_or("-").to_string(),
            )
        })
        .collect();
    assert_eq!(members["data.tar.zst"], "zstd");
    assert_eq!(members["control.tar.zst"], "zstd");
}

/// The content model of `tree` as a caller that knows its files would give it (no tree walk in
/// the writer): entries in reverse order, bytes in memory, parent directories left out unless
/// empty or not 0755, and every hard link pointing at the LAST path of its inode.
fn content_of(tree: &Path) -> deb::PackageContent {
    use std::os::unix::fs::PermissionsExt;
    let mut payload = vec![];
    let mut by_inode: HashMap<u64, Vec<String>> = HashMap::new();
    let walk = walkdir::WalkDir::new(tree).min_depth(1).sort_by_file_name();
    for e in walk.into_iter().map(Result::unwrap) {
        let rel = e
            .path()
            .strip_prefix(tree)
            .unwrap()
            .to_str()
            .unwrap()
            .to_string();
        if rel.starts_with("DEBIAN") {
            continue;
        }
        let meta = e.path().symlink_metadata().unwrap();
        let mode = meta.permissions().mode() & 0o7777;
        if meta.is_dir() {
            let empty = fs::read_dir(e.path()).unwrap().next().is_none();
            if empty || mode != 0o755 {
                payload.push(deb::PayloadEntry::dir(format!("/{rel}"), mode));
            }
        } else if meta.is_symlink() {
            let target = fs::read_link(e.path()).unwrap();
            payload.push(deb::PayloadEntry::symlink(rel, target.to_str().unwrap()));
        } else {
            by_inode.entry(meta.ino()).or_default().push(rel.clone());
            let bytes = fs::read(e.path()).unwrap();
            payload.push(deb::PayloadEntry::file(
                rel,
                deb::FileData::Bytes(bytes),
                mode,
            ));
        }
    }
    for paths in by_inode.values().filter(|p| p.len() > 1) {
        let last = paths.last().unwrap();
        for p in &paths[..paths.len() - 1] {
            let at = payload.iter().position(|e| &e.path == p).unwrap();
            payload[at] = deb::PayloadEntry::hard_link(p.clone(), format!("/{last}"));
        }
    }
    payload.reverse();
    let control =
        deb::Paragraph::parse(&fs::read_to_string(tree.join("DEBIAN/control")).unwrap()).unwrap();
    deb::PackageContent {
        control,
        control_dir_mode: 0o755,
        control_files: vec![],
        conffiles: vec![],
        payload,
    }
}

#[test]
fn a_content_model_streams_to_the_same_bytes_as_its_tree() {
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("tree");
    make_tree(&tree, false, SDE as i64);
    fs::set_permissions(
        tree.join("DEBIAN"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    for c in [Compression::Xz, Compression::Zstd] {
        let from_tree = tmp.path().join("tree.deb");
        let from_content = tmp.path().join("content.deb");
        build(&tree, &from_tree, &opts(c, 2));
        deb::build_package(&content_of(&tree), &from_content, &opts(c, 2), &Silent).unwrap();
        // dpkg-deb's view first (a readable difference), then the bytes.
        assert_eq!(dpkg_contents(&from_content), dpkg_contents(&from_tree));
        assert!(
            fs::read(&from_tree).unwrap() == fs::read(&from_content).unwrap(),
            "{c:?}: the content model and the tree give different bytes"
        );
    }
}

#[test]
fn a_content_model_with_a_bad_hard_link_or_path_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("x.deb");
    let control = deb::Paragraph::parse(CONTROL).unwrap();
    let refused = |payload: Vec<deb::PayloadEntry>| {
        let content = deb::PackageContent {
            control: control.clone(),
            control_dir_mode: 0o755,
            control_files: vec![],
            conffiles: vec![],
            payload,
        };
        let e =
            deb::build_package(&content, &out, &opts(Compression::Gzip, 1), &Silent).unwrap_err();
        assert!(!out.exists(), "nothing is left at the output");
        format!("{e:#}")
    };
    let file = |p: &str| deb::PayloadEntry::file(p, deb::FileData::Bytes(b"x".to_vec()), 0o644);
    let e = refused(vec![deb::PayloadEntry::hard_link("a", "missing")]);
    assert_says(
        &e,
        &["hard link a points at missing, which is not in the payload"],
    );
    let e = refused(vec![
        deb::PayloadEntry::hard_link("a", "b"),
        deb::PayloadEntry::hard_link("b", "a"),
    ]);
    assert_says(&e, &["cycle"]);
    let e = refused(vec![
        deb::PayloadEntry::dir("d", 0o755),
        deb::PayloadEntry::hard_link("a", "d"),
    ]);
    assert_says(&e, &["which is not a regular file"]);
    let e = refused(vec![file("usr/../etc/passwd")]);
    assert_says(&e, &["not a plain relative path"]);
    let e = refused(vec![file("a"), file("/a")]);
    assert_says(&e, &["appears twice"]);
}
