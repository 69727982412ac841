//! The pins: each pin file our packages ship pins its stock package below 0, and apt itself
//! (`apt-cache policy`) sees no candidate for the stock names.

use std::collections::BTreeMap;
use std::path::Path;

use super::model::{Checks, VerifyOptions};
use crate::host::apt;
use crate::host::layout::StateLayout;
use crate::host::root::{FileKind, Root};
use crate::host::status::StatusEntry;
use crate::ops::ourdebs;
use crate::rocm;

pub(super) fn check_pins(
    opts: &VerifyOptions,
    marker: &rocm::Marker,
    by_name: &BTreeMap<&str, &StatusEntry>,
    policy: Option<anyhow::Result<Vec<apt::Policy>>>,
    c: &mut Checks,
) {
    check_pin_files(&opts.root, marker, by_name, c);
    if let Some(policy) = policy {
        check_pins_effective(marker, policy, c);
    }
}

/// Each pin file our packages ship pins its stock package below 0.
fn check_pin_files(
    root: &Root,
    marker: &rocm::Marker,
    by_name: &BTreeMap<&str, &StatusEntry>,
    c: &mut Checks,
) {
    for r in &marker.replaced {
        let pin = StateLayout::pin_file(&r.package);
        let res = root
            .read_to_string(&pin, FileKind::Config)
            .map_err(anyhow::Error::from)
            .and_then(|t| apt::parse_preferences(&t));
        match res {
            Ok(stanzas) => {
                let ok = stanzas.iter().any(|s| {
                    s.packages.iter().any(|p| p == &r.stock_name) && s.priority < 0
                });
                let owned = by_name
                    .get(r.package.as_str())
                    .is_some_and(|e| e.conffiles.iter().any(|(p, _)| Path::new(p) == pin));
                c.add(
                    "pin-file",
                    &pin.display().to_string(),
                    ok,
                    if ok {
                        format!(
                            "pins {} below 0{}",
                            r.stock_name,
                            if owned {
                                format!(" (conffile of {})", r.package)
                            } else {
                                String::new()
                            }
                        )
                    } else {
                        format!("does not pin {} to a negative priority", r.stock_name)
                    },
                );
            }
            Err(e) => c.add(
                "pin-file",
                &pin.display().to_string(),
                false,
                format!(
                    "missing or unreadable ({e}); restore it with `{}` (reinstalls {} with --force-confmiss)",
                    ourdebs::reinstall_command(root),
                    r.package
                ),
            ),
        }
    }
}

/// Effective: apt itself must see no candidate for the stock names.
fn check_pins_effective(
    marker: &rocm::Marker,
    policy: anyhow::Result<Vec<apt::Policy>>,
    c: &mut Checks,
) {
    let names: Vec<String> = marker
        .replaced
        .iter()
        .map(|r| r.stock_name.clone())
        .collect();
    match policy {
        Err(e) => c.add_environment_error("pin-effective", format!("{e:#}")),
        Ok(pols) => {
            for n in &names {
                match pols.iter().find(|p| &p.package == n) {
                    None => c.add(
                        "pin-effective",
                        n,
                        true,
                        "apt knows no version of it in any source",
                    ),
                    Some(p) if p.is_pinned_away() => c.add(
                        "pin-effective",
                        n,
                        true,
                        if p.versions.is_empty() {
                            "no candidate (no version in any configured source)".to_string()
                        } else {
                            format!(
                                "no candidate; {} version(s) at priority -1 in apt's view",
                                p.versions.len()
                            )
                        },
                    ),
                    Some(p) => c.add(
                        "pin-effective",
                        n,
                        false,
                        format!(
                            "apt would install {} (versions: {}); the pin in {} is not in effect",
                            p.candidate.as_deref().unwrap_or("(none)"),
                            p.versions
                                .iter()
                                .map(|(v, pr)| format!("{v} @{pr}"))
                                .collect::<Vec<_>>()
                                .join(", "),
                            StateLayout::pin_file(&format!("{n}-*")).display()
                        ),
                    ),
                }
            }
        }
    }
}
