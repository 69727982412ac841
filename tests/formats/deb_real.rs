//! Debian's real `libhsa-runtime64-1` and `libamdhip64-5` packages (fetched by
//! scripts/setup.d/10-debian-debs.sh) read by `rocm-pin deb inspect --json`, judged by dpkg-deb
//! (control fields, entry list) and readelf (SONAME, NEEDED).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util::deb::*;

/// The two packages in `dir` (the `debian-debs` test input).
fn real_debs(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for prefix in ["libhsa-runtime64-1", "libamdhip64-5"] {
        let hit = std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("{}: {e}; run scripts/test-setup", dir.display()))
            .flatten()
            .map(|e| e.path())
            .find(|p| {
                let n = p.file_name().unwrap().to_string_lossy().into_owned();
                (n.starts_with(&format!("{prefix}_")) || n.starts_with(&format!("{prefix}t64_")))
                    && n.ends_with(".deb")
            });
        found.push(hit.unwrap_or_else(|| {
            panic!(
                "no {prefix} .deb in {}; run scripts/test-setup",
                dir.display()
            )
        }));
    }
    found
}

fn inspect_json(deb: &std::path::Path) -> serde_json::Value {
    let out = must(
        Command::new(bin())
            .args(["deb", "inspect", "--json"])
            .arg(deb),
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn control_fields_equal_dpkg_deb_field_by_field() {
    let dir = rocm_pin_testkit::needs_setup!("debian-debs");
    for deb in real_debs(&dir) {
        let v = inspect_json(&deb);
        let ours: BTreeMap<String, String> = v["control"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
            .collect();
        let all = must(Command::new("dpkg-deb").arg("-f").arg(&deb));
        let names: Vec<String> = String::from_utf8(all.stdout)
            .unwrap()
            .lines()
            .filter(|l| !l.starts_with([' ', '\t']) && l.contains(':'))
            .map(|l| l.split(':').next().unwrap().to_string())
            .collect();
        assert!(names.len() >= 8, "{}: {names:?}", deb.display());
        let ours_names: Vec<&String> = ours.keys().collect();
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(
            ours_names,
            sorted.iter().collect::<Vec<_>>(),
            "{}",
            deb.display()
        );
        for name in &names {
            let one = must(Command::new("dpkg-deb").arg("-f").arg(&deb).arg(name));
            let theirs = String::from_utf8(one.stdout).unwrap();
            let theirs = theirs.strip_suffix('\n').unwrap_or(&theirs);
            assert_eq!(ours[name], theirs, "{}: field {name}", deb.display());
        }
    }
}

#[test]
fn entries_equal_dpkg_deb_contents_and_md5sums_check_out() {
    let dir = rocm_pin_testkit::needs_setup!("debian-debs");
    for deb in real_debs(&dir) {
        let v = inspect_json(&deb);
        let entries: Vec<rocm_pin_core::deb::Entry> =
            rocm_pin_core::deb::reader::read_deb(&deb, &Default::default())
                .unwrap()
                .entries;
        assert_eq!(
            v["entries"].as_array().unwrap().len(),
            entries.len(),
            "{}",
            deb.display()
        );
        assert_eq!(
            ours_as_listed(&entries),
            dpkg_contents(&deb),
            "{}",
            deb.display()
        );
        assert!(v["md5sums"]["present"].as_bool().unwrap());
        assert!(v["md5sums"]["checked"].as_u64().unwrap() > 0);
        assert_eq!(v["md5sums"]["mismatches"].as_array().unwrap().len(), 0);
        assert_eq!(v["md5sums"]["missing"].as_array().unwrap().len(), 0);
        let members: Vec<&str> = v["members"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["name"].as_str().unwrap())
            .collect();
        assert_eq!(members[0], "debian-binary");
        assert!(members[1].starts_with("control.tar"));
        assert!(members[2].starts_with("data.tar"));
    }
}

/// SONAME and NEEDED of an ELF file as `readelf -d` prints them.
fn readelf_dynamic(path: &std::path::Path) -> (Option<String>, Vec<String>) {
    let out = must(Command::new("readelf").args(["-d", "-W"]).arg(path));
    let text = String::from_utf8(out.stdout).unwrap();
    let bracket = |l: &str| {
        l.split_once('[')
            .and_then(|(_, r)| r.split_once(']'))
            .map(|(v, _)| v.to_string())
    };
    let soname = text
        .lines()
        .find(|l| l.contains("(SONAME)"))
        .and_then(bracket);
    let needed = text
        .lines()
        .filter(|l| l.contains("(NEEDED)"))
        .filter_map(bracket)
        .collect();
    (soname, needed)
}

#[test]
fn sonames_and_needed_equal_readelf() {
    let dir = rocm_pin_testkit::needs_setup!("debian-debs");
    for deb in real_debs(&dir) {
        let v = inspect_json(&deb);
        let tmp = tempfile::tempdir().unwrap();
        must(Command::new("dpkg-deb").arg("-x").arg(&deb).arg(tmp.path()));
        let ours: BTreeMap<String, (Option<String>, Vec<String>)> = v["elf"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                (
                    e["path"].as_str().unwrap().to_string(),
                    (
                        e["soname"].as_str().map(str::to_string),
                        e["needed"]
                            .as_array()
                            .unwrap()
                            .iter()
                            .map(|n| n.as_str().unwrap().to_string())
                            .collect(),
                    ),
                )
            })
            .collect();
        // Every regular ELF file with a SONAME, found independently of our reader.
        let mut theirs = BTreeMap::new();
        for e in walkdir::WalkDir::new(tmp.path()) {
            let e = e.unwrap();
            if !e.file_type().is_file() {
                continue;
            }
            let head = std::fs::read(e.path()).unwrap();
            if !head.starts_with(b"\x7fELF") {
                continue;
            }
            let (soname, needed) = readelf_dynamic(e.path());
            if soname.is_some() {
                let rel = format!("./{}", e.path().strip_prefix(tmp.path()).unwrap().display());
                theirs.insert(rel, (soname, needed));
            }
        }
        assert!(
            !theirs.is_empty(),
            "{}: no shared objects found",
            deb.display()
        );
        assert_eq!(ours, theirs, "{}", deb.display());
        // The backport symbol is ROCm 6+; Debian's 5.2 runtime does not export it, and we say so.
        for e in v["elf"].as_array().unwrap() {
            assert_eq!(e["symbol"]["name"], rocm_pin_core::rocm::BACKPORT_SYMBOL);
            assert_eq!(e["symbol"]["exported"], false, "{}", e["path"]);
        }
    }
}
