//! `rocm-pin build`: the stand-in monorepo (dry runs, patches, refusals, the stand-in build), the real ROCr and CLR/HIP build in a chroot, and `rocm-pin package` of a build's staging.
//!
//! One test binary per area (`cargo test --test build`); a module per former test file.

mod util;

mod dry_run;
mod package_from_build;
mod patches;
mod real;
mod real_debian;
mod refusals;
mod standin;
