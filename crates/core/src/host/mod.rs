//! Host state: the only place that reads the dpkg database, apt configuration and
//! preferences, or runs apt-get/dpkg/ldconfig. Every function takes the root it works on
//! (`/` on a real host, a chroot directory in tests), so nothing here assumes the live system.
//! apt-get and dpkg themselves change the live system only: install, adopt and rollback judge
//! any root, and refuse to run them on a root that is not `/` before anything changes
//! (`install::live_system_only`).

pub mod apt;
pub mod dirwalk;
pub mod dpkgdb;
pub(crate) mod dpkgfmt;
mod error;
pub(crate) mod excludes;
pub(crate) mod hold;
pub(crate) mod hold_offered;
pub mod layout;
pub mod ldcache;
pub mod ldsearch;
pub mod loader;
pub mod repack;
pub mod root;
pub mod shadow;
pub mod status;

pub(crate) use error::refused;
pub use error::HostError;
