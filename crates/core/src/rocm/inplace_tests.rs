use super::*;

#[test]
fn no_prefix_means_nothing_to_report() {
    let d = tempfile::tempdir().unwrap();
    assert!(detect(&Root::new(d.path()), &[]).is_none());
}

#[test]
fn a_stale_marker_alone_reads_as_reverted() {
    let d = tempfile::tempdir().unwrap();
    let r = d.path();
    std::fs::create_dir_all(r.join("opt/rocm-7.2.4/.info")).unwrap();
    std::os::unix::fs::symlink("/opt/rocm-7.2.4", r.join("opt/rocm")).unwrap();
    std::fs::write(
        r.join("opt/rocm-7.2.4/.info/atom-rocm-runtime-commit"),
        format!("{}\n", rocm::PIN_COMMIT),
    )
    .unwrap();
    let p = detect(&Root::new(r), &[]).unwrap();
    assert!(!p.is_live());
    assert_eq!(p.marker_commit.as_deref(), Some(rocm::PIN_COMMIT));
    assert!(p.describe().contains("REVERTED"), "{}", p.describe());
    // With ours installed at another commit the marker disagrees; at the same commit it
    // is the adoption's own and not reported.
    let ours = |commit: &str| StatusEntry {
        package: "hsa-rocr-pinned".into(),
        status: "install ok installed".into(),
        extra: [(rocm::COMMIT_FIELD.to_string(), commit.to_string())].into(),
        ..Default::default()
    };
    let other = detect(
        &Root::new(r),
        &[ours("0123456789abcdef0123456789abcdef01234567")],
    )
    .unwrap();
    assert!(
        other.summary().contains("stale in-place marker"),
        "{}",
        other.summary()
    );
    assert!(detect(&Root::new(r), &[ours(rocm::PIN_COMMIT)]).is_none());
}

/// dpkg's md5sums for the info file stem `stem` (`hip-runtime-amd`, `libamdhip64-7:amd64`)
/// and the `.list` naming the same files, as dpkg writes both on install.
fn write_sums(r: &Path, stem: &str, sums: &str) {
    let info = r.join("var/lib/dpkg/info");
    std::fs::write(info.join(format!("{stem}.md5sums")), sums).unwrap();
    let list: String = sums
        .lines()
        .filter_map(|l| l.split_once("  "))
        .map(|(_, p)| format!("/{p}\n"))
        .collect();
    std::fs::write(info.join(format!("{stem}.list")), list).unwrap();
}

/// An AMD-flavour root with an empty `/opt/rocm-7.2.4` (lib/, .info/, the `/opt/rocm`
/// link) and a dpkg info directory; returns the lib directory.
fn amd_fake_root(r: &Path) -> std::path::PathBuf {
    let lib = r.join("opt/rocm-7.2.4/lib");
    std::fs::create_dir_all(&lib).unwrap();
    std::fs::create_dir_all(r.join("opt/rocm-7.2.4/.info")).unwrap();
    std::fs::create_dir_all(r.join("var/lib/dpkg/info")).unwrap();
    std::os::unix::fs::symlink("/opt/rocm-7.2.4", r.join("opt/rocm")).unwrap();
    lib
}

/// AMD's HIP runtime package as dpkg's status lists it, installed.
fn installed_hip_runtime_amd() -> StatusEntry {
    StatusEntry {
        package: "hip-runtime-amd".into(),
        version: "7.2.53211.70204-93~24.04".into(),
        architecture: "amd64".into(),
        status: "install ok installed".into(),
        ..Default::default()
    }
}

