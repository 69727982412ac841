//! The dpkg status as rocm-pin reads it: dpkg's fields plus the pin's own ([`PIN_FIELDS`]).

use crate::host::root::Root;
use crate::host::status::{self, StatusEntry};

use super::pin::{COMMIT_FIELD, FAMILY_FIELD, PATCHES_FIELD, PIN_FIELDS};

/// The dpkg status file under `root`, keeping [`PIN_FIELDS`].
pub fn read_status(root: &Root) -> anyhow::Result<Vec<StatusEntry>> {
    status::read_status_with(root, &PIN_FIELDS)
}

/// The dpkg status file keeping [`PIN_FIELDS`] and `Depends`: what install and status read
/// once for the gate, the stock match, the release hold and the screen.
pub fn read_status_with_depends(root: &Root) -> anyhow::Result<Vec<StatusEntry>> {
    status::read_status_with(
        root,
        &[COMMIT_FIELD, PATCHES_FIELD, FAMILY_FIELD, "Depends"],
    )
}
