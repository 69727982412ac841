//! The commit pin moves: a newer pin replaces the installed one through apt (same package
//! names, higher version); going back to an older pin is an explicit decision.

use std::cmp::Ordering;

use super::status::StatusEntry;
use crate::error::usage;
use crate::rocm;

/// Refuse installing `version` over the installed `ours` when it is older: a downgrade to an
/// earlier pin must be asked for (`--allow-downgrade`), never happen because an old .deb was
/// at hand.
pub fn refuse_downgrade(ours: &StatusEntry, version: &str) -> anyhow::Result<()> {
    let order = crate::deb::version::compare(version, &ours.version).map_err(|e| {
        usage(format!(
            "cannot compare versions {version} and {}: {e}",
            ours.version
        ))
    })?;
    if order != Ordering::Less {
        return Ok(());
    }
    Err(usage(format!(
            "{} {} is installed (commit {}); the given .deb is the older {version}: that is a downgrade to an earlier commit pin. Nothing changed. If going back to that pin is what you want, run again with --allow-downgrade.",
            ours.package,
            ours.version,
            ours.extra
                .get(rocm::COMMIT_FIELD)
                .map(String::as_str)
                .unwrap_or("?")
    )))
}