/// The seed's shape on a fake root: the stock name hard-linked to a patched file whose
/// name carries the short commit, the soname link re-pointed, the markers.
#[test]
fn reads_hard_links_over_stock_names_and_judges_the_markers() {
    use md5::Digest as _;
    let d = tempfile::tempdir().unwrap();
    let (r, lib) = (d.path(), amd_fake_root(d.path()));
    let stock = "libamdhip64.so.7.2.70204";
    write_sums(
        r,
        "hip-runtime-amd",
        &format!(
            "{}  opt/rocm-7.2.4/lib/{stock}\n",
            hex::encode(md5::Md5::digest(b"stock hip"))
        ),
    );
    let patched = "libamdhip64.so.7.2.53211-b539bf7";
    std::fs::write(lib.join(patched), b"patched hip").unwrap();
    std::fs::hard_link(lib.join(patched), lib.join(stock)).unwrap();
    std::os::unix::fs::symlink(patched, lib.join("libamdhip64.so.7")).unwrap();
    let marker = r.join("opt/rocm-7.2.4/.info/atom-rocm-runtime-commit");
    std::fs::write(&marker, format!("{}\n", rocm::PIN_COMMIT)).unwrap();
    let entries = [installed_hip_runtime_amd()];
    let p = detect(&Root::new(r), &entries).unwrap();
    assert!(p.is_live());
    assert_eq!(p.differing.len(), 1);
    assert_eq!(p.differing[0].path, format!("/opt/rocm-7.2.4/lib/{stock}"));
    assert_eq!(p.libraries.len(), 1);
    let l = &p.libraries[0];
    assert_eq!(l.path, format!("/opt/rocm-7.2.4/lib/{patched}"));
    assert_eq!(l.aliases, vec![format!("/opt/rocm-7.2.4/lib/{stock}")]);
    assert_eq!(l.links, vec!["libamdhip64.so.7".to_string()]);
    // Not ELF, and only half of the pair: both said.
    assert!(
        p.problems.iter().any(|x| x.contains("not an ELF")),
        "{:?}",
        p.problems
    );
    assert!(p
        .problems
        .iter()
        .any(|x| x.contains("no patched libhsa-runtime64")));
    assert!(!p.problems.iter().any(|x| x.contains("built from commit")));
    assert!(p.summary().contains("rocm-pin adopt"), "{}", p.summary());
    // A marker naming another commit than the file name's.
    std::fs::write(&marker, "0123456789abcdef0123456789abcdef01234567\n").unwrap();
    let p = detect(&Root::new(r), &entries).unwrap();
    assert!(
        p.problems
            .iter()
            .any(|x| x.contains("built from commit b539bf7")),
        "{:?}",
        p.problems
    );
    // Stock content back (what `apt-get install --reinstall` does): reverted, marker stale.
    std::fs::remove_file(lib.join(stock)).unwrap();
    std::fs::write(lib.join(stock), b"stock hip").unwrap();
    let p = detect(&Root::new(r), &entries).unwrap();
    assert!(!p.is_live());
    assert!(p.describe().contains("REVERTED"), "{}", p.describe());
    // Which stock package is live again is named.
    let (name, version) = &p.stock[0];
    assert!(
        p.summary()
            .contains(&format!("reverted, the stock runtime of {name} {version}")),
        "{}",
        p.summary()
    );
}

const DEBIAN_LIB_DIR: &str = "usr/lib/x86_64-linux-gnu";
const DEBIAN_HSA: &str = "libhsa-runtime64.so.1.18.0";
const DEBIAN_HIP: &str = "libamdhip64.so.7.2.53211";

/// Debian's runtime pair installed by dpkg under `r`: each library's file (its md5sums line)
/// and soname link in the multiarch directory; the status entries of both packages.
fn debian_stock_root(r: &Path) -> [StatusEntry; 2] {
    use md5::Digest as _;
    let lib = r.join(DEBIAN_LIB_DIR);
    let dir = DEBIAN_LIB_DIR;
    std::fs::create_dir_all(&lib).unwrap();
    std::fs::create_dir_all(r.join("var/lib/dpkg/info")).unwrap();
    let md5 = |b: &[u8]| hex::encode(md5::Md5::digest(b));
    let (hsa, hip) = (DEBIAN_HSA, DEBIAN_HIP);
    for (package, file, soname) in [
        ("libhsa-runtime64-1", hsa, "libhsa-runtime64.so.1"),
        ("libamdhip64-7", hip, "libamdhip64.so.7"),
    ] {
        write_sums(
            r,
            &format!("{package}:amd64"),
            &format!(
                "{}  {dir}/{file}\n{}  usr/share/doc/{package}/copyright\n",
                md5(format!("stock {package}").as_bytes()),
                md5(b"c")
            ),
        );
        std::fs::write(lib.join(file), format!("stock {package}")).unwrap();
        std::os::unix::fs::symlink(file, lib.join(soname)).unwrap();
    }
    let entry = |package: &str, version: &str| StatusEntry {
        package: package.into(),
        version: version.into(),
        architecture: "amd64".into(),
        status: "install ok installed".into(),
        ..Default::default()
    };
    [
        entry("libhsa-runtime64-1", "7.2.4+dfsg-1~exp1"),
        entry("libamdhip64-7", "7.2.4-1~exp2"),
    ]
}

