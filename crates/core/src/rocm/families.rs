//! The pinned families as data: which libraries one replacement set rebuilds, in which parts
//! (one replacement package per part on AMD's packaging), the stock packages each flavour ships
//! them in, where the provenance record goes and what the packages say about themselves.
//!
//! The runtime pair (`runtime`: the HSA half and the HIP/CLR half) and RCCL (`rccl`) are two
//! records of [`PINNED_FAMILIES`]; pinning another ROCm library (rocBLAS, MIOpen) is one more
//! record here plus its copyright text, not a new code path.

use super::flavour::StockFlavour;
use super::pin::{BACKPORT_SYMBOL, COMMIT_FIELD, FAMILY_FIELD, PIN_REPOSITORY};

/// One part of a pinned family: the libraries one AMD replacement package ships. The pair has
/// two (HSA, HIP); a one-package library such as RCCL has one.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum Half {
    /// ROCr: `libhsa-runtime64`, stock package `hsa-rocr`.
    Hsa,
    /// HIP/CLR: `libamdhip64`, `libhiprtc`, `libhiprtc-builtins`, stock package `hip-runtime-amd`.
    Hip,
    /// RCCL: `librccl`, stock package `rccl` (AMD) or `librccl1` (Debian).
    Rccl,
}

/// A library family: the file-name stem shared by the real file, the soname link and the dev link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LibraryFamily {
    /// e.g. "libamdhip64" — matches `libamdhip64.so`, `libamdhip64.so.7`, `libamdhip64.so.7.2.70204`.
    pub stem: &'static str,
    pub half: Half,
    /// True for the families that must be present in a build (the pair itself).
    pub required: bool,
}

/// One part of a family as data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartSpec {
    pub half: Half,
    /// The replacement's short description starts with this.
    pub description: &'static str,
    /// AMD's stock package of this part (before a multi-version suffix such as `7.2.4`).
    pub amd_package: &'static str,
    /// `debian/copyright` of the replacement (a debian-templates/ file).
    pub copyright: &'static str,
    /// The part's own lintian overrides (a debian-templates/ file).
    pub lintian_overrides: &'static str,
}

/// The stock packages of a family in one flavour: those replaced, and those that stay installed
/// on the replacement's `Provides` (development and test packages with an exact `=` on the
/// replaced ones). Names for people and the refusals; discovery goes by the files the installed
/// packages own, never by these names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FamilyStock {
    pub flavour: StockFlavour,
    pub replaced: &'static [&'static str],
    pub kept: &'static [&'static str],
}

/// One pinned family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PinnedFamily {
    /// What `--family` takes and what status prints: `runtime`, `rccl`.
    pub name: &'static str,
    /// For people: "the ROCm runtime pair (HSA + HIP)".
    pub title: &'static str,
    /// In packaging order; the first part's package carries the provenance marker and the
    /// loader entry, the others depend on it at its exact version.
    pub parts: &'static [PartSpec],
    pub libraries: &'static [LibraryFamily],
    pub stock: &'static [FamilyStock],
    /// Where the rebuilt sources come from (description, copyright).
    pub repository: &'static str,
    /// The provenance marker's file name: `<prefix>/.info/<name>` where the flavour has an
    /// `/opt` prefix, `/var/lib/rocm-pin/marker/<stem><arch>.json` elsewhere (`stem` below), where the
    /// pair's marker reader (`is_marker_path`) does not take it for the pair's.
    pub marker_name: &'static str,
    /// The prefix-less marker's name before the architecture (empty for the pair's).
    pub prefixless_marker_stem: &'static str,
    /// A symbol the staged library of `stem` must export (the pair's backport), if any.
    pub required_export: Option<(&'static str, &'static str)>,
}

const COPYRIGHT_HSA: &str = include_str!("../../../../debian-templates/copyright-hsa.in");
const COPYRIGHT_HIP: &str = include_str!("../../../../debian-templates/copyright-hip.in");
const COPYRIGHT_RCCL: &str = include_str!("../../../../debian-templates/copyright-rccl.in");
const OVERRIDES_HSA: &str = include_str!("../../../../debian-templates/lintian-overrides-hsa.in");
const OVERRIDES_HIP: &str = include_str!("../../../../debian-templates/lintian-overrides-hip.in");
const OVERRIDES_RCCL: &str = include_str!("../../../../debian-templates/lintian-overrides-rccl.in");

