//! `rocm-pin demo`: the whole chain on a machine without ROCm, with the stand-in runtime.
//!
//! 1. the chroot image (`mmdebstrap --variant=apt <suite>`, cached under the cache directory);
//! 2. `rocm-pin build` of the stand-in rocm-systems tree embedded in the binary;
//! 3. a stand-in stock ROCm 7.2.4 package set (plus a custom rccl and a newer stock release);
//! 4. `rocm-pin package` of the staging against the stock pair's .debs;
//! 5. `rocm-pin repo`: a signing key and a signed apt repository holding our packages;
//! 6. a throwaway chroot made into a stock ROCm 7.2.4 host (stock set installed through apt),
//!    the signed repository added with `signed-by=`, rocm-pin copied in;
//! 7. inside it: our packages downloaded from the signed repository and `rocm-pin install
//!    --mode require`;
//! 8. the downstream apt commands that used to put the stock runtime back (the seed's
//!    `dpkg -i --force-all` + `apt --fix-broken install` first), each followed by `rocm-pin
//!    verify` inside the chroot and the loader probe (which library the dynamic loader really
//!    maps for each soname).
//!
//! Every step is timed and recorded in a [`DemoReport`]; a failed setup step stops the chain
//! (the rest are "not run"), a failed downstream step does not stop the other downstream steps.
//! Nothing is installed on the host: everything goes into a work directory (a temporary one,
//! or `--keep DIR`) and the chroot. Only the chroot image and its unpacked tree are cached.

mod in_chroot;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

use in_chroot::*;

use crate::sandbox::{Backend, ChrootImage, Sandbox, SandboxOptions};
use crate::standin::{self, scenarios, StockRole, StockSet, StockSetSpec};
use rocm_pin_core::exit::usage;
use rocm_pin_core::ops::build::{self, BuildOptions};
use rocm_pin_core::ops::package::{self, PackageRequest, StagingInput, StockInput};
use rocm_pin_core::ops::plan::{CommitOverride, PlanOptions};
use rocm_pin_core::ops::repo::{self, RepoOptions};
use rocm_pin_core::progress::Listener;
use rocm_pin_core::rocm;

/// Where the chroot image is cached unless `--cache` says otherwise.
pub const DEFAULT_CACHE_DIR: &str = "/var/cache/rocm-pin/demo";
/// The suites the demo knows (the ones the acceptance tests run).
pub const SUITES: &[&str] = &["bookworm", "trixie"];
pub const DEFAULT_SUITE: &str = "bookworm";

#[derive(Debug, Clone)]
pub struct DemoOptions {
    /// Debian suite of the chroot (one of [`SUITES`]).
    pub suite: String,
    /// Cache directory: `chroot/<suite>-apt.tar.zst` (the layout `scripts/setup.d/20-chroot.sh`
    /// uses, so a test cache can be shared) and its unpacked tree.
    pub cache_dir: PathBuf,
    /// Leave the work directory (sources, staging, .debs, repository, logs, the chroot) here.
    pub keep: Option<PathBuf>,
    /// The rocm-pin binary copied into the chroot (normally the running one).
    pub rocm_pin: PathBuf,
}

