//! `rocm-pin package` and what it is judged against: the stand-in stock sets and their chroots, the packages' contents and relations (dpkg, apt, lintian), refusals, rocm-pin's own .deb, and the apt repositories `rocm-pin repo` publishes.
//!
//! One test binary per area (`cargo test --test package`); a module per former test file.

mod util;

mod chroot;
mod debian_abi;
mod debian_downstream;
mod debian_stock;
mod debs;
mod rccl;
mod rccl_chroot;
mod refusals;
mod repo_apt;
mod repo_hostile;
mod repo_pinned;
mod repo_publish;
mod self_package;
mod standin_chroot;
mod standin_debs;
