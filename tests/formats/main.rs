//! The format layer against the real tools: .deb reading and writing (dpkg-deb, dpkg), control files and relations (apt, dpkg), version ordering (dpkg --compare-versions), ELF reading (readelf, gcc, cross binutils), and the fuzzers.
//!
//! One test binary per area (`cargo test --test formats`); a module per former test file.

mod util;

mod control_real;
mod control_relations;
mod control_set;
mod deb_bad;
mod deb_control_dir;
mod deb_dpkg;
mod deb_fuzz;
mod deb_hostile;
mod deb_real;
mod deb_threads;
mod elf_cross;
mod elf_debian;
mod elf_fuzz;
mod elf_gcc;
mod repo_fuzz;
mod root_fuzz;
mod version_vs_dpkg;
