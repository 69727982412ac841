//! Unit tests of verify's provenance checks (patch series, skipped backport check); a file of
//! their own so src/verify.rs stays small for the other changes made to it.

use super::libraries::missing_backport_symbol;
use super::marker::check_patches_field;
use super::*;

fn marker(skipped: bool, patches: &[(&str, &str)]) -> rocm::Marker {
    rocm::Marker {
        commit: "c".repeat(40),
        commit_time: 1,
        suffix: "pinned".into(),
        prefix: "/opt/rocm-6.3.0".into(),
        replaced: vec![],
        libraries: vec![],
        files: BTreeMap::new(),
        tool_version: "test".into(),
        patches: patches
            .iter()
            .map(|(n, h)| crate::rocm::PatchRecord {
                name: n.to_string(),
                sha256: h.to_string(),
            })
            .collect(),
        backport_check_skipped: skipped,
        missing_symbols: Default::default(),
        source: None,
    }
}

#[test]
fn a_missing_backport_symbol_passes_only_when_recorded_and_accepted() {
    let accept = VerifyOptions {
        accept_skipped_backport_check: true,
        ..VerifyOptions::default()
    };
    let strict = VerifyOptions::default();
    assert!(!missing_backport_symbol(&strict, &marker(false, &[])).0);
    assert!(!missing_backport_symbol(&accept, &marker(false, &[])).0);
    let (ok, detail) = missing_backport_symbol(&strict, &marker(true, &[]));
    assert!(
        !ok && detail.contains("--accept-skipped-backport-check"),
        "{detail}"
    );
    assert!(missing_backport_symbol(&accept, &marker(true, &[])).0);
}

#[test]
fn the_patch_field_must_match_the_marker() {
    let m = marker(false, &[("0001-a.patch", "aa"), ("0002-b.patch", "bb")]);
    let entry = |field: Option<&str>| StatusEntry {
        package: "hsa-rocr-pinned".into(),
        version: "1".into(),
        architecture: "amd64".into(),
        status: "install ok installed".into(),
        protected: true,
        provides: String::new(),
        extra: field
            .map(|f| BTreeMap::from([(rocm::PATCHES_FIELD.to_string(), f.to_string())]))
            .unwrap_or_default(),
        conffiles: vec![],
    };
    let run = |e: StatusEntry| {
        let mut c = Checks(Vec::new());
        check_patches_field(&e, &m, &mut c);
        c.0
    };
    let same = run(entry(Some("0001-a.patch aa, 0002-b.patch bb")));
    assert!(same.len() == 1 && same[0].ok, "{same:?}");
    let other = run(entry(Some("0001-a.patch aa")));
    assert!(other.len() == 1 && !other[0].ok, "{other:?}");
    assert!(!run(entry(None))[0].ok);
    let none = marker(false, &[]);
    let mut c = Checks(Vec::new());
    check_patches_field(&entry(None), &none, &mut c);
    assert!(c.0.is_empty(), "no series, no check");
}
