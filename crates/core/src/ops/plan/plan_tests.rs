use std::path::PathBuf;

use super::*;

#[test]
fn version_sorts_above_stock_and_later_pins_above_earlier() {
    let v = |s: &str| s.parse::<Version>().unwrap();
    let stock = v("1.18.0.70204-93~24.04");
    let a = replacement_version(
        &stock,
        1764720000,
        "b539bf7eebfd99ad0a69668caa1f4037034d501f",
    );
    assert_eq!(
        a.to_string(),
        "1.18.0.70204-93~24.04+pin1764720000.gb539bf7"
    );
    // What it says is what dpkg reads back.
    assert_eq!(v(&a.to_string()), a);
    let b = replacement_version(&stock, 1764720001, "0000000aaaa");
    let c = replacement_version(&stock, 999999999, "fffffff");
    assert!(a > stock);
    assert!(b > a);
    // Fewer digits is an earlier time: numeric comparison, not lexical.
    assert!(c < a);
    // A newer stock revision is above our pin on the older one.
    assert!(v("1.18.0.70204-94~24.04") > a);
    // No revision: the pin extends the upstream part, with an epoch kept.
    let native = replacement_version(&v("2:7.2.4"), 5, "abcdef0");
    assert_eq!(native.to_string(), "2:7.2.4+pin5.gabcdef0");
    assert_eq!(native.without_epoch(), "7.2.4+pin5.gabcdef0");
    assert!(native > v("2:7.2.4"));
}

fn plan_with(package: &str, paths: &[(&str, Content)]) -> ReplacementPlan {
    ReplacementPlan {
        half: Half::Hsa,
        stock_name: "s".into(),
        stock_version: "1".parse().unwrap(),
        architecture: "amd64".into(),
        package: package.into(),
        version: "1+pin1.gabc".parse().unwrap(),
        control: Paragraph::new(),
        files: paths
            .iter()
            .map(|(p, c)| PlannedFile {
                path: p.to_string(),
                role: Role::Carried,
                content: c.clone(),
                from: None,
            })
            .collect(),
        conffiles: vec![],
        scripts: BTreeMap::new(),
        libraries: vec![],
        stock_scripts_dropped: vec![],
    }
}

#[test]
fn a_path_in_both_packages_is_refused_directories_are_shared() {
    let file = || Content::Bytes {
        data: vec![],
        mode: 0o644,
    };
    let a = plan_with("a", &[("/opt/x", Content::Dir), ("/opt/x/one", file())]);
    let b = plan_with("b", &[("/opt/x", Content::Dir), ("/opt/x/two", file())]);
    check_disjoint(&[a.clone(), b]).unwrap();
    let c = plan_with("c", &[("/opt/x/one", Content::Symlink("t".into()))]);
    let e = check_disjoint(&[a, c]).unwrap_err().to_string();
    assert!(
        e.contains("/opt/x/one") && e.contains("both a and c"),
        "{e}"
    );
}

#[test]
fn at_least_merges_instead_of_duplicating() {
    let mut r = parse_relations("libc6 (>= 2.34), libstdc++6, rocm-core").unwrap();
    merge_at_least(&mut r, "libc6", "2.36-9").unwrap();
    merge_at_least(&mut r, "libstdc++6", "12.2.0-14").unwrap();
    merge_at_least(&mut r, "libnuma1", "2.0.16-1").unwrap();
    merge_at_least(&mut r, "libc6", "2.30").unwrap();
    assert_eq!(
        format_relations(&r),
        "libc6 (>= 2.36-9), libstdc++6 (>= 12.2.0-14), rocm-core, libnuma1 (>= 2.0.16-1)"
    );
}

fn stock_pkg(name: &str, paths: &[&str]) -> StockPackage {
    StockPackage {
        name: name.into(),
        version: "1".parse().unwrap(),
        architecture: "amd64".into(),
        control: Paragraph::new(),
        files: paths
            .iter()
            .map(|p| StockFile {
                path: p.to_string(),
                kind: StockKind::File {
                    mode: 0o644,
                    md5: String::new(),
                },
                source: PathBuf::new(),
            })
            .collect(),
        conffiles: vec![],
        scripts: BTreeMap::new(),
        library_info: BTreeMap::new(),
        origin: "test".into(),
        notes: vec![],
    }
}

