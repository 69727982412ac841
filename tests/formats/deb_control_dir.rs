//! `deb build` judges DEBIAN/ the way `dpkg-deb --build` does: the control directory's
//! permissions and the lines of DEBIAN/conffiles. Each case runs both tools on the same tree;
//! where dpkg-deb refuses, we refuse (exit 2, the file named, nothing written); where it builds,
//! we build. One deliberate difference: a duplicated conffiles line only gets a warning from
//! dpkg-deb, and we refuse it.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

use crate::util::deb::*;

/// A small tree with two candidate conffiles; `debian_mode` is set with chmod (so setgid and
/// sticky bits are exactly as given, not inherited).
fn tree(root: &Path, debian_mode: u32, conffiles: Option<&[u8]>) {
    write_file(root, "DEBIAN/control", CONTROL.as_bytes(), 0o644);
    write_file(root, "etc/pkg/a.conf", b"a=1\n", 0o644);
    write_file(root, "etc/pkg/b.conf", b"b=1\n", 0o644);
    if let Some(text) = conffiles {
        write_file(root, "DEBIAN/conffiles", text, 0o644);
    }
    fs::set_permissions(root.join("DEBIAN"), fs::Permissions::from_mode(debian_mode)).unwrap();
    assert_eq!(
        fs::metadata(root.join("DEBIAN"))
            .unwrap()
            .permissions()
            .mode()
            & 0o7777,
        debian_mode
    );
}

struct Both {
    dpkg: Output,
    ours: Output,
    ours_dir_entries: usize,
}

fn build_both(debian_mode: u32, conffiles: Option<&[u8]>) -> Both {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("tree");
    tree(&root, debian_mode, conffiles);
    let dpkg = Command::new("dpkg-deb")
        .args(["--root-owner-group", "-Zxz", "--build"])
        .arg(&root)
        .arg(tmp.path().join("theirs.deb"))
        .output()
        .expect("dpkg-deb is installed (apt-get install dpkg-dev)");
    let outdir = tmp.path().join("out");
    fs::create_dir(&outdir).unwrap();
    let ours = Command::new(bin())
        .args(["deb", "build", "-q"])
        .arg(&root)
        .arg(outdir.join("ours.deb"))
        .output()
        .unwrap();
    Both {
        dpkg,
        ours,
        ours_dir_entries: fs::read_dir(&outdir).unwrap().count(),
    }
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Both refuse; ours names `needle` and writes nothing.
fn assert_both_refuse(what: &str, b: &Both, dpkg_says: &str, needle: &str) {
    assert!(
        !b.dpkg.status.success(),
        "{what}: dpkg-deb built it: {}",
        stderr(&b.dpkg)
    );
    assert!(
        stderr(&b.dpkg).contains(dpkg_says),
        "{what}: dpkg-deb said {}",
        stderr(&b.dpkg)
    );
    assert_eq!(b.ours.status.code(), Some(2), "{what}: {}", stderr(&b.ours));
    assert!(
        stderr(&b.ours).contains(needle),
        "{what}: ours said {}",
        stderr(&b.ours)
    );
    assert!(!stderr(&b.ours).contains("panicked"), "{what}");
    assert_eq!(b.ours_dir_entries, 0, "{what}: something was written");
}

fn assert_both_build(what: &str, b: &Both) {
    assert!(
        b.dpkg.status.success(),
        "{what}: dpkg-deb: {}",
        stderr(&b.dpkg)
    );
    assert!(b.ours.status.success(), "{what}: ours: {}", stderr(&b.ours));
    assert_eq!(b.ours_dir_entries, 1, "{what}");
}

#[test]
fn control_directory_permissions_follow_dpkg_deb() {
    for mode in [0o755, 0o775] {
        assert_both_build(&format!("DEBIAN {mode:o}"), &build_both(mode, None));
    }
    for mode in [
        0o700, 0o750, 0o757, 0o777, 0o745, 0o765, 0o2755, 0o1755, 0o4755,
    ] {
        assert_both_refuse(
            &format!("DEBIAN {mode:o}"),
            &build_both(mode, None),
            "control directory has bad permissions",
            &format!("bad permissions {mode:03o}"),
        );
    }
}

#[test]
fn conffiles_lines_follow_dpkg_deb() {
    let accepted: &[(&str, &[u8])] = &[
        ("one conffile", b"/etc/pkg/a.conf\n"),
        ("two conffiles", b"/etc/pkg/a.conf\n/etc/pkg/b.conf\n"),
        (
            "remove-on-upgrade of a file not shipped",
            b"/etc/pkg/a.conf\nremove-on-upgrade /etc/pkg/old.conf\n",
        ),
        ("empty file", b""),
    ];
    for (what, text) in accepted {
        assert_both_build(what, &build_both(0o755, Some(text)));
    }
    let refused: &[(&str, &[u8], &str, &str)] = &[
        (
            "not shipped",
            b"/etc/pkg/missing.conf\n",
            "does not appear in package",
            "/etc/pkg/missing.conf does not appear",
        ),
        (
            "relative",
            b"etc/pkg/a.conf\n",
            "is not an absolute pathname",
            "not an absolute path",
        ),
        (
            "empty line",
            b"/etc/pkg/a.conf\n\n",
            "is not an absolute pathname",
            "not an absolute path",
        ),
        (
            "no final newline",
            b"/etc/pkg/a.conf",
            "missing final newline",
            "no final newline",
        ),
        (
            "leading space",
            b" /etc/pkg/a.conf\n",
            "has leading white spaces",
            "leading white space",
        ),
        (
            "trailing space",
            b"/etc/pkg/a.conf \n",
            "does not appear in package",
            "trailing white space",
        ),
        (
            "CRLF",
            b"/etc/pkg/a.conf\r\n",
            "does not appear in package",
            "trailing white space",
        ),
        (
            "unknown flag",
            b"keep /etc/pkg/a.conf\n",
            "unknown flag 'keep'",
            "unknown flag \"keep\"",
        ),
        (
            "remove-on-upgrade of a shipped file",
            b"remove-on-upgrade /etc/pkg/a.conf\n",
            "is present but is requested to be removed",
            "flagged remove-on-upgrade",
        ),
    ];
    for (what, text, dpkg_says, needle) in refused {
        assert_both_refuse(what, &build_both(0o755, Some(text)), dpkg_says, needle);
    }
}

/// dpkg-deb builds a package with a repeated conffiles line and only warns; we refuse it (a
/// repeated line is a mistake in the tree, and the warning scrolls by unseen).
#[test]
fn duplicated_conffile_is_refused_where_dpkg_deb_warns() {
    let b = build_both(
        0o755,
        Some(b"/etc/pkg/a.conf\n/etc/pkg/b.conf\n/etc/pkg/a.conf\n"),
    );
    assert!(b.dpkg.status.success(), "{}", stderr(&b.dpkg));
    assert!(
        stderr(&b.dpkg).contains("conffile name '/etc/pkg/a.conf' is duplicated"),
        "dpkg-deb said {}",
        stderr(&b.dpkg)
    );
    assert_eq!(b.ours.status.code(), Some(2), "{}", stderr(&b.ours));
    let said = stderr(&b.ours);
    assert!(
        said.contains("DEBIAN/conffiles") && said.contains("/etc/pkg/a.conf is listed twice"),
        "{}",
        said
    );
    assert_eq!(b.ours_dir_entries, 0);
}
