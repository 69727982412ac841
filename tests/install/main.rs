//! Installing what we build and running what users run: `rocm-pin install` under every apt configuration, the downstream scenarios, day-two operations, the README's first hour, `verify` on a fake root, pipes, `rocm-pin demo`, and the docs' runnable blocks (docs/try.md's on each kind of host). The whole chain (util) is made once for this binary.
//!
//! One test binary per area (`cargo test --test install`); a module per former test file.

mod util;

mod advice;
mod advice_debian;
mod aftercare;
mod cli_pipes;
mod day2;
mod debian_flavour;
mod demo;
mod downstream;
mod exit_status;
mod first_hour;
mod guard;
mod guard_binary;
mod hostile_root;
mod marks;
mod matrix;
mod needs_root;
mod rccl_debian;
mod rccl_family;
mod rccl_pair;
mod read_once;
mod runnable_docs;
mod shadow_runtimes;
mod try_doc;
mod update_in_place;
mod verify_fake_root;
