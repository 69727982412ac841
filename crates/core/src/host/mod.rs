//! Host state: the only place that reads the dpkg database, apt configuration and
//! preferences, or runs apt-get/dpkg/ldconfig. Every function takes the root it works on
//! (`/` on a real host, a chroot directory in tests), so nothing here assumes the live system.
//! apt-get and dpkg themselves change the live system only: install, adopt and rollback judge
//! any root, and refuse to run them on a root that is not `/` before anything changes
//! (`install::live_system_only`).

pub mod adopt;
pub mod apt;
pub mod dpkgdb;
pub mod dpkgfmt;
mod error;
pub mod excludes;
#[cfg(test)]
pub(crate) mod fakehost;
pub mod gate;
pub mod guard;
pub mod hold;
pub mod inplace;
pub mod install;
pub mod install_error;
pub mod layout;
pub mod ldcache;
pub mod loader;
pub mod localrepo;
pub mod ourdebs;
pub mod pinmove;
pub mod repack;
pub mod rollback;
pub mod root;
pub mod status;
pub mod stock_runtime;
pub mod upgrades;

pub(crate) use error::refused;
pub use error::HostError;
