//! Progress reporting. Library code never prints: it reports to a [`Listener`], and the CLI
//! chooses the implementation (a terminal spinner, plain lines, or nothing for `--json`).

use std::sync::Mutex;
use std::time::{Duration, Instant};

// The listener and the step runner live with the formats, whose writers report to them.
pub use pkgformats::progress::{step, Listener, Silent};

/// Plain lines on stderr, one per event; used when stderr is not a terminal (CI logs).
#[derive(Default)]
pub struct Lines;
impl Listener for Lines {
    fn step_started(&self, name: &str) {
        errln!("==> {name}");
    }
    fn step_finished(&self, name: &str, elapsed: Duration, ok: bool) {
        let word = if ok { "done" } else { "FAILED" };
        errln!("    {name}: {word} in {:.1}s", elapsed.as_secs_f64());
    }
    fn info(&self, message: &str) {
        errln!("    {message}");
    }
    fn warn(&self, message: &str) {
        errln!("warning: {message}");
    }
}

/// An indicatif spinner per step with the elapsed time; used on a terminal.
pub struct Spinner {
    current: Mutex<Option<(indicatif::ProgressBar, Instant)>>,
}

impl Default for Spinner {
    fn default() -> Self {
        Spinner {
            current: Mutex::new(None),
        }
    }
}

impl Listener for Spinner {
    fn step_started(&self, name: &str) {
        let bar = indicatif::ProgressBar::new_spinner();
        bar.set_style(
            indicatif::ProgressStyle::with_template("{spinner} {msg} [{elapsed}]")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
        );
        bar.set_message(name.to_string());
        bar.enable_steady_tick(Duration::from_millis(120));
        *self.current.lock().unwrap_or_else(|e| e.into_inner()) = Some((bar, Instant::now()));
    }
    fn step_finished(&self, name: &str, elapsed: Duration, ok: bool) {
        if let Some((bar, _)) = self
            .current
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        {
            let word = if ok { "done" } else { "FAILED" };
            bar.finish_with_message(format!("{name}: {word} in {:.1}s", elapsed.as_secs_f64()));
        }
    }
    fn info(&self, message: &str) {
        match &*self.current.lock().unwrap_or_else(|e| e.into_inner()) {
            Some((bar, _)) => bar.println(format!("    {message}")),
            None => errln!("    {message}"),
        }
    }
    fn warn(&self, message: &str) {
        match &*self.current.lock().unwrap_or_else(|e| e.into_inner()) {
            Some((bar, _)) => bar.println(format!("warning: {message}")),
            None => errln!("warning: {message}"),
        }
    }
}

/// The listener the CLI uses: a spinner on a terminal, plain lines otherwise, nothing when quiet.
pub fn for_cli(quiet: bool) -> Box<dyn Listener> {
    use std::io::IsTerminal;
    if quiet {
        Box::new(Silent)
    } else if std::io::stderr().is_terminal() {
        Box::new(Spinner::default())
    } else {
        Box::new(Lines)
    }
}
