//! ROCm as Python wheels: `package --wheels` (our `rocm-sdk-core` wheel), `install --venv`
//! and `rollback --venv` (offline, with the venv's pip), and the pin they write for pip and
//! uv, which `verify --venv` checks.

pub mod install;
pub mod package;
pub mod pin;
pub mod rebuild;

pub use install::{install_venv, rollback_venv, VenvInstall};
pub use package::{package_wheels, WheelPackageRequest, WrittenWheel};
pub use pin::{check_pin, PinLayout, PinReport};
