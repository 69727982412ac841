//! The unit tests of `rocm::flavour`: the flavour table.

use super::*;
use crate::rocm::{stock_base_name, stock_package_by_name, Half, RuntimeLayout};

#[test]
fn the_flavour_table_says_what_differs() {
    let amd = flavour_spec(StockFlavour::Amd);
    let debian = flavour_spec(StockFlavour::Debian);
    assert_eq!(amd.release_source, ReleaseSource::VersionFile);
    assert_eq!(debian.release_source, ReleaseSource::PackageVersions);
    assert!(debian.multi_arch_same && debian.shlibs_and_symbols && !debian.opt_prefix);
    assert!(!amd.multi_arch_same && amd.opt_prefix);
    assert_eq!(debian.loader, LoaderRegistration::LdconfigTrigger);
    assert_eq!(stock_base_name(Half::Hsa), "hsa-rocr");
    assert_eq!(stock_base_name(Half::Hip), "hip-runtime-amd");
    assert_eq!(stock_base_name(Half::Rccl), "rccl");
    // The flavour table's names and the family data agree.
    assert_eq!(
        amd.naming,
        StockNaming::PerHalf {
            hsa: stock_base_name(Half::Hsa),
            hip: stock_base_name(Half::Hip)
        }
    );
    assert_eq!(
        amd.release_of_version("1.18.0.70204-93~24.04").as_deref(),
        Some("7.2.4")
    );
    assert_eq!(
        debian.release_of_version("7.2.4-1~exp2+1").as_deref(),
        Some("7.2.4")
    );
    assert_eq!(amd.release_of_version("7.2.4-1~exp2"), None);
    // The in-place method with markers is AMD's only; Debian's is found by its packages.
    let flavour = |name| stock_package_by_name(name).map(|n| n.flavour);
    assert_eq!(flavour("hip-runtime-amd7.2.4"), Some(StockFlavour::Amd));
    assert_eq!(flavour("libamdhip64-7"), Some(StockFlavour::Debian));
    assert_eq!(amd.in_place, InPlaceSearch::RocmPathWithMarkers);
    assert_eq!(debian.in_place, InPlaceSearch::StockPackageDirs);
    let deb = RuntimeLayout::multiarch("/usr/lib/x86_64-linux-gnu");
    assert_eq!(deb.inplace_markers(), None);
    assert_eq!(deb.package_prefix(), "/usr/lib/x86_64-linux-gnu");
    let amd = RuntimeLayout::versioned_prefix("/opt/rocm-7.2.4");
    assert_eq!(amd.package_prefix(), "/opt/rocm-7.2.4");
    assert_eq!(
        amd.inplace_markers(),
        Some([
            "/opt/rocm-7.2.4/.info/atom-rocm-runtime-commit".to_string(),
            "/opt/rocm-7.2.4/.info/atom-rocm-runtime-sonames".to_string()
        ])
    );
}
