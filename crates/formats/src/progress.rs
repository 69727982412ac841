//! Progress reporting. Library code never prints: it reports to a [`Listener`], and the caller
//! chooses the implementation (a terminal spinner, plain lines, or nothing at all: [`Silent`]).

use std::time::{Duration, Instant};

/// Receives the events of long work (steps, notes, warnings); every method defaults to nothing.
pub trait Listener: Send + Sync {
    /// A named step begins (e.g. "write data.tar.xz").
    fn step_started(&self, _name: &str) {}
    /// The step ended after `elapsed`; `ok` is false when it failed.
    fn step_finished(&self, _name: &str, _elapsed: Duration, _ok: bool) {}
    /// An informational line a person would want to see.
    fn info(&self, _message: &str) {}
    /// Something worth attention that does not stop the work.
    fn warn(&self, _message: &str) {}
}

/// Says nothing. For `--json`, `--quiet` and tests.
#[derive(Default)]
pub struct Silent;
impl Listener for Silent {}

/// Run `f` as a named step, reporting start, end and elapsed time to `listener`.
pub fn step<T, E>(
    listener: &dyn Listener,
    name: &str,
    f: impl FnOnce() -> Result<T, E>,
) -> Result<T, E> {
    listener.step_started(name);
    let start = Instant::now();
    let result = f();
    listener.step_finished(name, start.elapsed(), result.is_ok());
    result
}