impl DemoOptions {
    pub fn new(rocm_pin: impl Into<PathBuf>) -> Self {
        DemoOptions {
            suite: DEFAULT_SUITE.to_string(),
            cache_dir: PathBuf::from(DEFAULT_CACHE_DIR),
            keep: None,
            rocm_pin: rocm_pin.into(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum StepStatus {
    Ok,
    Failed,
    /// An earlier step failed, so this one was not attempted.
    NotRun,
}

impl StepStatus {
    pub fn word(self) -> &'static str {
        match self {
            StepStatus::Ok => "ok",
            StepStatus::Failed => "FAILED",
            StepStatus::NotRun => "not run",
        }
    }
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct StepRecord {
    pub name: String,
    pub status: StepStatus,
    pub seconds: f64,
    /// Why it failed (with where and how to look further), None when it did not.
    pub error: Option<String>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct DemoReport {
    pub suite: String,
    /// Always true: the runtime built and installed is the stand-in, not AMD's.
    pub standin: bool,
    /// The stand-in commit that was built (None if the build did not get that far).
    pub commit: Option<String>,
    pub steps: Vec<StepRecord>,
    pub total_seconds: f64,
    /// Where the work directory and the chroot were left (`--keep`).
    pub kept: Option<PathBuf>,
    /// The chroot root inside `kept`.
    pub kept_chroot: Option<PathBuf>,
    /// Stopped by SIGINT/SIGTERM (the steps after it were not run).
    pub interrupted: bool,
    /// The signal that stopped it (the exit code is 128+signal: 130 for Ctrl-C).
    #[serde(skip)]
    pub interrupt_signal: Option<i32>,
}

impl DemoReport {
    pub fn ok(&self) -> bool {
        self.steps.iter().all(|s| s.status == StepStatus::Ok)
    }

    pub fn failed(&self) -> impl Iterator<Item = &StepRecord> {
        self.steps.iter().filter(|s| s.status == StepStatus::Failed)
    }

    /// The end-of-run table: step, result, time.
    pub fn table(&self) -> String {
        let width = self
            .steps
            .iter()
            .map(|s| s.name.chars().count())
            .max()
            .unwrap_or(4)
            .max(4);
        let mut out = format!("{:<width$}  {:<7}  {:>7}\n", "step", "result", "time");
        for s in &self.steps {
            let time = if s.status == StepStatus::NotRun {
                "-".to_string()
            } else {
                format!("{:.1}s", s.seconds)
            };
            out.push_str(&format!(
                "{:<width$}  {:<7}  {:>7}\n",
                s.name,
                s.status.word(),
                time
            ));
        }
        out.push_str(&format!(
            "{:<width$}  {:<7}  {:>7}\n",
            "total",
            if self.ok() { "ok" } else { "FAILED" },
            format!("{:.1}s", self.total_seconds)
        ));
        out
    }
}

/// What the demo could not show on this machine and how to do it for real.
pub fn standin_notice(commit: Option<&str>) -> String {
    format!(
        "This demo used the STAND-IN runtime, not AMD's: tiny C libraries with the real library \
         names, sonames and the backport symbol ({sym}), built by `rocm-pin build` from the tree \
         embedded in rocm-pin (tests/fixtures/rocm-systems{commit}), packaged against a stand-in \
         stock ROCm {ver} package set, in a throwaway chroot. No GPU was used and no ROCm was \
         installed on this machine.",
        sym = rocm::BACKPORT_SYMBOL,
        ver = rocm::TARGET_ROCM_VERSION,
        commit = commit
            .map(|c| format!(", stand-in commit {c}"))
            .unwrap_or_default(),
    )
}

/// The same chain on a real ROCm 7.2.4 host (or in a Dockerfile on the ROCm 7.2.4 image): the
/// README's block, command for command (tests/install/first_hour.rs holds the two together), with
/// `--guard` so a later apt command that reverts the runtime fails loudly.
pub fn real_host_commands() -> Vec<String> {
    vec![
        format!(
            "rocm-pin build --source {} --out staging/   # pinned commit by default",
            rocm::PIN_REPOSITORY.trim_end_matches(".git"),
        ),
        "rocm-pin package --staging staging/ --out debs/".to_string(),
        "sudo rocm-pin install debs/*.deb --guard".to_string(),
        "rocm-pin verify    # last, after every other apt command (exit 0 = patched runtime in use)"
            .to_string(),
        "# many hosts/images: rocm-pin repo keygen --out repo-key.asc && rocm-pin repo \
         debs/*.deb --sign-key repo-key.asc --out /srv/rocm-pin-repo"
            .to_string(),
    ]
}

/// Refusals that must come before anything is created: not root, an unknown suite, a `--keep`
/// directory that is not new or empty. Exit 2 (usage/environment).
pub fn check_preconditions(opts: &DemoOptions) -> anyhow::Result<()> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err(usage(
            "rocm-pin demo needs root: it unpacks a throwaway chroot and runs apt/dpkg inside it \
             (nothing is installed on this host). Run it as root: `sudo scripts/demo` from the \
             source tree, or `sudo rocm-pin demo`.",
        ));
    }
    if !SUITES.contains(&opts.suite.as_str()) {
        return Err(usage(format!(
            "unknown suite {:?}: the demo runs in one of {}",
            opts.suite,
            SUITES.join(", ")
        )));
    }
    if let Some(keep) = &opts.keep {
        if keep.exists() {
            let empty = keep.is_dir()
                && std::fs::read_dir(keep)
                    .with_context(|| format!("reading --keep directory {}", keep.display()))?
                    .next()
                    .is_none();
            if !empty {
                return Err(usage(format!(
                    "--keep {} exists and is not an empty directory; give a new directory \
                     (the demo never writes into one that holds something)",
                    keep.display()
                )));
            }
        }
    }
    if !opts.rocm_pin.is_file() {
        return Err(usage(format!(
            "the rocm-pin binary {} to copy into the chroot does not exist",
            opts.rocm_pin.display()
        )));
    }
    Ok(())
}

/// Reports a library call's own steps as indented info lines, so only the demo's steps are
/// steps for the caller's listener (a terminal spinner shows one step at a time). Quiet: only
/// warnings and failed sub-steps (the stock set and the packaging report every file).
struct Nested<'a> {
    listener: &'a dyn Listener,
    quiet: bool,
}

impl Listener for Nested<'_> {
    fn step_finished(&self, name: &str, elapsed: Duration, ok: bool) {
        if self.quiet && ok {
            return;
        }
        let word = if ok { "done" } else { "FAILED" };
        self.listener.info(&format!(
            "  {name}: {word} in {:.1}s",
            elapsed.as_secs_f64()
        ));
    }
    fn info(&self, message: &str) {
        if !self.quiet {
            self.listener.info(&format!("  {message}"));
        }
    }
    fn warn(&self, message: &str) {
        self.listener.warn(message);
    }
}

/// Ctrl-C / SIGTERM during the demo: instead of dying with an overlay mounted and a chroot left
/// in /tmp, remember it, start no further step (a child in the terminal's process group gets
/// the SIGINT itself, so the running step fails), and clean up as on any failure. signal-hook
/// sets the flag from its handler (an atomic store, async-signal-safe). On drop our actions are
/// unregistered; signal-hook's own handler stays installed, so a signal after the demo is
/// ignored rather than fatal — harmless, as the process ends right after.
struct InterruptGuard {
    /// One flag per signal, so the run can exit as that signal would have ended it.
    flags: Vec<(i32, Arc<AtomicBool>)>,
    registered: Vec<signal_hook::SigId>,
}

impl InterruptGuard {
    fn install() -> InterruptGuard {
        let flags: Vec<(i32, Arc<AtomicBool>)> =
            [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM]
                .into_iter()
                .map(|signal| (signal, Arc::new(AtomicBool::new(false))))
                .collect();
        let registered = flags
            .iter()
            .filter_map(|(signal, flag)| {
                signal_hook::flag::register(*signal, Arc::clone(flag)).ok()
            })
            .collect();
        InterruptGuard { flags, registered }
    }

