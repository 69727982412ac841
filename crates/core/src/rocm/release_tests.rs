//! The unit tests of `rocm::release`: the target release and reading a release.

use super::*;

#[test]
fn the_release_comes_from_the_versioned_prefix() {
    assert_eq!(release_of_prefix("/opt/rocm-6.3.0"), "6.3.0");
    assert_eq!(release_of_prefix("/opt/rocm-7.2.4/"), "7.2.4");
    assert_eq!(release_of_prefix("/opt/rocm"), TARGET_ROCM_VERSION);
    assert_eq!(release_of_prefix("/opt/rocm-x"), TARGET_ROCM_VERSION);
}

#[test]
fn version_gate_matches_the_reviewed_regex() {
    for ok in ["7.2.4", "7.2.4-42", "7.2.4+123", "7.2.4\n"] {
        assert!(version_matches(ok, "7.2.4"), "{ok:?} should match");
    }
    for bad in ["7.2.40", "7.2.3", "10.0.0", "", "17.2.4", " 7.2.5"] {
        assert!(!version_matches(bad, "7.2.4"), "{bad:?} should not match");
    }
}

#[test]
fn resolves_alternatives_chain_inside_a_root() {
    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    std::fs::create_dir_all(r.join("opt/rocm-7.2.4/lib")).unwrap();
    std::fs::create_dir_all(r.join("etc/alternatives")).unwrap();
    std::os::unix::fs::symlink("/opt/rocm-7.2.4", r.join("etc/alternatives/rocm")).unwrap();
    std::os::unix::fs::symlink("/etc/alternatives/rocm", r.join("opt/rocm")).unwrap();
    let (resolved, hops) = resolve_rocm_path(&Root::new(r), Path::new("/opt/rocm")).unwrap();
    assert_eq!(resolved, PathBuf::from("/opt/rocm-7.2.4"));
    assert_eq!(hops.len(), 3);
    std::os::unix::fs::symlink("/nowhere", r.join("opt/dangling")).unwrap();
    assert!(resolve_rocm_path(&Root::new(r), Path::new("/opt/dangling")).is_err());
}

#[test]
fn release_from_stock_versions() {
    use super::release_of_stock_version as r;
    assert_eq!(r("7.2.53211.70205-1~24.04").as_deref(), Some("7.2.5"));
    assert_eq!(r("1.18.0.70204-93~24.04").as_deref(), Some("7.2.4"));
    assert_eq!(r("7.2.4.70204-93~24.04").as_deref(), Some("7.2.4"));
    assert_eq!(r("5.7.1-2"), None);
}

#[test]
fn releases_from_debian_package_versions() {
    let r = release_of_package_version;
    assert_eq!(r("7.2.4+dfsg-1~exp1").as_deref(), Some("7.2.4"));
    assert_eq!(r("7.2.4-1~exp2").as_deref(), Some("7.2.4"));
    assert_eq!(r("6.4.3+dfsg-5").as_deref(), Some("6.4.3"));
    assert_eq!(r("6.4.3-5").as_deref(), Some("6.4.3"));
    assert_eq!(r("1:6.4.3-5").as_deref(), Some("6.4.3"));
    assert_eq!(r("7.2.4~rc1-1").as_deref(), Some("7.2.4"));
    assert_eq!(r("5.7.1-7").as_deref(), Some("5.7.1"));
    assert_eq!(r("7.2.4").as_deref(), Some("7.2.4"));
    for bad in ["", "7", "abc-1", "-1", "7.-1", "1:", "123456.1-1"] {
        assert_eq!(r(bad), None, "{bad:?} carries no release");
    }
}
