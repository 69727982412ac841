//! Package names: our replacements' (`<stock>-<suffix>`) and the stock runtime packages' of
//! each flavour (per half, or per library as Debian Policy 8.1 names them).

use super::families::{Half, LibraryFamily, FAMILIES};
use super::flavour::{StockFlavour, StockNaming, STOCK_FLAVOURS};

/// Default suffix: replacement packages are named `<stock>-<suffix>`.
pub const DEFAULT_SUFFIX: &str = "pinned";

/// `hip-runtime-amd` + `pinned` → `hip-runtime-amd-pinned`.
pub fn replacement_name(stock_name: &str, suffix: &str) -> String {
    format!("{stock_name}-{suffix}")
}

/// What a stock runtime package's name says about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StockPackageName {
    pub flavour: StockFlavour,
    pub half: Half,
    /// The one library family a per-library package ships (None for a per-half package).
    pub family: Option<&'static LibraryFamily>,
}

/// The Debian Policy 8.1 package name of a shared library: `libamdhip64` + `7` →
/// `libamdhip64-7`, `libhiprtc` + `7` → `libhiprtc7`.
pub fn per_library_package_name(stem: &str, soname_major: &str) -> String {
    if stem.ends_with(|c: char| c.is_ascii_digit()) {
        format!("{stem}-{soname_major}")
    } else {
        format!("{stem}{soname_major}")
    }
}

/// Is `name` a stock runtime package of some flavour, and of which half? Only the runtime
/// packages themselves: never `-dev`, `-asan`, `-tests` or our `-<suffix>` replacements.
pub fn stock_package_by_name(name: &str) -> Option<StockPackageName> {
    STOCK_FLAVOURS.iter().find_map(|spec| match spec.naming {
        StockNaming::PerHalf { hsa, hip } => [(Half::Hsa, hsa), (Half::Hip, hip)]
            .into_iter()
            .find(|(_, base)| {
                name.strip_prefix(base).is_some_and(|rest| {
                    rest.is_empty() || rest.starts_with(|c: char| c.is_ascii_digit())
                }) && !name.contains("asan")
            })
            .map(|(half, _)| StockPackageName {
                flavour: spec.flavour,
                half,
                family: None,
            }),
        StockNaming::PerLibrary => FAMILIES
            .iter()
            .find(|f| {
                let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
                name.strip_prefix(f.stem).is_some_and(|rest| {
                    let major = if f.stem.ends_with(|c: char| c.is_ascii_digit()) {
                        rest.strip_prefix('-')
                    } else {
                        Some(rest)
                    };
                    major.is_some_and(digits)
                })
            })
            .map(|f| StockPackageName {
                flavour: spec.flavour,
                half: f.half,
                family: Some(f),
            }),
    })
}

#[cfg(test)]
#[path = "package_names_tests.rs"]
mod tests;
