//! The status reader's error: a value read inside a root that a sound root cannot hold.

use std::path::PathBuf;

/// A value read from a file inside a root (a `Package:` name, an md5sums path, a marker
/// key) is not one a sound root can hold, so it is never used as a path (exit 2).
#[derive(Debug, thiserror::Error)]
#[error("{} (in root {}): {why}: {value:?}; refused", file.display(), root.display())]
pub struct BadRootValue {
    pub root: PathBuf,
    /// The in-root file the value was read from.
    pub file: PathBuf,
    pub value: String,
    pub why: &'static str,
}
