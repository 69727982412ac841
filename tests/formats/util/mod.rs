//! Shared by the format tests: .deb trees and dpkg's view of them (deb), ELF fixtures and readelf's view (elf).

pub mod deb;
pub mod elf;
