//! The chroot sandbox the acceptance tests run in (crates/kit): mounts, users, images, and the trixie image.
//!
//! One test binary per area (`cargo test --test sandbox`); a module per former test file.

mod basic;
mod trixie;
