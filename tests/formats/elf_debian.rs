//! rocm_pin_core::elf on Debian's real ROCm runtime packages (downloaded by
//! scripts/setup.d/10-debian-debs.sh), judged by readelf for every shared object in them.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util::elf::*;

/// Every .deb in `dir` (the `debian-debs` test input), both runtime families among them.
fn debian_debs(dir: &Path) -> Vec<PathBuf> {
    let mut debs: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| {
            panic!(
                "{}: {e}: run scripts/test-setup (it downloads Debian's ROCm runtime .debs)",
                dir.display()
            )
        })
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "deb"))
        .collect();
    debs.sort();
    for family in ["libhsa-runtime64-1", "libamdhip64-"] {
        assert!(
            debs.iter().any(|d| d
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(family))),
            "no {family}*.deb in {}: run scripts/test-setup",
            dir.display()
        );
    }
    debs
}

#[test]
fn every_shared_object_in_debian_rocm_debs_matches_readelf() {
    let mut checked = 0;
    let mut hsa_seen = false;
    let dir = rocm_pin_testkit::needs_setup!("debian-debs");
    for deb in debian_debs(&dir) {
        let root = tempfile::tempdir().unwrap();
        must_stdout(
            Command::new("dpkg-deb")
                .arg("-x")
                .arg(&deb)
                .arg(root.path()),
        );
        for entry in walkdir::WalkDir::new(root.path()) {
            let entry = entry.unwrap();
            if !entry.file_type().is_file() || !entry.file_name().to_string_lossy().contains(".so")
            {
                continue;
            }
            let path = entry.path();
            let head = std::fs::read(path).unwrap();
            if !rocm_pin_core::elf::is_elf(&head) {
                continue;
            }
            let info = assert_matches_readelf(path);
            assert!(info.shared_object, "{}", path.display());
            assert!(
                !info.exports.is_empty(),
                "{} exports nothing",
                path.display()
            );
            if info.soname.as_deref() == Some("libhsa-runtime64.so.1") {
                hsa_seen = true;
                // Debian's 5.2 runtime predates the backport symbol but exports the HSA API.
                assert!(info.export("hsa_init").is_some());
            }
            // A stripped copy (debug info and unneeded symbols) keeps every dynamic fact.
            let stripped = root.path().join("stripped.so");
            must_stdout(
                Command::new("strip")
                    .arg("--strip-unneeded")
                    .arg("-o")
                    .arg(&stripped)
                    .arg(path),
            );
            let again = rocm_pin_core::elf::read_elf(&stripped).unwrap();
            assert_eq!(again, info, "strip changed {}", path.display());
            checked += 1;
        }
    }
    assert!(
        checked >= 2,
        "expected the HSA and HIP libraries, checked {checked}"
    );
    assert!(
        hsa_seen,
        "libhsa-runtime64.so.1 not found in the Debian debs"
    );
}
