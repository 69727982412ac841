//! The unit tests of `rocm::package_names`: stock and replacement package names.

use super::*;
use crate::rocm::commit_hint_of_file_name;

#[test]
fn stock_runtime_names_and_commit_hints() {
    // The seed's in-place method overwrote AMD's runtime packages, never the -asan builds.
    let amd = |name| stock_package_by_name(name).map(|n| n.flavour);
    assert_eq!(amd("hsa-rocr"), Some(StockFlavour::Amd));
    assert_eq!(amd("hip-runtime-amd7.2.4"), Some(StockFlavour::Amd));
    assert_eq!(amd("hsa-rocr-asan"), None);
    assert_eq!(amd("hsa-rocr-pinned"), None);
    assert_eq!(amd("hsa-rocr-dev"), None);
    assert_eq!(
        commit_hint_of_file_name("libamdhip64.so.7.2.53211-b539bf7"),
        Some("b539bf7")
    );
    assert_eq!(commit_hint_of_file_name("libamdhip64.so.7.2.70204"), None);
    assert_eq!(commit_hint_of_file_name("libhsa-runtime64.so.1.18.0"), None);
}

fn by_name(name: &str) -> Option<(StockFlavour, Half, Option<&'static str>)> {
    stock_package_by_name(name).map(|n| (n.flavour, n.half, n.family.map(|f| f.stem)))
}

#[test]
fn both_flavours_names_are_recognised_and_nothing_else() {
    use StockFlavour::*;
    assert_eq!(by_name("hsa-rocr"), Some((Amd, Half::Hsa, None)));
    assert_eq!(by_name("hip-runtime-amd"), Some((Amd, Half::Hip, None)));
    assert_eq!(
        by_name("hip-runtime-amd7.2.4"),
        Some((Amd, Half::Hip, None))
    );
    assert_eq!(
        by_name("libhsa-runtime64-1"),
        Some((Debian, Half::Hsa, Some("libhsa-runtime64")))
    );
    assert_eq!(
        by_name("libamdhip64-7"),
        Some((Debian, Half::Hip, Some("libamdhip64")))
    );
    assert_eq!(
        by_name("libamdhip64-6"),
        Some((Debian, Half::Hip, Some("libamdhip64")))
    );
    assert_eq!(
        by_name("libhiprtc7"),
        Some((Debian, Half::Hip, Some("libhiprtc")))
    );
    assert_eq!(
        by_name("libhiprtc-builtins7"),
        Some((Debian, Half::Hip, Some("libhiprtc-builtins")))
    );
    for other in [
        "hsa-rocr-asan",
        "hsa-rocr-dev",
        "hsa-rocr-pinned",
        "hip-runtime-amd-pinned",
        "libamdhip64-dev",
        "libamdhip64-7-pinned",
        "libhsa-runtime-dev",
        "libhsa-runtime64-tests",
        "libhiprtc7-pinned",
        "libamdhip647",
        "libhiprtc-7",
        "libhiprtc",
        "rocminfo",
        "librocfft0",
    ] {
        assert_eq!(
            by_name(other),
            None,
            "{other} is not a stock runtime package"
        );
    }
}

#[test]
fn per_library_names_follow_debian_policy() {
    assert_eq!(
        per_library_package_name("libamdhip64", "7"),
        "libamdhip64-7"
    );
    assert_eq!(
        per_library_package_name("libhsa-runtime64", "1"),
        "libhsa-runtime64-1"
    );
    assert_eq!(per_library_package_name("libhiprtc", "7"), "libhiprtc7");
    assert_eq!(
        per_library_package_name("libhiprtc-builtins", "6"),
        "libhiprtc-builtins6"
    );
    // Every per-library name the rule makes is read back as that family.
    for f in FAMILIES {
        let name = per_library_package_name(f.stem, "7");
        assert_eq!(stock_package_by_name(&name).unwrap().family, Some(f));
    }
}
