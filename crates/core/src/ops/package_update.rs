//! Packaging on a host that already runs our replacements (a new commit, or a new stock upload
//! of the same release): the stock the replacements are made against is no longer installed —
//! ours replaced it — so its facts come from the stock .debs `rocm-pin install` kept in the
//! state directory, and the target's files owned by our installed packages are ours to
//! upgrade, not a conflict.

use std::path::PathBuf;

use crate::host::root::Root;
use crate::rocm;

/// On a root that runs the pair of ours: the stock .debs install kept (one per replaced
/// package, named by the marker), or a refusal naming the missing ones and how to get them.
/// None on a root without ours (the stock is installed: read it from the dpkg database).
pub(crate) fn kept_stock_of_running_pin(root: &Root) -> anyhow::Result<Option<Vec<PathBuf>>> {
    let entries = rocm::read_status(root)?;
    let Some((ours, marker)) = super::rollback::installed_pin(root, &entries)? else {
        return Ok(None);
    };
    let Some(marker) = marker else {
        return Err(super::plan::refused(format!(
            "{} of ours {} installed but the provenance marker is missing, so the stock they replace is unknown; \
             reinstall them (`rocm-pin install`) first, or give the stock packages with --stock-deb",
            ours.iter().map(|e| e.package.as_str()).collect::<Vec<_>>().join(", "),
            if ours.len() == 1 { "is" } else { "are" },
        )));
    };
    super::rollback::kept_stock_debs(root, &marker).map(Some)
}