/// The runtime pair: rocm-pin's first family.
pub const RUNTIME: PinnedFamily = PinnedFamily {
    name: "runtime",
    title: "the ROCm runtime pair (HSA + HIP)",
    parts: &[
        PartSpec {
            half: Half::Hsa,
            description: "ROCm HSA runtime (ROCr)",
            amd_package: "hsa-rocr",
            copyright: COPYRIGHT_HSA,
            lintian_overrides: OVERRIDES_HSA,
        },
        PartSpec {
            half: Half::Hip,
            description: "ROCm HIP runtime (CLR)",
            amd_package: "hip-runtime-amd",
            copyright: COPYRIGHT_HIP,
            lintian_overrides: OVERRIDES_HIP,
        },
    ],
    libraries: &[
        LibraryFamily {
            stem: "libhsa-runtime64",
            half: Half::Hsa,
            required: true,
        },
        LibraryFamily {
            stem: "libamdhip64",
            half: Half::Hip,
            required: true,
        },
        LibraryFamily {
            stem: "libhiprtc",
            half: Half::Hip,
            required: false,
        },
        LibraryFamily {
            stem: "libhiprtc-builtins",
            half: Half::Hip,
            required: false,
        },
    ],
    stock: &[
        FamilyStock {
            flavour: StockFlavour::Amd,
            replaced: &["hsa-rocr", "hip-runtime-amd"],
            kept: &["rocm-hip-runtime", "hip-dev", "hsa-rocr-dev"],
        },
        FamilyStock {
            flavour: StockFlavour::Debian,
            replaced: &[
                "libhsa-runtime64-1",
                "libamdhip64-7",
                "libhiprtc7",
                "libhiprtc-builtins7",
            ],
            kept: &["libhsa-runtime-dev", "libamdhip64-dev"],
        },
    ],
    repository: PIN_REPOSITORY,
    marker_name: "rocm-pin.json",
    prefixless_marker_stem: "",
    required_export: Some(("libhsa-runtime64", BACKPORT_SYMBOL)),
};

/// RCCL: AMD's `rccl` (and `rccl-dev`, kept), Debian's `librccl1` (and `librccl-dev`,
/// `librccl1-tests`, kept: both depend on `librccl1 (= <version>)`).
pub const RCCL: PinnedFamily = PinnedFamily {
    name: "rccl",
    title: "RCCL (ROCm Communication Collectives Library)",
    parts: &[PartSpec {
        half: Half::Rccl,
        description: "ROCm Communication Collectives Library (RCCL)",
        amd_package: "rccl",
        copyright: COPYRIGHT_RCCL,
        lintian_overrides: OVERRIDES_RCCL,
    }],
    libraries: &[LibraryFamily {
        stem: "librccl",
        half: Half::Rccl,
        required: true,
    }],
    stock: &[
        FamilyStock {
            flavour: StockFlavour::Amd,
            replaced: &["rccl"],
            kept: &["rccl-dev"],
        },
        FamilyStock {
            flavour: StockFlavour::Debian,
            replaced: &["librccl1"],
            kept: &["librccl-dev", "librccl1-tests"],
        },
    ],
    repository: "https://github.com/ROCm/rccl.git",
    marker_name: "rocm-pin-rccl.json",
    prefixless_marker_stem: "rccl/",
    required_export: None,
};

/// Every family rocm-pin pins, the runtime pair first.
pub const PINNED_FAMILIES: &[&PinnedFamily] = &[&RUNTIME, &RCCL];

/// The runtime pair's libraries: the list of SONAME stems the pair replaces (what a search for
/// shadow copies of the pinned runtime reads).
pub const FAMILIES: &[LibraryFamily] = RUNTIME.libraries;

