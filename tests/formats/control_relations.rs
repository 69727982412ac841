//! Relationship fields: what `parse_relations` accepts, with `dpkg-deb --build` as the judge of
//! what a binary package's Depends may hold.

use std::process::Command;

use rocm_pin_core::deb::control::{format_relations, parse_relations};

/// dpkg-deb's verdict on `Depends: <value>`: (accepted, stderr).
fn dpkg_deb_accepts(value: &str) -> (bool, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("p");
    std::fs::create_dir_all(root.join("DEBIAN")).unwrap();
    std::fs::write(
        root.join("DEBIAN/control"),
        format!(
            "Package: relation-probe\nVersion: 1\nArchitecture: all\nMaintainer: T <t@example.invalid>\n\
             Depends: {value}\nDescription: probe\n"
        ),
    )
    .unwrap();
    let out = Command::new("dpkg-deb")
        .args(["--root-owner-group", "--build"])
        .arg(&root)
        .arg(dir.path().join("p.deb"))
        .output()
        .expect("dpkg-deb runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn agrees_with_dpkg_deb_on_binary_relations() {
    let cases = [
        "aa",
        "aa (>= 1.0), bb:any | cc (= 2)",
        "aa(>=1)",
        "aa ( >= 1:2.3~rc1-4 )",
        "aa (<< 1), bb (<= 1), cc (= 1), dd (>= 1), ee (>> 1)",
        "aa:amd64 (>= 1) | bb:native",
        "libc6 (>= 2.34),\n libfoo1 | libbar2",
        "aa,",
        "aa, , bb",
        "aa |",
        "| aa",
        "aa:",
        "aa (>= x1)",
        "aa (= 1:)",
        "aa (>= 1",
        "aa bb",
        "aa (~ 1)",
        "aa [amd64]",
        "aa (>= 1) [amd64]",
        "aa <!nocheck>",
        "aa (>= 1) (<< 2)",
    ];
    let mut disagreements = Vec::new();
    for case in cases {
        let ours = parse_relations(case);
        let (theirs, stderr) = dpkg_deb_accepts(case);
        if ours.is_ok() != theirs {
            disagreements.push(format!(
                "{case:?}: ours {ours:?}, dpkg-deb accepted={theirs} {stderr}"
            ));
        }
        if let Ok(rels) = ours {
            // The canonical form is accepted by dpkg-deb too and reads back the same.
            let canonical = format_relations(&rels);
            assert!(dpkg_deb_accepts(&canonical).0, "{canonical:?}");
            assert_eq!(parse_relations(&canonical).unwrap(), rels);
        }
    }
    assert!(disagreements.is_empty(), "{}", disagreements.join("\n"));
}

/// The obsolete `<` and `>`: dpkg-deb accepts them with a warning and reads them as `<=` and
/// `>=`; so do we (and we write the modern spelling).
#[test]
fn obsolete_operators_read_as_dpkg_reads_them() {
    for (old, modern) in [("aa (< 1)", "aa (<= 1)"), ("aa (> 1)", "aa (>= 1)")] {
        let (accepted, stderr) = dpkg_deb_accepts(old);
        assert!(accepted, "{old}: {stderr}");
        assert!(stderr.contains("is obsolete"), "{old}: {stderr}");
        assert_eq!(format_relations(&parse_relations(old).unwrap()), modern);
    }
}

/// Where we are deliberately stricter than dpkg-deb: package and architecture names follow
/// Debian policy (lower case, at least two characters); dpkg-deb lets these through.
#[test]
fn stricter_than_dpkg_deb_on_names() {
    for case in ["AA", "a", "aa:Amd64"] {
        assert!(dpkg_deb_accepts(case).0, "{case}: dpkg-deb accepts it");
        assert!(parse_relations(case).is_err(), "{case}: we refuse it");
    }
}