    /// The first signal received, if any.
    fn signal(&self) -> Option<i32> {
        self.flags
            .iter()
            .find(|(_, flag)| flag.load(Ordering::SeqCst))
            .map(|(signal, _)| *signal)
    }

    fn interrupted(&self) -> bool {
        self.signal().is_some()
    }
}

impl Drop for InterruptGuard {
    fn drop(&mut self) {
        for id in self.registered.drain(..) {
            signal_hook::low_level::unregister(id);
        }
    }
}

/// Runs and records steps. Once `blocked`, further steps are recorded as not run.
struct Steps<'a> {
    listener: &'a dyn Listener,
    interrupt: &'a InterruptGuard,
    records: Vec<StepRecord>,
    blocked: bool,
}

impl<'a> Steps<'a> {
    /// Run `f` as a step. A setup step (`fatal`) that fails blocks every later step.
    fn run<T>(
        &mut self,
        name: &str,
        fatal: bool,
        f: impl FnOnce() -> anyhow::Result<T>,
    ) -> Option<T> {
        if self.interrupt.interrupted() {
            self.blocked = true;
        }
        if self.blocked {
            self.records.push(StepRecord {
                name: name.to_string(),
                status: StepStatus::NotRun,
                seconds: 0.0,
                error: None,
            });
            return None;
        }
        self.listener.step_started(name);
        let start = Instant::now();
        let result = f();
        let elapsed = start.elapsed();
        self.listener.step_finished(name, elapsed, result.is_ok());
        let (status, error, value) = match result {
            Ok(v) => (StepStatus::Ok, None, Some(v)),
            Err(e) => {
                if fatal {
                    self.blocked = true;
                }
                let mut error = format!("{e:#}");
                if self.interrupt.interrupted() {
                    error.push_str("\n(interrupted)");
                }
                (StepStatus::Failed, Some(error), None)
            }
        };
        if self.interrupt.interrupted() {
            self.blocked = true;
        }
        self.records.push(StepRecord {
            name: name.to_string(),
            status,
            seconds: elapsed.as_secs_f64(),
            error,
        });
        value
    }
}

