//! `--mode`'s values: the command line's spelling of [`rocm_pin_core::rocm::GateMode`] (the library
//! knows nothing of clap).

use rocm_pin_core::rocm::GateMode;

/// How `install` treats a host whose ROCm version does not match.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ModeArg {
    /// No match → refuse, non-zero exit (the default: fail closed).
    Require,
    /// No match → say why, write a skip record, exit 0.
    Auto,
    /// Do nothing, say so, exit 0.
    Off,
}

impl From<ModeArg> for GateMode {
    fn from(mode: ModeArg) -> Self {
        match mode {
            ModeArg::Require => GateMode::Require,
            ModeArg::Auto => GateMode::Auto,
            ModeArg::Off => GateMode::Off,
        }
    }
}
