//! The unit tests of `rocm::layout`: where the marker goes.

use super::*;
use crate::rocm::runtime_library_family_in;

#[test]
fn layouts_put_the_marker_where_the_flavour_allows() {
    let amd = RuntimeLayout::versioned_prefix("/opt/rocm-7.2.4/");
    assert_eq!(amd.lib_dir, "/opt/rocm-7.2.4/lib");
    assert_eq!(
        amd.marker_path("amd64"),
        "/opt/rocm-7.2.4/.info/rocm-pin.json"
    );
    assert!(!amd.one_package_per_library());
    let deb = RuntimeLayout::multiarch("/usr/lib/x86_64-linux-gnu");
    assert_eq!(
        deb.marker_path("amd64"),
        "/var/lib/rocm-pin/marker/amd64.json"
    );
    assert!(deb.one_package_per_library());
    assert!(is_marker_path(&deb.marker_path("arm64")));
    assert_eq!(RuntimeLayout::of_library_dir(&deb.lib_dir), deb);
    assert_eq!(RuntimeLayout::of_library_dir(&amd.lib_dir), amd);
    assert!(is_marker_path(&amd.marker_path("amd64")));
    assert!(is_marker_path("./var/lib/rocm-pin/marker/amd64.json"));
    assert!(!is_marker_path("/var/lib/rocm-pin/marker/x/amd64.json"));
    assert!(!is_marker_path("/var/lib/rocm-pin/marker/.json"));
    assert!(!is_marker_path("/var/lib/rocm-pin/skip.json"));
    assert_eq!(
        runtime_library_family_in(&deb.lib_dir, "/usr/lib/x86_64-linux-gnu/libhiprtc.so.7")
            .unwrap()
            .stem,
        "libhiprtc"
    );
    assert!(
        runtime_library_family_in(&deb.lib_dir, "/usr/lib/x86_64-linux-gnu/x/libhiprtc.so.7")
            .is_none()
    );
}