/// The downstream commands run after `rocm-pin install`: the demo's entries of the one
/// scenario list the acceptance tests also run (under every apt solver).
fn downstream_steps(custom_deb: &str) -> Vec<scenarios::Scenario> {
    scenarios::demo_scenarios(&format!("{CUSTOM_CHROOT_DIR}/{custom_deb}"))
}

/// Run the demo. Err only for the refusals of [`check_preconditions`] (nothing was done);
/// every later failure is a failed step in the report.
pub fn run(opts: &DemoOptions, listener: &dyn Listener) -> anyhow::Result<DemoReport> {
    check_preconditions(opts)?;
    let interrupt = InterruptGuard::install();
    let started = Instant::now();
    let (work, temp) = work_dir(opts)?;
    let logs = work.join("logs");
    std::fs::create_dir_all(&logs).with_context(|| format!("creating {}", logs.display()))?;
    listener.info(&format!(
        "rocm-pin demo: the whole chain with the STAND-IN runtime in a throwaway {} chroot; \
         work directory {}, cache {}",
        opts.suite,
        work.display(),
        opts.cache_dir.display()
    ));

    let mut steps = Steps {
        listener,
        interrupt: &interrupt,
        records: Vec::new(),
        blocked: false,
    };
    let image = chroot_image_step(&mut steps, opts, listener);
    let made = make_outside(&mut steps, &work, listener);
    let commit = made.as_ref().map(|m| m.commit.clone());
    let kept_chroot = match (image, made) {
        (Some(image), Some(made)) => chroot_part(&mut steps, opts, &image, &made, &work, listener),
        _ => {
            // Record the chroot steps as not run so the table shows the whole chain.
            steps.blocked = true;
            for name in chroot_step_names() {
                steps.run(&name, true, || Ok(()));
            }
            None
        }
    };
    let report = DemoReport {
        suite: opts.suite.clone(),
        standin: true,
        commit,
        steps: steps.records,
        total_seconds: started.elapsed().as_secs_f64(),
        kept: opts.keep.as_ref().map(|_| work.clone()),
        kept_chroot,
        interrupted: interrupt.interrupted(),
        interrupt_signal: interrupt.signal(),
    };
    if let Ok(json) = serde_json::to_string_pretty(&report) {
        let _ = std::fs::write(logs.join("demo-report.json"), json);
    }
    drop(temp);
    Ok(report)
}

/// The work directory: --keep DIR, else a temporary directory removed at the end (when the
/// returned guard drops).
fn work_dir(opts: &DemoOptions) -> anyhow::Result<(PathBuf, Option<tempfile::TempDir>)> {
    match &opts.keep {
        Some(dir) => {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("creating --keep directory {}", dir.display()))?;
            let work = std::fs::canonicalize(dir)
                .with_context(|| format!("resolving --keep directory {}", dir.display()))?;
            Ok((work, None))
        }
        None => {
            let t = tempfile::Builder::new()
                .prefix("rocm-pin-demo-")
                .tempdir()
                .context("creating a temporary work directory")?;
            Ok((t.path().to_path_buf(), Some(t)))
        }
    }
}

fn chroot_image_step(
    steps: &mut Steps,
    opts: &DemoOptions,
    listener: &dyn Listener,
) -> Option<ChrootImage> {
    steps.run(&format!("chroot image ({})", opts.suite), true, || {
        let t = Instant::now();
        let image = ChrootImage::cached(&opts.suite, &opts.cache_dir).with_context(|| {
            format!(
                "the {} chroot image in {} (made once with mmdebstrap, which needs the \
                 network; install it with scripts/install-deps)",
                opts.suite,
                opts.cache_dir.display()
            )
        })?;
        listener.info(&format!(
            "{} ({:.1}s; cached for the next run)",
            image.tarball().display(),
            t.elapsed().as_secs_f64()
        ));
        Ok(image)
    })
}

