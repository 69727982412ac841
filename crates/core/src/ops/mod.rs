//! Operations: what a subcommand does, above the layers it uses. Each reads and writes a host
//! only through `host`, knows ROCm only through `rocm`, and writes packages only through `deb`.

pub mod adopt;
pub(crate) mod automarks;
pub mod build;
#[cfg(test)]
pub(crate) mod fakehost;
pub(crate) mod family_marker;
pub mod family_rollback;
pub mod family_status;
pub(crate) mod family_stock;
pub mod guard;
pub mod install;
pub mod install_family;
pub(crate) mod localrepo;
pub(crate) mod ourdebs;
pub mod package;
pub(crate) mod package_update;
pub(crate) mod pinmove;
pub mod plan;
pub(crate) mod privilege;
pub mod repo;
pub(crate) mod restart_list;
pub mod rollback;
pub mod stale_maps;
pub mod status_report;
pub(crate) mod stock_upload;
pub mod verify;
pub mod verify_abi;
pub(crate) mod verify_family;
pub(crate) mod verify_hold;
pub mod verify_image;
pub mod verify_shadow;
pub mod verify_wheels;
pub mod wheels;
pub mod workflow;
