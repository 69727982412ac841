//! The unit tests of `rocm` (rocm.rs), by concept.

mod tests {
    use super::super::*;

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
}

mod discovery_tests {
    use super::super::*;

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
            runtime_library_family_at(p, "/opt/rocm-7.2.4/lib/asan/libhsa-runtime64.so.1")
                .is_none()
        );
        assert!(
            runtime_library_family_at(p, "/usr/lib/x86_64-linux-gnu/libhsa-runtime64.so.1")
                .is_none()
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
}

mod inplace_name_tests {
    use super::super::*;

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
}

mod release_tests {
    #[test]
    fn release_from_stock_versions() {
        use super::super::release_of_stock_version as r;
        assert_eq!(r("7.2.53211.70205-1~24.04").as_deref(), Some("7.2.5"));
        assert_eq!(r("1.18.0.70204-93~24.04").as_deref(), Some("7.2.4"));
        assert_eq!(r("7.2.4.70204-93~24.04").as_deref(), Some("7.2.4"));
        assert_eq!(r("5.7.1-2"), None);
    }
}

mod flavour_tests {
    use super::super::*;

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
}

mod layout_tests {
    use super::super::*;

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
        assert!(runtime_library_family_in(
            &deb.lib_dir,
            "/usr/lib/x86_64-linux-gnu/x/libhiprtc.so.7"
        )
        .is_none());
    }
}
