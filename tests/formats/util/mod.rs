//! Shared by the format tests: .deb trees and dpkg's view of them (deb), ELF fixtures and readelf's view (elf).

pub mod deb;
pub mod elf;
pub mod fuzz;

use std::path::PathBuf;

pub use rocm_pin_testkit::cache_dir;

/// The rocm-pin binary under test.
pub fn bin() -> PathBuf {
    rocm_pin_testkit::rocm_pin_bin!()
}