/// Debian's flavour on a fake root: the stock packages' files in the multiarch directory
/// (from their md5sums), one copied over in place keeping the stock name, one the seed's
/// way (a hard link to a file named with the short commit); no marker anywhere.
#[test]
fn reads_debians_multiarch_files_patched_in_place_and_asks_for_the_commit() {
    let d = tempfile::tempdir().unwrap();
    let r = d.path();
    let entries = debian_stock_root(r);
    let (dir, hsa, hip) = (DEBIAN_LIB_DIR, DEBIAN_HSA, DEBIAN_HIP);
    let lib = r.join(dir);
    // Stock as dpkg installed it: nothing to report (and no /opt/rocm at all).
    assert!(detect(&Root::new(r), &entries).is_none());

    // HSA copied over the stock file, keeping its name (`cp`, then ldconfig).
    std::fs::write(lib.join(hsa), b"patched hsa").unwrap();
    let p = detect(&Root::new(r), &entries).unwrap();
    assert!(p.is_live());
    assert_eq!(p.flavour, rocm::StockFlavour::Debian);
    // A reverted AMD patch's marker left in /opt (AMD's layout is searched first) does not
    // hide the live patch of Debian's files.
    let opt = r.join("opt/rocm-7.2.4");
    std::fs::create_dir_all(opt.join(".info")).unwrap();
    std::os::unix::fs::symlink("/opt/rocm-7.2.4", r.join("opt/rocm")).unwrap();
    std::fs::write(
        opt.join(rocm::INPLACE_COMMIT_RELPATH),
        format!("{}\n", rocm::PIN_COMMIT),
    )
    .unwrap();
    let beside_stale = detect(&Root::new(r), &entries).unwrap();
    assert!(beside_stale.is_live(), "{}", beside_stale.describe());
    assert_eq!(beside_stale.flavour, rocm::StockFlavour::Debian);
    std::fs::remove_dir_all(r.join("opt")).unwrap();
    assert_eq!(p.lib_dir, format!("/{dir}"));
    assert_eq!(p.prefix, "/usr");
    assert_eq!(p.layout(), RuntimeLayout::multiarch(&format!("/{dir}")));
    assert_eq!(p.marker_commit, None);
    assert_eq!(p.differing.len(), 1);
    assert_eq!(p.differing[0].package, "libhsa-runtime64-1");
    assert_eq!(p.stock.len(), 2, "{:?}", p.stock);
    let l = &p.libraries[0];
    assert_eq!(l.path, format!("/{dir}/{hsa}"));
    assert_eq!(l.aliases, vec![l.path.clone()]);
    assert_eq!(l.links, vec!["libhsa-runtime64.so.1".to_string()]);
    assert!(
        p.problems
            .iter()
            .any(|x| x.contains("no patched libamdhip64")),
        "{:?}",
        p.problems
    );
    // No marker on this flavour: the commit is asked for, without a file name hint here.
    let unknown = p.commit_unknown();
    assert!(
        unknown.contains("Debian's packaging keeps no in-place commit marker")
            && unknown.contains("rocm-pin adopt --commit")
            && unknown.contains("no file name here carries it"),
        "{unknown}"
    );
    assert!(p.problems.contains(&unknown), "{:?}", p.problems);
    assert!(
        p.summary().contains("fix: `rocm-pin adopt --commit"),
        "{}",
        p.summary()
    );
    assert!(
        p.describe().contains("copied over the stock file")
            && p.describe().contains(&format!("IN PLACE in /{dir}")),
        "{}",
        p.describe()
    );

    // HIP the seed's way, in that same directory: a file named with the short commit, the
    // stock name hard-linked to it, the soname link re-pointed.
    let patched = "libamdhip64.so.7.2.53211-b539bf7";
    std::fs::write(lib.join(patched), b"patched hip").unwrap();
    std::fs::remove_file(lib.join(hip)).unwrap();
    std::fs::hard_link(lib.join(patched), lib.join(hip)).unwrap();
    std::fs::remove_file(lib.join("libamdhip64.so.7")).unwrap();
    std::os::unix::fs::symlink(patched, lib.join("libamdhip64.so.7")).unwrap();
    let p = detect(&Root::new(r), &entries).unwrap();
    assert_eq!(p.differing.len(), 2);
    let l = p
        .libraries
        .iter()
        .find(|l| l.family == "libamdhip64")
        .unwrap();
    assert_eq!(l.path, format!("/{dir}/{patched}"));
    assert_eq!(l.aliases, vec![format!("/{dir}/{hip}")]);
    assert_eq!(l.links, vec!["libamdhip64.so.7".to_string()]);
    assert!(!p.problems.iter().any(|x| x.contains("no patched")));
    // The hint: the file name's short commit.
    assert!(
        p.commit_unknown()
            .contains(&format!("/{dir}/{patched} says commit b539bf7")),
        "{}",
        p.commit_unknown()
    );
    judges_a_given_commit(&p);
}