impl PinnedFamily {
    /// The family `--family NAME` names.
    pub fn by_name(name: &str) -> Option<&'static PinnedFamily> {
        PINNED_FAMILIES.iter().copied().find(|f| f.name == name)
    }

    /// The names `--family` takes, for a refusal.
    pub fn names() -> Vec<&'static str> {
        PINNED_FAMILIES.iter().map(|f| f.name).collect()
    }

    /// The part of `half`, when it is one of this family's.
    pub fn part(&'static self, half: Half) -> Option<&'static PartSpec> {
        self.parts.iter().find(|p| p.half == half)
    }

    /// The first part: its package carries the marker and the loader entry.
    pub fn first_half(&self) -> Half {
        self.parts[0].half
    }

    /// The library family `file_name` belongs to in this family (`librccl.so.1.0.70204` →
    /// librccl). None for anything that is not `<stem>.so` or `<stem>.so.<digits…>`.
    pub fn family_of(&'static self, file_name: &str) -> Option<&'static LibraryFamily> {
        library_of(self.libraries, file_name)
    }

    /// [`Self::family_of`] for a path directly in `lib_dir`.
    pub fn library_in(&'static self, lib_dir: &str, path: &str) -> Option<&'static LibraryFamily> {
        let name = path.strip_prefix(&format!("{}/", lib_dir.trim_end_matches('/')))?;
        if name.contains('/') {
            return None;
        }
        self.family_of(name)
    }

    /// The stock packages of `flavour`.
    pub fn stock_of(&'static self, flavour: StockFlavour) -> Option<&'static FamilyStock> {
        self.stock.iter().find(|s| s.flavour == flavour)
    }
}

/// The library family of `path` directly in `lib_dir`, in whichever pinned family has it.
pub fn library_in_any(lib_dir: &str, path: &str) -> Option<&'static LibraryFamily> {
    PINNED_FAMILIES
        .iter()
        .find_map(|f| f.library_in(lib_dir, path))
}

/// The part spec of `half` in whichever family has it.
pub fn part_spec(half: Half) -> &'static PartSpec {
    PINNED_FAMILIES
        .iter()
        .flat_map(|f| f.parts.iter())
        .find(|p| p.half == half)
        .expect("every Half is a part of one PINNED_FAMILIES record")
}

/// The family whose parts include `half`.
pub fn family_of_half(half: Half) -> &'static PinnedFamily {
    PINNED_FAMILIES
        .iter()
        .copied()
        .find(|f| f.parts.iter().any(|p| p.half == half))
        .expect("every Half is a part of one PINNED_FAMILIES record")
}

/// The required family of `half`: the library the pair is named after (`libhsa-runtime64`,
/// `libamdhip64`).
pub fn pair_family(half: Half) -> &'static LibraryFamily {
    FAMILIES
        .iter()
        .find(|f| f.required && f.half == half)
        .expect("FAMILIES has a required family per half")
}

/// What a replacement's short description calls each half.
pub fn half_description(half: Half) -> &'static str {
    part_spec(half).description
}

/// The runtime pair's family a file name belongs to: `libhiprtc-builtins.so.7.2.1` →
/// libhiprtc-builtins (not libhiprtc). None for anything that is not `<stem>.so` or
/// `<stem>.so.<digits…>`.
pub fn family_of(file_name: &str) -> Option<&'static LibraryFamily> {
    library_of(FAMILIES, file_name)
}

fn library_of(
    libraries: &'static [LibraryFamily],
    file_name: &str,
) -> Option<&'static LibraryFamily> {
    libraries.iter().find(|f| {
        file_name
            .strip_prefix(f.stem)
            .and_then(|rest| rest.strip_prefix(".so"))
            .is_some_and(|rest| {
                rest.is_empty()
                    || (rest.starts_with('.')
                        && rest[1..]
                            .chars()
                            .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-'))
            })
    })
}

/// Stock package base names per half (AMD's packaging, from the family data). Multi-version
/// installs append the ROCm version (`hip-runtime-amd7.2.4`); `-asan` packages are never
/// replacement targets.
pub fn stock_base_name(half: Half) -> &'static str {
    part_spec(half).amd_package
}