#[test]
fn discovery_ignores_decoys_and_needs_both_halves() {
    let p = &rocm::RuntimeLayout::versioned_prefix("/opt/rocm-7.2.4");
    let pkgs = vec![
        stock_pkg(
            "libhsa-runtime64-1",
            &["/usr/lib/x86_64-linux-gnu/libhsa-runtime64.so.1"],
        ),
        stock_pkg(
            "hsa-rocr-asan",
            &["/opt/rocm-7.2.4/lib/asan/libhsa-runtime64.so.1"],
        ),
        stock_pkg(
            "hsa-rocr",
            &["/opt/rocm-7.2.4/lib/libhsa-runtime64.so.1.18.70204"],
        ),
        stock_pkg(
            "hip-runtime-amd7.2.4",
            &["/opt/rocm-7.2.4/lib/libamdhip64.so.7.2.70204"],
        ),
        stock_pkg(
            "hip-runtime-amd7.2.3",
            &["/opt/rocm-7.2.3/lib/libamdhip64.so.7.2.70203"],
        ),
    ];
    let found = discover_in_packages(&pkgs, p, &rocm::families::RUNTIME).unwrap();
    assert_eq!(
        found,
        vec![
            (Half::Hsa, "hsa-rocr".to_string()),
            (Half::Hip, "hip-runtime-amd7.2.4".to_string())
        ]
    );
    let e = discover_in_packages(&pkgs[..3], p, &rocm::families::RUNTIME)
        .unwrap_err()
        .to_string();
    assert!(e.contains("only half"), "{e}");
    let e = discover_in_packages(&pkgs[..2], p, &rocm::families::RUNTIME)
        .unwrap_err()
        .to_string();
    assert!(e.contains("no stock packages"), "{e}");
}

#[test]
fn debian_discovery_takes_every_package_of_each_half() {
    let lib = "/usr/lib/x86_64-linux-gnu";
    let layout = &rocm::RuntimeLayout::multiarch(lib);
    let pkgs = vec![
        stock_pkg("libhiprtc7", &[&format!("{lib}/libhiprtc.so.7.2.53211")]),
        stock_pkg(
            "libamdhip64-7",
            &[&format!("{lib}/libamdhip64.so.7.2.53211")],
        ),
        stock_pkg(
            "libhiprtc-builtins7",
            &[&format!("{lib}/libhiprtc-builtins.so.7.2.53211")],
        ),
        stock_pkg(
            "libhsa-runtime64-1",
            &[&format!("{lib}/libhsa-runtime64.so.1.18.0")],
        ),
        stock_pkg("librocfft0", &[&format!("{lib}/librocfft.so.0")]),
        stock_pkg("hsa-rocr", &["/opt/rocm-7.2.4/lib/libhsa-runtime64.so.1"]),
    ];
    let found = discover_in_packages(&pkgs, layout, &rocm::families::RUNTIME).unwrap();
    let names: Vec<(Half, &str)> = found.iter().map(|(h, n)| (*h, n.as_str())).collect();
    assert_eq!(
        names,
        vec![
            (Half::Hsa, "libhsa-runtime64-1"),
            (Half::Hip, "libamdhip64-7"),
            (Half::Hip, "libhiprtc-builtins7"),
            (Half::Hip, "libhiprtc7"),
        ]
    );
    let e = discover_in_packages(&pkgs[..3], layout, &rocm::families::RUNTIME)
        .unwrap_err()
        .to_string();
    assert!(e.contains("only half") && e.contains("HSA"), "{e}");
    // AMD's layout finds none of Debian's packages, and Debian's none of AMD's.
    let amd = &rocm::RuntimeLayout::versioned_prefix("/opt/rocm-7.2.4");
    assert!(discover_in_packages(&pkgs[..5], amd, &rocm::families::RUNTIME).is_err());
}

/// Debian's -dev packages own the bare development link next to the runtime
/// (`libamdhip64.so`, `libhsa-runtime64.so`): they are dependants, not stock to replace.
#[test]
fn debian_discovery_leaves_the_dev_packages() {
    let lib = "/usr/lib/x86_64-linux-gnu";
    let layout = &rocm::RuntimeLayout::multiarch(lib);
    let pkgs = vec![
        stock_pkg(
            "libamdhip64-6",
            &[
                &format!("{lib}/libamdhip64.so.6"),
                &format!("{lib}/libamdhip64.so.6.4.43484"),
            ],
        ),
        stock_pkg(
            "libhsa-runtime64-1",
            &[&format!("{lib}/libhsa-runtime64.so.1.15.0")],
        ),
        stock_pkg("libamdhip64-dev", &[&format!("{lib}/libamdhip64.so")]),
        stock_pkg(
            "libhsa-runtime-dev",
            &[&format!("{lib}/libhsa-runtime64.so")],
        ),
    ];
    let found = discover_in_packages(&pkgs, layout, &rocm::families::RUNTIME).unwrap();
    let names: Vec<&str> = found.iter().map(|(_, n)| n.as_str()).collect();
    assert_eq!(names, vec!["libhsa-runtime64-1", "libamdhip64-6"]);
}
