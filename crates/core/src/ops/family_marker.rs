//! Which pinned family a provenance marker or a .deb's control belongs to (issue 34): the
//! pair's marker is `<prefix>/.info/rocm-pin.json` or `/var/lib/rocm-pin/marker/<arch>.json`,
//! another family's is named by its record (`rocm-pin-rccl.json`, `marker/rccl/<arch>.json`);
//! a .deb of another family says so in `X-Rocm-Pin-Family`. A leaf: read by the .deb reader of
//! install, by install and by verify.

use crate::host::status::StatusEntry;
use crate::rocm::{self, families::RUNTIME, PinnedFamily};

/// Is `path` (as dpkg lists it, or a data member `./…`) where `family`'s provenance marker
/// goes: `<prefix>/.info/<marker_name>`, or `/var/lib/rocm-pin/marker/<stem><arch>.json`.
pub(crate) fn is_marker_of(family: &PinnedFamily, path: &str) -> bool {
    if family.name == RUNTIME.name {
        return rocm::is_marker_path(path);
    }
    let path = path.trim_start_matches('.');
    path.ends_with(&format!("/.info/{}", family.marker_name))
        || path
            .strip_prefix(rocm::MARKER_STATE_DIR)
            .and_then(|rest| rest.strip_prefix('/'))
            .and_then(|rest| rest.strip_prefix(family.prefixless_marker_stem))
            .and_then(|name| name.strip_suffix(".json"))
            .is_some_and(|arch| !arch.is_empty() && !arch.contains('/'))
}

/// The family whose marker `path` is, if any.
pub(crate) fn family_of_marker(path: &str) -> Option<&'static PinnedFamily> {
    rocm::families::PINNED_FAMILIES
        .iter()
        .copied()
        .find(|f| is_marker_of(f, path))
}

/// The family a .deb's control names (`X-Rocm-Pin-Family`; the runtime pair when absent).
/// A name rocm-pin does not know is refused in one line.
pub(crate) fn family_of_control(
    deb: &std::path::Path,
    control: &StatusEntry,
) -> anyhow::Result<&'static PinnedFamily> {
    match control.extra.get(rocm::FAMILY_FIELD) {
        None => Ok(&RUNTIME),
        Some(name) => PinnedFamily::by_name(name).ok_or_else(|| {
            crate::exit::usage(format!(
                "{}: {} {name:?} is not a family this rocm-pin knows ({}); use the rocm-pin that packaged it",
                deb.display(),
                rocm::FAMILY_FIELD,
                PinnedFamily::names().join(", ")
            ))
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rocm::families::RCCL;

    #[test]
    fn each_family_knows_its_marker_and_no_other() {
        let amd = rocm::RuntimeLayout::versioned_prefix("/opt/rocm-7.2.4");
        let deb = rocm::RuntimeLayout::multiarch("/usr/lib/x86_64-linux-gnu");
        for layout in [&amd, &deb] {
            for f in rocm::families::PINNED_FAMILIES {
                let p = layout.family_marker_path(f, "amd64");
                assert_eq!(family_of_marker(&p).map(|g| g.name), Some(f.name), "{p}");
                assert_eq!(
                    family_of_marker(&format!(".{p}")).map(|g| g.name),
                    Some(f.name)
                );
            }
        }
        for not in [
            "/opt/rocm-7.2.4/.info/version",
            "/var/lib/rocm-pin/marker/rccl/x/amd64.json",
            "/var/lib/rocm-pin/marker/rccl/.json",
        ] {
            assert!(!is_marker_of(&RCCL, not), "{not}");
        }
    }
}
