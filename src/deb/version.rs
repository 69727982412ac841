//! Debian version numbers: `[epoch:]upstream[-revision]`, ordered exactly as
//! `dpkg --compare-versions` orders them (including `~` sorting before everything).

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

#[derive(Debug, Clone)]
pub struct Version {
    pub epoch: u32,
    pub upstream: String,
    /// Empty when the version has no `-revision` part.
    pub revision: String,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("invalid version {input:?}: {reason}")]
pub struct VersionError {
    pub input: String,
    pub reason: String,
}

impl FromStr for Version {
    type Err = VersionError;
    /// Validates as dpkg does for a binary package's Version field (parseversion()).
    fn from_str(_s: &str) -> Result<Self, Self::Err> {
        todo!("deb::version: parse")
    }
}

impl fmt::Display for Version {
    fn fmt(&self, _f: &mut fmt::Formatter<'_>) -> fmt::Result {
        todo!("deb::version: display (round-trips the parsed input)")
    }
}

impl Ord for Version {
    fn cmp(&self, _other: &Self) -> Ordering {
        todo!("deb::version: dpkg ordering")
    }
}
impl PartialOrd for Version {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl PartialEq for Version {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Version {}

/// Compare two version strings; errors if either is invalid.
pub fn compare(a: &str, b: &str) -> Result<Ordering, VersionError> {
    Ok(a.parse::<Version>()?.cmp(&b.parse::<Version>()?))
}
