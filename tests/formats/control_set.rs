//! `Paragraph::set` can never change the paragraph structure: property tests, and dpkg-deb as
//! the judge of what we serialize.

use rocm_pin_testkit::assert_success;
use std::process::Command;

use proptest::prelude::*;
use rocm_pin_core::deb::control::Paragraph;

fn base() -> Paragraph {
    Paragraph::parse(
        "Package: inject-test\nVersion: 1.0-1\nArchitecture: all\nMaintainer: T <t@example.invalid>\nDescription: test\n",
    )
    .expect("base paragraph")
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 2000,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// Whatever set() accepts reads back as exactly that value, and no other field appears.
    #[test]
    fn set_then_parse_returns_the_value(
        name in "[A-Za-z][A-Za-z0-9-]{0,10}",
        value in "[ -~\t\n\r]{0,40}",
    ) {
        let mut p = base();
        let before = p.clone();
        match p.set(&name, &value) {
            Ok(()) => {
                let again = Paragraph::parse(&p.to_string()).expect("our output parses");
                prop_assert_eq!(again.get(&name), Some(value.as_str()));
                prop_assert_eq!(again.fields().count(), p.fields().count());
                prop_assert_eq!(again, p);
            }
            Err(_) => prop_assert_eq!(p, before),
        }
    }

    /// Values shaped like real multi-line fields are accepted and round-trip.
    #[test]
    fn multi_line_values_round_trip(
        first in "[!-~][ -~]{0,20}[!-~]",
        lines in prop::collection::vec("[ \t]([!-~][ -~]{0,20}[!-~]|\\.)", 0..5),
    ) {
        let value = std::iter::once(first).chain(lines).collect::<Vec<_>>().join("\n");
        let mut p = base();
        p.set("Description", &value).expect("well-formed value");
        let again = Paragraph::parse(&p.to_string()).expect("parses");
        prop_assert_eq!(again.get("Description"), Some(value.as_str()));
    }

    /// Arbitrary text never panics the parser.
    #[test]
    fn parse_never_panics(text in "\\PC{0,200}") {
        let _ = Paragraph::parse_many(&text);
        let _ = Paragraph::parse(&text);
    }
}

#[test]
fn injection_attempts_are_refused() {
    let attacks = [
        "x\nPackage: evil",
        "x\nStatus: install ok installed",
        "x\n\nPackage: evil\nVersion: 1",
        "x\n \nPackage: evil",
        "x\n\t\nPackage: evil",
        "x\r\nPackage: evil",
        "x\n",
        "x\n ",
    ];
    for attack in attacks {
        let mut p = base();
        assert!(p.set("Description", attack).is_err(), "accepted {attack:?}");
        assert_eq!(p, base(), "refused set changed nothing");
    }
    let mut p = base();
    for name in ["Pack age", "Package:", "", "#x", "-x", "Nâme", "a\nb"] {
        assert!(p.set(name, "v").is_err(), "accepted field name {name:?}");
    }
}

/// dpkg-deb reads our serialized control back with the same field values, including a
/// Description with " ." paragraph separators and a value whose first line is empty.
#[test]
fn dpkg_deb_reads_what_we_write() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("pkg");
    std::fs::create_dir_all(root.join("DEBIAN")).expect("mkdir");
    let mut p = base();
    let description = "synopsis line\n First paragraph.\n .\n Second paragraph.\n  verbatim line";
    p.set("Description", description).expect("set");
    p.set("Depends", "libc6 (>= 2.34),\n libfoo1 | libbar2")
        .expect("set");
    p.set("X-Custom-Field", "value with: colon").expect("set");
    std::fs::write(root.join("DEBIAN/control"), p.to_string()).expect("write control");
    let deb = dir.path().join("t.deb");
    let build = Command::new("dpkg-deb")
        .args(["--root-owner-group", "--build"])
        .arg(&root)
        .arg(&deb)
        .output()
        .expect("dpkg-deb runs");
    assert_success(&build, "dpkg-deb --build refused our control");
    let info = Command::new("dpkg-deb")
        .arg("--field")
        .arg(&deb)
        .output()
        .expect("dpkg-deb --field");
    assert!(info.status.success());
    let text = String::from_utf8(info.stdout).expect("utf-8");
    let back = Paragraph::parse(&text).expect("dpkg-deb output parses");
    assert_eq!(back.get("Description"), Some(description));
    assert_eq!(back.get("X-Custom-Field"), Some("value with: colon"));
    assert_eq!(back.get("Package"), Some("inject-test"));
    assert_eq!(back.fields().count(), p.fields().count());
}
