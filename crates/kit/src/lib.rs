//! What the demo and the tests share, kept out of the product library (`rocm_pin_core`): chroot
//! sandboxes made from cached images, the stand-in ROCm runtime and stock package set built
//! from C sources, the downstream scenarios (data, in `testdata/scenarios.json`), and the demo
//! that runs them all in a sandbox.

#![warn(clippy::too_many_lines)]

pub mod demo;
pub mod sandbox;
pub mod standin;
