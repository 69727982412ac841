//! The unit tests of `rocm::library_paths`: library families, paths and locations.

use super::*;
use crate::rocm::Half;

#[test]
fn families_do_not_confuse_hiprtc_and_builtins() {
    assert_eq!(
        family_of("libhiprtc-builtins.so.7.2.70204").unwrap().stem,
        "libhiprtc-builtins"
    );
    assert_eq!(family_of("libhiprtc.so.7").unwrap().stem, "libhiprtc");
    assert_eq!(family_of("libamdhip64.so").unwrap().stem, "libamdhip64");
    assert_eq!(
        family_of("libamdhip64.so.7.2.53211-b539bf7").unwrap().stem,
        "libamdhip64"
    );
    assert!(family_of("libamdhip64.a").is_none());
    assert!(family_of("libamdhip64_static.so").is_none());
}

#[test]
fn discovery_rule_takes_only_the_prefix_lib_dir() {
    let p = "/opt/rocm-7.2.4";
    assert_eq!(
        runtime_library_family_at(p, "/opt/rocm-7.2.4/lib/libhsa-runtime64.so.1")
            .unwrap()
            .half,
        Half::Hsa
    );
    assert!(
        runtime_library_family_at(p, "/opt/rocm-7.2.4/lib/asan/libhsa-runtime64.so.1").is_none()
    );
    assert!(
        runtime_library_family_at(p, "/usr/lib/x86_64-linux-gnu/libhsa-runtime64.so.1").is_none()
    );
    assert!(runtime_library_family_at(p, "/opt/rocm-7.2.3/lib/libamdhip64.so.7").is_none());
    assert!(runtime_library_family_at(p, "/opt/rocm-7.2.4/lib/cmake/libamdhip64.so").is_none());
    assert_eq!(soname_major("libamdhip64.so.7"), Some("7"));
    assert_eq!(soname_major("libhsa-runtime64.so.1.18.0"), Some("1"));
    assert_eq!(soname_major("libfoo.so"), None);
    assert_eq!(
        prefix_of_runtime_path("/opt/rocm-7.2.4/lib/libamdhip64.so.7").as_deref(),
        Some("/opt/rocm-7.2.4")
    );
    assert!(prefix_of_runtime_path("/usr/lib/libamdhip64.so.7").is_none());
}

#[test]
fn library_locations_name_the_flavour_and_directory() {
    use StockFlavour::*;
    fn at(p: &str) -> Option<(StockFlavour, &'static str, &str)> {
        runtime_library_location(p).map(|(fl, fam, dir)| (fl, fam.stem, dir))
    }
    assert_eq!(
        at("/opt/rocm-7.2.4/lib/libamdhip64.so.7.2.70204"),
        Some((Amd, "libamdhip64", "/opt/rocm-7.2.4/lib"))
    );
    assert_eq!(
        at("/usr/lib/x86_64-linux-gnu/libhsa-runtime64.so.1.18.0"),
        Some((Debian, "libhsa-runtime64", "/usr/lib/x86_64-linux-gnu"))
    );
    assert_eq!(
        at("/usr/lib/arm-linux-gnueabihf/libhiprtc-builtins.so.7"),
        Some((Debian, "libhiprtc-builtins", "/usr/lib/arm-linux-gnueabihf"))
    );
    for not in [
        "/opt/rocm-7.2.4/lib/asan/libamdhip64.so.7",
        "/usr/lib/libamdhip64.so.7",
        "/usr/lib/x86_64-linux-gnu/rocm/libamdhip64.so.7",
        "/usr/lib/x86_64/libamdhip64.so.7",
        "/usr/lib/x86_64-linux-gnu/librocfft.so.0",
        "/usr/lib/x86_64-linux-gnu/libamdhip64.a",
        "/usr/local/lib/x86_64-linux-gnu/libamdhip64.so.7",
    ] {
        assert_eq!(at(not), None, "{not} is no runtime library location");
    }
}