/// The steps inside the chroot; with --keep, the chroot is moved into the work directory
/// afterwards and its new place returned.
fn chroot_part(
    steps: &mut Steps,
    opts: &DemoOptions,
    image: &ChrootImage,
    made: &Made,
    work: &Path,
    listener: &dyn Listener,
) -> Option<PathBuf> {
    let sandbox_opts = SandboxOptions {
        dpkg_excludes: true,
        // --keep wants a plain directory tree to leave behind, not an overlay mount.
        backend: opts.keep.as_ref().map(|_| Backend::Copy),
        ..Default::default()
    };
    let logs = work.join("logs");
    let mut sandbox = None;
    in_chroot(
        steps,
        opts,
        image,
        &sandbox_opts,
        made,
        &logs,
        listener,
        &mut sandbox,
    );
    let mut sb = sandbox?;
    opts.keep.as_ref()?;
    let base = sb.keep();
    drop(sb);
    let dest = work.join("chroot");
    match move_tree(&base.join("root"), &dest) {
        Ok(()) => {
            let _ = std::fs::remove_dir_all(&base);
            Some(dest)
        }
        Err(e) => {
            listener.warn(&format!(
                "could not move the chroot to {}: {e:#}; it is at {}",
                dest.display(),
                base.join("root").display()
            ));
            None
        }
    }
}

fn chroot_step_names() -> Vec<String> {
    let mut v = vec![
        format!(
            "chroot: stock ROCm {} host (apt)",
            rocm::TARGET_ROCM_VERSION
        ),
        "chroot: rocm-pin install --mode require (from the signed repo)".to_string(),
    ];
    v.extend(downstream_steps("").into_iter().map(|d| d.title));
    v
}

/// Steps 2–5: build, stock set, package, repository.
fn make_outside(steps: &mut Steps, work: &Path, listener: &dyn Listener) -> Option<Made> {
    let nested = &Nested {
        listener,
        quiet: true,
    };
    let spec = StockSetSpec::for_host();
    let spec = || spec.as_ref().map_err(|e| anyhow::anyhow!("{e:#}"));
    let built = steps.run("build stand-in runtime (rocm-pin build)", true, || {
        build_standin_runtime(spec()?, work, listener)
    });
    let stock = steps.run(
        &format!("stand-in stock ROCm {} set", rocm::TARGET_ROCM_VERSION),
        true,
        || build_standin_stock(spec()?, work, listener, nested),
    );
    let debs = steps.run("package replacement .debs (rocm-pin package)", true, || {
        let (Some(built), Some(stock)) = (&built, &stock) else {
            bail!("nothing to package");
        };
        package_replacements(&built.staging, &stock.stock, work, listener, nested)
    });
    let repo = steps.run("signed apt repository (rocm-pin repo)", true, || {
        let Some(debs) = &debs else {
            bail!("no packages to publish");
        };
        publish_repo(debs, work, listener, nested)
    });
    let (built, stock, debs, (repo, keyring)) = (built?, stock?, debs?, repo?);
    Some(Made {
        commit: built.commit,
        sonames: built.sonames,
        stock: stock.stock,
        custom: stock.custom,
        newer: stock.newer,
        probe: stock.probe,
        ours: debs.iter().map(|d| d.package.clone()).collect(),
        repo,
        keyring,
    })
}

/// What `rocm-pin build` made of the stand-in checkout.
struct BuiltRuntime {
    commit: String,
    /// The pair's sonames, from the manifest.
    sonames: Vec<String>,
    staging: PathBuf,
}

