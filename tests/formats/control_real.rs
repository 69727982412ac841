//! deb822 parsing against real files written by dpkg and apt on this machine.

use rocm_pin_testkit::assert_success;
use std::process::Command;
use std::time::Instant;

use rocm_pin_core::deb::control::{format_relations, parse_relations, Paragraph};

const RELATION_FIELDS: [&str; 9] = [
    "Depends",
    "Pre-Depends",
    "Recommends",
    "Suggests",
    "Enhances",
    "Conflicts",
    "Breaks",
    "Replaces",
    "Provides",
];

/// Every relationship field of every paragraph parses, and its canonical form parses back to
/// the same relations. Returns how many fields were checked.
fn check_relations(paragraphs: &[Paragraph]) -> usize {
    let mut checked = 0;
    for p in paragraphs {
        for field in RELATION_FIELDS {
            let Some(value) = p.get(field) else { continue };
            let rels = parse_relations(value)
                .unwrap_or_else(|e| panic!("{} {field}: {e}", p.get("Package").unwrap_or("?")));
            let again = parse_relations(&format_relations(&rels)).expect("canonical form parses");
            assert_eq!(again, rels, "{field}: {value}");
            checked += 1;
        }
    }
    checked
}

#[test]
fn dpkg_status_round_trips_byte_for_byte() {
    let path = "/var/lib/dpkg/status";
    let text = std::fs::read_to_string(path).expect("read /var/lib/dpkg/status");
    let start = Instant::now();
    let paragraphs = Paragraph::parse_many(&text).expect("dpkg status parses");
    let elapsed = start.elapsed();
    assert!(
        paragraphs.len() > 50,
        "a real system has packages installed"
    );
    // dpkg writes every paragraph followed by one blank line.
    let rebuilt: String = paragraphs.iter().map(|p| format!("{p}\n")).collect();
    if rebuilt != text {
        let at = rebuilt
            .bytes()
            .zip(text.bytes())
            .position(|(a, b)| a != b)
            .unwrap_or(rebuilt.len().min(text.len()));
        panic!(
            "round trip differs at byte {at}: ours {:?} / dpkg {:?}",
            &rebuilt[at.saturating_sub(40)..(at + 40).min(rebuilt.len())],
            &text[at.saturating_sub(40)..(at + 40).min(text.len())]
        );
    }
    for p in &paragraphs {
        // Each paragraph on its own parses to itself too.
        assert_eq!(
            Paragraph::parse(&p.to_string()).expect("single paragraph"),
            *p
        );
        assert!(p.get("package").is_some() && p.get("STATUS").is_some());
    }
    let relations = check_relations(&paragraphs);
    eprintln!(
        "status: {} paragraphs, {} bytes parsed in {elapsed:?}, {relations} relationship fields",
        paragraphs.len(),
        text.len()
    );
}

#[test]
fn apt_cache_show_output_parses() {
    let out = Command::new("apt-cache")
        .args(["show", "dpkg", "apt", "libc6"])
        .output()
        .expect("apt-cache runs");
    assert_success(&out, "apt-cache show failed (run `apt-get update` first)");
    let text = String::from_utf8(out.stdout).expect("utf-8");
    let paragraphs = Paragraph::parse_many(&text).expect("apt-cache show output parses");
    // One paragraph per known version of each package, at least one each. Which versions they
    // are depends on the archive and on what is installed today: a version that is installed but
    // no longer published (a point release moved on) comes from the dpkg status file and has no
    // Filename or hashes. So hashes are checked exactly where the paragraph says it comes from an
    // archive, and the test holds whatever the archive publishes on the day it runs.
    for package in ["dpkg", "apt", "libc6"] {
        assert!(
            paragraphs.iter().any(|p| p.get("Package") == Some(package)),
            "no paragraph for {package}"
        );
    }
    for p in &paragraphs {
        p.validate_binary()
            .unwrap_or_else(|e| panic!("{:?}: {e}", p.get("Package")));
        if p.get("Filename").is_some() {
            assert!(
                p.get("SHA256").is_some_and(|s| s.len() == 64),
                "{:?} {:?} comes from an archive but has no SHA256",
                p.get("Package"),
                p.get("Version")
            );
        }
    }
    let rebuilt: String = paragraphs.iter().map(|p| format!("{p}\n")).collect();
    assert_eq!(rebuilt, text, "apt-cache show output round-trips");
    check_relations(&paragraphs);
}

/// The whole apt cache (tens of thousands of paragraphs, over a million lines): linear time and
/// every relationship field in the archive parses.
#[test]
fn apt_cache_dumpavail_parses_quickly() {
    let out = Command::new("apt-cache")
        .arg("dumpavail")
        .output()
        .expect("apt-cache runs");
    assert!(out.status.success(), "apt-cache dumpavail failed");
    let text = String::from_utf8(out.stdout).expect("utf-8");
    assert!(
        text.len() > 1_000_000,
        "the apt cache is nearly empty: run `apt-get update` first (see scripts/test-setup)"
    );
    let start = Instant::now();
    let paragraphs = Paragraph::parse_many(&text).expect("dumpavail parses");
    let elapsed = start.elapsed();
    let relations = check_relations(&paragraphs);
    eprintln!(
        "dumpavail: {} paragraphs, {} MB in {elapsed:?}, {relations} relationship fields",
        paragraphs.len(),
        text.len() >> 20
    );
    let rebuilt: String = paragraphs.iter().map(|p| format!("{p}\n")).collect();
    assert!(
        rebuilt == text,
        "dumpavail output round-trips byte-for-byte"
    );
}