/// Is `entry` (a status paragraph read with [`super::PIN_FIELDS`]) one of our replacements of
/// `family`? Ours carry [`super::COMMIT_FIELD`]; a family other than the runtime pair also
/// [`super::FAMILY_FIELD`], so the pair's install, verify and rollback never take an installed
/// RCCL replacement for half of the pair.
pub fn is_ours_of(entry: &crate::host::status::StatusEntry, family: &PinnedFamily) -> bool {
    entry.extra.contains_key(COMMIT_FIELD)
        && entry
            .extra
            .get(FAMILY_FIELD)
            .map_or(family.name == RUNTIME.name, |f| f == family.name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_family_is_consistent_data() {
        for f in PINNED_FAMILIES {
            assert!(!f.parts.is_empty(), "{}", f.name);
            assert_eq!(PinnedFamily::by_name(f.name).unwrap().name, f.name);
            for lib in f.libraries {
                assert!(f.part(lib.half).is_some(), "{}: {}", f.name, lib.stem);
                assert_eq!(f.family_of(&format!("{}.so.1", lib.stem)), Some(lib));
                assert_eq!(family_of_half(lib.half).name, f.name);
            }
            // Every part has a required library, so no part is ever empty.
            for p in f.parts {
                assert!(f.libraries.iter().any(|l| l.half == p.half && l.required));
            }
            for flavour in [StockFlavour::Amd, StockFlavour::Debian] {
                let s = f.stock_of(flavour).unwrap();
                assert!(!s.replaced.is_empty(), "{}: {flavour:?}", f.name);
            }
        }
        // The pair's FAMILIES keep their meaning: the runtime pair only.
        assert!(FAMILIES.iter().all(|l| l.half != Half::Rccl));
        assert!(family_of("librccl.so.1").is_none());
        assert_eq!(
            RCCL.family_of("librccl.so.1.0.70204").unwrap().stem,
            "librccl"
        );
        assert!(RCCL.family_of("libamdhip64.so.7").is_none());
        assert!(RCCL.family_of("librccl-net.so").is_none());
        assert_eq!(
            RCCL.library_in("/opt/rocm-7.2.4/lib", "/opt/rocm-7.2.4/lib/librccl.so.1")
                .unwrap()
                .stem,
            "librccl"
        );
        assert!(RCCL
            .library_in("/opt/rocm-7.2.4/lib", "/opt/rocm-7.2.4/lib/x/librccl.so.1")
            .is_none());
        // Debian's per-library names follow from the data (policy 8.1).
        assert_eq!(
            super::super::per_library_package_name(RCCL.libraries[0].stem, "1"),
            RCCL.stock_of(StockFlavour::Debian).unwrap().replaced[0]
        );
        assert_eq!(PinnedFamily::by_name("nope"), None);
        assert_eq!(PinnedFamily::names(), vec!["runtime", "rccl"]);
    }

    #[test]
    fn each_family_knows_its_own_installed_packages() {
        use crate::host::status::StatusEntry;
        let entry = |fields: &[(&str, &str)]| StatusEntry {
            extra: fields
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..StatusEntry::default()
        };
        let pair = entry(&[(super::super::COMMIT_FIELD, "c")]);
        let rccl = entry(&[
            (super::super::COMMIT_FIELD, "c"),
            (super::super::FAMILY_FIELD, "rccl"),
        ]);
        let stock = entry(&[]);
        assert!(super::super::is_ours_of(&pair, &RUNTIME));
        assert!(!super::super::is_ours_of(&pair, &RCCL));
        assert!(super::super::is_ours_of(&rccl, &RCCL));
        assert!(!super::super::is_ours_of(&rccl, &RUNTIME));
        assert!(!super::super::is_ours_of(&stock, &RUNTIME));
        assert!(!super::super::is_ours_of(&stock, &RCCL));
    }

    #[test]
    fn markers_of_two_families_never_collide() {
        let amd = super::super::RuntimeLayout::versioned_prefix("/opt/rocm-7.2.4");
        let deb = super::super::RuntimeLayout::multiarch("/usr/lib/x86_64-linux-gnu");
        assert_eq!(
            amd.family_marker_path(&RUNTIME, "amd64"),
            amd.marker_path("amd64"),
            "the pair's marker stays where it was"
        );
        assert_eq!(
            deb.family_marker_path(&RUNTIME, "amd64"),
            deb.marker_path("amd64")
        );
        assert_eq!(
            amd.family_marker_path(&RCCL, "amd64"),
            "/opt/rocm-7.2.4/.info/rocm-pin-rccl.json"
        );
        assert_eq!(
            deb.family_marker_path(&RCCL, "amd64"),
            "/var/lib/rocm-pin/marker/rccl/amd64.json"
        );
        // The pair's marker reader does not take RCCL's for its own.
        assert!(!super::super::is_marker_path(
            &amd.family_marker_path(&RCCL, "amd64")
        ));
        assert!(!super::super::is_marker_path(
            &deb.family_marker_path(&RCCL, "amd64")
        ));
    }
}