fn build_standin_runtime(
    spec: &StockSetSpec,
    work: &Path,
    listener: &dyn Listener,
) -> anyhow::Result<BuiltRuntime> {
    let src = work.join("src/rocm-systems");
    let commit = crate::standin::tree::write_standin_checkout(&src)?;
    listener.info(&format!(
        "stand-in rocm-systems checkout {} at commit {commit}",
        src.display()
    ));
    // The ROCm install the build compiles against: only its version file, like the
    // stock prefix (the stand-in needs no ROCm headers).
    let rocm_path = work
        .join("rocm")
        .join(spec.prefix().trim_start_matches('/'));
    let info = rocm_path.join(".info");
    std::fs::create_dir_all(&info).with_context(|| format!("creating {}", info.display()))?;
    if let Some(v) = spec.version_file_content() {
        std::fs::write(info.join("version"), v)
            .with_context(|| format!("writing {}", info.join("version").display()))?;
    }
    let opts = crate::standin::tree::accepting_standin(BuildOptions {
        commit: commit.clone(),
        rocm_path,
        ..BuildOptions::new(src.display().to_string(), work.join("staging"))
    });
    let verbose = Nested {
        listener,
        quiet: false,
    };
    let outcome = build::build(&opts, &verbose)?;
    for w in &outcome.warnings {
        listener.warn(w);
    }
    let sonames: Vec<String> = outcome
        .manifest
        .libraries
        .iter()
        .filter(|l| {
            Path::new(&l.path)
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(rocm::family_of)
                .is_some_and(|f| f.required)
        })
        .filter_map(|l| l.soname.clone())
        .collect();
    if sonames.is_empty() {
        bail!(
            "the staging {} has none of the pair's libraries",
            outcome.staging.display()
        );
    }
    listener.info(&format!(
        "staging {} (build logs in {}/logs)",
        outcome.staging.display(),
        outcome.staging.display()
    ));
    Ok(BuiltRuntime {
        commit,
        sonames,
        staging: outcome.staging,
    })
}

/// The stand-in stock sets the chroot steps use, and the loader probe.
struct StandinStock {
    stock: StockSet,
    /// The custom rccl (dpkg -i only).
    custom: StockSet,
    /// The next stock release, published mid-demo.
    newer: StockSet,
    probe: PathBuf,
}

fn build_standin_stock(
    spec: &StockSetSpec,
    work: &Path,
    listener: &dyn Listener,
    nested: &Nested,
) -> anyhow::Result<StandinStock> {
    let stock = standin::build_stock_set(spec, &work.join("stock"), nested)?;
    let custom = standin::build_stock_set(
        &spec.clone().only(&[StockRole::CustomRccl]),
        &work.join("stock-custom-rccl"),
        nested,
    )?;
    let newer = standin::build_stock_set(&spec.newer_release(), &work.join("stock-newer"), nested)?;
    let probe = standin::build_loader_probe(&work.join("probe/rocm-pin-loader-probe"))?;
    for (what, set) in [
        ("stock host", &stock),
        ("custom rccl (dpkg -i only)", &custom),
        ("newer stock release", &newer),
    ] {
        let names: Vec<String> = set
            .packages
            .iter()
            .map(|p| format!("{} {}", p.name, p.version))
            .collect();
        listener.info(&format!("{what}: {}", names.join(", ")));
    }
    listener.info(&format!(
        "stand-in .debs in {}",
        work.join("stock").display()
    ));
    Ok(StandinStock {
        stock,
        custom,
        newer,
        probe,
    })
}

fn package_replacements(
    staging: &Path,
    stock: &StockSet,
    work: &Path,
    listener: &dyn Listener,
    nested: &Nested,
) -> anyhow::Result<Vec<rocm_pin_core::deb::BuildSummary>> {
    let req = PackageRequest {
        staging: StagingInput::Dir {
            dir: staging.to_path_buf(),
            commit: CommitOverride::default(),
        },
        stock: StockInput::Debs {
            debs: vec![
                stock.require(StockRole::HsaRocr)?.deb.clone(),
                stock.require(StockRole::HipRuntime)?.deb.clone(),
            ],
            target_root: rocm_pin_core::host::root::Root::system(),
        },
        prefix: None,
        out: work.join("debs"),
        compression: rocm_pin_core::deb::Compression::Xz,
        threads: None,
        source_date_epoch: None,
        options: PlanOptions::default(),
    };
    let outcome = package::package(&req, nested)?;
    for d in &outcome.debs {
        listener.info(&format!("{}", d.output.display()));
    }
    Ok(outcome.debs)
}

/// Publish our .debs in a signed repository; returns it and the keyring apt verifies it with.
fn publish_repo(
    debs: &[rocm_pin_core::deb::BuildSummary],
    work: &Path,
    listener: &dyn Listener,
    nested: &Nested,
) -> anyhow::Result<(PathBuf, PathBuf)> {
    let key_dir = work.join("key");
    std::fs::create_dir_all(&key_dir).with_context(|| format!("creating {}", key_dir.display()))?;
    let key = repo::keygen(
        &key_dir.join("repo-key.asc"),
        "rocm-pin demo repository key",
    )?;
    listener.info(&format!("signing key {}", key.fingerprint));
    let opts = RepoOptions {
        sign_key: Some(key.secret.clone()),
        ..RepoOptions::new(work.join("repo"))
    };
    let paths: Vec<PathBuf> = debs.iter().map(|d| d.output.clone()).collect();
    let summary = repo::publish(&paths, &opts, nested)?;
    listener.info(&format!(
        "{}: {} packages, signed by {}",
        opts.out.display(),
        summary.total,
        summary.signed_by.as_deref().unwrap_or("nobody")
    ));
    Ok((opts.out, key.public_gpg))
}