/// `--commit` on a patch without a marker whose HIP file name says b539bf7.
fn judges_a_given_commit(p: &InPlacePatch) {
    // --commit names it: the commit problem is gone; one disagreeing with the file name is
    // said; not 40 hex digits is said.
    let given = p.clone().with_commit(Some(rocm::PIN_COMMIT));
    assert!(!given.problems.contains(&p.commit_unknown()));
    assert!(!given.problems.iter().any(|x| x.contains("--commit says")));
    assert_eq!(
        given.commit(Some(&rocm::PIN_COMMIT.to_ascii_uppercase())),
        Some(rocm::PIN_COMMIT.to_string())
    );
    let other = p
        .clone()
        .with_commit(Some("0123456789abcdef0123456789abcdef01234567"));
    assert!(
        other
            .problems
            .iter()
            .any(|x| x.contains("--commit says 0123") && x.contains("built from commit b539bf7")),
        "{:?}",
        other.problems
    );
    let short = p.clone().with_commit(Some("b539bf7"));
    assert!(
        short
            .problems
            .iter()
            .any(|x| x.contains("not a full 40-digit")),
        "{:?}",
        short.problems
    );
}

/// A stock package forced in next to ours (`dpkg -i --force-all`): dpkg skipped every file
/// ours owns ("Replaced by files in installed package"), so the stock md5sums still name the
/// runtime file while its `.list` does not, and the file on disk is ours. That is no patch
/// in place (verify's advice was `adopt`, which refuses); the same file dropped from the
/// list only is how dpkg leaves it.
#[test]
fn a_stock_package_forced_in_next_to_ours_is_not_a_patch_in_place() {
    let d = tempfile::tempdir().unwrap();
    let (r, lib) = (d.path(), amd_fake_root(d.path()));
    let stock = "libamdhip64.so.7.2.70204";
    write_sums(
        r,
        "hip-runtime-amd",
        &format!("00000000000000000000000000000000  opt/rocm-7.2.4/lib/{stock}\n"),
    );
    std::fs::write(lib.join(stock), b"ours, installed by our package").unwrap();
    let entries = [installed_hip_runtime_amd()];
    assert!(
        detect(&Root::new(r), &entries).is_some_and(|p| p.is_live()),
        "listed and differing: a live patch"
    );
    // dpkg's list after the forced install: the runtime file is ours, not the stock one's.
    std::fs::write(
        r.join("var/lib/dpkg/info/hip-runtime-amd.list"),
        "/opt/rocm-7.2.4\n/opt/rocm-7.2.4/lib\n",
    )
    .unwrap();
    assert_eq!(detect(&Root::new(r), &entries), None);
}

/// AMD's flavour: `--commit` where the marker is missing replaces it; with a marker it must
/// agree, and a disagreement names both.
#[test]
fn a_given_commit_must_agree_with_the_marker() {
    let d = tempfile::tempdir().unwrap();
    let (r, lib) = (d.path(), amd_fake_root(d.path()));
    write_sums(
        r,
        "hip-runtime-amd",
        "00000000000000000000000000000000  opt/rocm-7.2.4/lib/libamdhip64.so.7.2.70204\n",
    );
    std::fs::write(lib.join("libamdhip64.so.7.2.70204"), b"patched").unwrap();
    let entries = [installed_hip_runtime_amd()];
    let p = detect(&Root::new(r), &entries).unwrap();
    assert_eq!(p.flavour, rocm::StockFlavour::Amd);
    assert_eq!(p.lib_dir, "/opt/rocm-7.2.4/lib");
    assert!(
        p.problems
            .iter()
            .any(|x| x
                .starts_with("no commit marker /opt/rocm-7.2.4/.info/atom-rocm-runtime-commit")),
        "{:?}",
        p.problems
    );
    let given = p.clone().with_commit(Some(rocm::PIN_COMMIT));
    assert!(!given
        .problems
        .iter()
        .any(|x| x.contains("no commit marker")));
    std::fs::write(
        r.join("opt/rocm-7.2.4/.info/atom-rocm-runtime-commit"),
        format!("{}\n", rocm::PIN_COMMIT),
    )
    .unwrap();
    let p = detect(&Root::new(r), &entries).unwrap();
    let same = p.clone().with_commit(Some(rocm::PIN_COMMIT));
    assert!(!same.problems.iter().any(|x| x.contains("--commit says")));
    let other = "0123456789abcdef0123456789abcdef01234567";
    let differs = p.with_commit(Some(other));
    assert!(
        differs.problems.iter().any(|x| x.contains(&format!(
            "the commit marker /opt/rocm-7.2.4/.info/atom-rocm-runtime-commit says {} but --commit says {other}",
            rocm::PIN_COMMIT
        ))),
        "{:?}",
        differs.problems
    );
}
