//! The provenance marker our HSA package ships: found through our packages' file lists, read
//! inside the root, refused when a path in it is not a clean in-root path; and each package's
//! patch-series field against it.

use std::collections::BTreeMap;

use super::model::Checks;
use crate::exit::usage;
use crate::host::root::{unclean_in_root_path, FileKind, Root};
use crate::host::status::{self, StatusEntry};
use crate::ops::ourdebs;
use crate::rocm;

/// Our packages' file lists, and the provenance marker our HSA package ships (found through
/// them): `(lists, marker path, marker)`.
pub(super) fn read_marker(
    root: &Root,
    family: &rocm::PinnedFamily,
    ours: &[&StatusEntry],
    c: &mut Checks,
) -> (
    BTreeMap<String, Vec<String>>,
    Option<String>,
    Option<rocm::Marker>,
) {
    let mut lists: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for e in ours {
        match status::package_list(root, &e.package, &e.architecture) {
            Ok(l) => {
                lists.insert(e.package.clone(), l);
            }
            Err(err) => c.add("packages", &e.package, false, format!("{err:#}")),
        }
    }
    let marker_path = lists
        .values()
        .flatten()
        .find(|p| crate::ops::family_marker::is_marker_of(family, p))
        .cloned();
    let marker = match &marker_path {
        None => {
            c.add(
                "marker",
                "",
                false,
                format!(
                    "no installed package ships the provenance marker {}; reinstall ours: `{}`",
                    ourdebs::marker_path_shown(ours),
                    ourdebs::reinstall_command(root)
                ),
            );
            None
        }
        Some(p) => match root
            .read_file(p, FileKind::Marker)
            .map_err(anyhow::Error::from)
            .and_then(|b| serde_json::from_slice::<rocm::Marker>(&b).map_err(Into::into))
            .and_then(|m| unclean_marker_path(&m).map_or(Ok(m), Err))
        {
            Ok(m) => {
                c.add("marker", p, true, marker_summary(&m));
                Some(m)
            }
            Err(e) => {
                c.add(
                    "marker",
                    p,
                    false,
                    format!(
                        "missing or unreadable: {e}; reinstall ours: `{}`",
                        ourdebs::reinstall_command(root)
                    ),
                );
                None
            }
        },
    };
    (lists, marker_path, marker)
}

/// The first path in the marker (a library, an alias, a `files` key) that is not a clean
/// absolute in-root path, as the error that fails the marker check.
fn unclean_marker_path(m: &rocm::Marker) -> Option<anyhow::Error> {
    let paths = m
        .libraries
        .iter()
        .flat_map(|l| std::iter::once(&l.path).chain(&l.aliases))
        .chain(m.files.keys());
    paths.into_iter().find_map(|p| {
        unclean_in_root_path(p).map(|why| {
            usage(format!(
                "{why}: {p:?} in the marker; refused (a hostile marker)"
            ))
        })
    })
}

/// The marker line of the report: commit, package suffix, and the patch series when there is
/// one. A report line only (verify's text and its JSON `detail`), parsed by nothing; the
/// marker file itself keeps its JSON key `flavor`.
fn marker_summary(m: &rocm::Marker) -> String {
    let mut text = format!("commit {} suffix {}", m.commit, m.suffix);
    if !m.patches.is_empty() {
        let names: Vec<String> = m
            .patches
            .iter()
            // By characters: the marker is the root's, its "sha256" any text (a cut by bytes
            // panicked inside a multi-byte character).
            .map(|p| {
                let short: String = p.sha256.chars().take(12).collect();
                format!("{} ({short})", p.name)
            })
            .collect();
        text.push_str(&format!(" + patches {}", names.join(", ")));
    }
    if m.backport_check_skipped {
        text.push_str("; built with --no-backport-check");
    }
    text
}

/// Each package's patch-series field must say what the marker says (both absent is fine).
pub(super) fn check_patches_field(e: &StatusEntry, m: &rocm::Marker, c: &mut Checks) {
    let field = e.extra.get(rocm::PATCHES_FIELD).cloned();
    let want = rocm::patches_field(&m.patches);
    if field.is_none() && want.is_none() {
        return;
    }
    let ok = field == want;
    c.add(
        "patches",
        &e.package,
        ok,
        if ok {
            format!("{} = marker series", rocm::PATCHES_FIELD)
        } else {
            format!(
                "{} is {:?} but the marker says {:?}; reinstall both replacement packages",
                rocm::PATCHES_FIELD,
                field.unwrap_or_default(),
                want.unwrap_or_default()
            )
        },
    );
}