#[allow(clippy::too_many_arguments)]
fn in_chroot(
    steps: &mut Steps,
    opts: &DemoOptions,
    image: &ChrootImage,
    sandbox_opts: &SandboxOptions,
    made: &Made,
    logs: &Path,
    listener: &dyn Listener,
    sandbox: &mut Option<Sandbox>,
) {
    let names = chroot_step_names();
    let host_log = logs.join("chroot-01-stock-host.log");
    let ready = steps.run(&names[0], true, || {
        let sb = Sandbox::with_options(image, sandbox_opts)?;
        listener.info(&format!("chroot {}", sb.root().display()));
        let sb = sandbox.insert(sb);
        install_stock_host(sb, made, &host_log, listener)?;
        sb.install_rocm_pin(&opts.rocm_pin)?;
        // The seed's custom rccl, for the `dpkg -i --force-all` step.
        sb.copy_in(&made.custom.out_dir, CUSTOM_CHROOT_DIR)?;
        add_signed_repo(sb, made, &host_log, listener)
    });
    let (Some(sb), Some(())) = (sandbox.as_ref(), ready) else {
        for n in &names[1..] {
            steps.run(n, true, || Ok(()));
        }
        return;
    };

    let install_log = logs.join("chroot-02-rocm-pin-install.log");
    steps.run(&names[1], true, || {
        install_from_repo(sb, made, &install_log, listener)
    });

    let custom_deb = made
        .custom
        .packages
        .first()
        .and_then(|p| p.deb.file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    for (i, d) in downstream_steps(&custom_deb).into_iter().enumerate() {
        let log = logs.join(format!("chroot-{:02}-{}.log", i + 3, slug(&d.title)));
        steps.run(&d.title, false, || {
            downstream_step(sb, made, &d, &log, listener)
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_lists_every_step_with_its_result() {
        let report = DemoReport {
            suite: "bookworm".into(),
            standin: true,
            commit: None,
            steps: vec![
                StepRecord {
                    name: "a".into(),
                    status: StepStatus::Ok,
                    seconds: 1.25,
                    error: None,
                },
                StepRecord {
                    name: "longer step".into(),
                    status: StepStatus::Failed,
                    seconds: 2.0,
                    error: Some("x".into()),
                },
                StepRecord {
                    name: "c".into(),
                    status: StepStatus::NotRun,
                    seconds: 0.0,
                    error: None,
                },
            ],
            total_seconds: 3.3,
            kept: None,
            kept_chroot: None,
            interrupted: false,
            interrupt_signal: None,
        };
        assert!(!report.ok());
        let t = report.table();
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 5, "{t}");
        assert!(lines[1].starts_with("a            ok") && lines[1].ends_with("1.2s"));
        assert!(lines[2].contains("FAILED") && lines[2].ends_with("2.0s"));
        assert!(lines[3].contains("not run") && lines[3].ends_with('-'));
        assert!(lines[4].starts_with("total") && lines[4].contains("FAILED"));
    }

    #[test]
    fn the_chroot_steps_are_the_ones_run() {
        // The names recorded as "not run" when setup fails are the ones run otherwise.
        let names = chroot_step_names();
        assert_eq!(names.len(), 2 + downstream_steps("x.deb").len());
        assert!(names[2].starts_with("fix-broken"));
    }

    #[test]
    fn the_real_host_commands_use_the_pinned_repository_and_the_guard() {
        let cmds = real_host_commands().join("\n");
        assert!(cmds.contains("rocm-pin build --source https://github.com/ROCm/rocm-systems "));
        assert!(cmds.contains("rocm-pin package --staging"));
        assert!(cmds.contains("rocm-pin install debs/*.deb --guard"));
        assert!(cmds.contains("rocm-pin verify"));
    }
}
