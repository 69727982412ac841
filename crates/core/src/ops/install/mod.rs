//! `rocm-pin install`: gate → stock match → simulate → keep stock → loader entry → apt-get
//! install → ldconfig → snapshot compare → verify. Every step takes the [`Root`] it works on;
//! the gate and the stock match judge any root (unit-tested on a directory), the apt
//! transaction runs on the live system (`/`) only: inside a chroot, run the binary inside it.
//!
//! Every refusal happens before anything changes; the only thing written before apt runs is
//! our loader entry (so there is never a moment without the libraries in the ld.so cache), and
//! it is taken away again when apt fails before dpkg changed anything.

mod stock_match;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::Context;

use super::guard::{Guard, GuardFlags, APT_HOOK, DPKG_HOOK, NO_GUARD_ENV};
use super::ourdebs::{read_debs, DebFacts};
use crate::exit::{usage, Failure, HostChange};
use crate::host::apt;
use crate::host::layout::StateLayout;
use crate::host::loader;
use crate::host::refused;
use crate::host::root::Root;
use crate::host::status::{self, StatusEntry};
use crate::process::tail_lines as tail;
use crate::progress::{self, Listener};
use crate::rocm::gate::{self, GateDecision};
use crate::rocm::{self, GateMode, Marker};
use stock_match::{match_stock, StockMatch};

#[derive(Debug, Clone)]
pub struct InstallOptions {
    pub debs: Vec<PathBuf>,
    pub mode: GateMode,
    /// Seconds apt waits for the dpkg lock.
    pub lock_timeout: u32,
    pub guard: bool,
    /// Also keep our .debs in a signed local apt repository (see `localrepo`).
    pub local_repo: bool,
    /// Packages built with `--no-backport-check` are accepted: the final verify (and the guard
    /// hook) pass `--accept-skipped-backport-check`.
    pub accept_skipped_backport_check: bool,
    /// Accept .debs older than the installed pin (going back to a previous commit pin).
    pub allow_downgrade: bool,
    /// Do not keep the stock .debs for an offline rollback (images: the previous image is the
    /// rollback); recorded in [`StateLayout::stock_not_kept`] so `rocm-pin rollback` can say so.
    pub no_rollback: bool,
}

/// How an install ended (JSON: `installed`, `already-installed`, `skipped`, `off`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// Not decided yet (a report that ended in an error).
    #[default]
    Pending,
    Installed,
    AlreadyInstalled,
    /// The gate (auto) skipped this host.
    Skipped,
    /// The gate is off.
    Off,
}

impl Outcome {
    pub fn word(self) -> &'static str {
        match self {
            Outcome::Pending => "pending",
            Outcome::Installed => "installed",
            Outcome::AlreadyInstalled => "already-installed",
            Outcome::Skipped => "skipped",
            Outcome::Off => "off",
        }
    }
}

#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct InstallReport {
    pub gate: Option<GateDecision>,
    pub packages: Vec<DebFacts>,
    /// What was done, in order (human sentences).
    pub actions: Vec<String>,
    /// Packages dpkg removed (must be the stock pair only).
    pub removed: Vec<String>,
    /// Kept stock .debs for rollback.
    pub kept_stock: Vec<String>,
    pub warnings: Vec<String>,
    pub outcome: Outcome,
}

fn run_ok(cmd: &mut Command) -> anyhow::Result<Vec<u8>> {
    let desc = format!("{cmd:?}");
    let out = cmd.output().with_context(|| format!("cannot run {desc}"))?;
    if !out.status.success() {
        return Err(refused(format!(
            "{desc} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(out.stdout)
}

type Snapshot = BTreeMap<String, (String, String)>;

/// Name → (version, state) of every package with files on disk, to compare before and after apt.
fn snapshot_of(entries: &[StatusEntry]) -> Snapshot {
    entries
        .iter()
        .filter(|e| e.has_files())
        .map(|e| (e.package.clone(), (e.version.clone(), e.abbrev())))
        .collect()
}

/// Parse `apt-get -s` output: the packages it would remove (`Remv name [ver]`).
pub fn simulated_removals(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.strip_prefix("Remv "))
        .filter_map(|l| l.split_whitespace().next())
        .map(|n| n.split(':').next().unwrap_or(n).to_string())
        .collect()
}

fn apt_get(root: &Root, lock_timeout: u32) -> Command {
    let mut cmd = apt::apt_command(root, "apt-get");
    cmd.env("NEEDRESTART_MODE", "l")
        .arg("-o")
        .arg(format!("DPkg::Lock::Timeout={lock_timeout}"))
        .arg("-o")
        .arg("Dpkg::Use-Pty=0");
    cmd
}

/// Step 4 with `--no-rollback`: keep nothing, record that (rollback reads it).
fn record_stock_not_kept(root: &Root, report: &mut InstallReport) -> anyhow::Result<()> {
    let p = root.host_path(StateLayout::stock_not_kept());
    if let Some(dir) = p.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    std::fs::write(
        &p,
        "rocm-pin install --no-rollback: the stock .debs were not kept (an image is rolled back by using the previous image)\n",
    )
    .with_context(|| format!("cannot write {}", p.display()))?;
    report.actions.push(format!(
        "stock .debs not kept for rollback (--no-rollback; recorded in {})",
        StateLayout::stock_not_kept().display()
    ));
    Ok(())
}

/// `name_version_arch.deb` as apt names files (`:` in versions becomes `%3a`).
pub fn deb_file_name(name: &str, version: &str, arch: &str) -> String {
    format!("{name}_{}_{arch}.deb", version.replace(':', "%3a"))
}

pub fn deb_is(path: &Path, name: &str, version: &str) -> bool {
    run_ok(
        Command::new("dpkg-deb")
            .arg("-f")
            .arg(path)
            .arg("Package")
            .arg("Version"),
    )
    .map(|o| {
        let s = String::from_utf8_lossy(&o);
        s.contains(&format!("Package: {name}\n")) && s.contains(&format!("Version: {version}\n"))
    })
    .unwrap_or(false)
}

/// Keep the stock .deb for offline rollback: the apt cache, else `apt-get download`, else
/// rebuilt from the dpkg database (only when every file still matches dpkg's md5sums).
fn keep_stock(
    root: &Root,
    stock: &StatusEntry,
    lock_timeout: u32,
    report: &mut InstallReport,
) -> anyhow::Result<()> {
    let dir = root.host_path(StateLayout::stock_dir());
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let name = deb_file_name(&stock.package, &stock.version, &stock.architecture);
    let dest = dir.join(&name);
    if dest.exists() && deb_is(&dest, &stock.package, &stock.version) {
        report
            .kept_stock
            .push(format!("{} (already kept)", dest.display()));
        return Ok(());
    }
    let cached = root.host_path("/var/cache/apt/archives").join(&name);
    if cached.exists() && deb_is(&cached, &stock.package, &stock.version) {
        std::fs::copy(&cached, &dest)
            .with_context(|| format!("cannot copy {} to {}", cached.display(), dest.display()))?;
        report
            .kept_stock
            .push(format!("{} (from the apt cache)", dest.display()));
        return Ok(());
    }
    let out = apt_get(root, lock_timeout)
        .arg("download")
        .arg(format!("{}={}", stock.package, stock.version))
        .current_dir(&dir)
        .output();
    if let Ok(o) = &out {
        if o.status.success() && dest.exists() && deb_is(&dest, &stock.package, &stock.version) {
            report
                .kept_stock
                .push(format!("{} (apt-get download)", dest.display()));
            return Ok(());
        }
    }
    let _ = std::fs::remove_file(&dest);
    match crate::host::repack::repack(root, stock, &dest) {
        Ok(()) => {
            report.kept_stock.push(format!(
                "{} (rebuilt from the dpkg database; every file matched its md5sum)",
                dest.display()
            ));
            Ok(())
        }
        Err(e) => {
            let w = format!(
                "could not keep stock {} {} for rollback: not in the apt cache, `apt-get download` failed, and it cannot be rebuilt: {e:#}",
                stock.package, stock.version
            );
            report.warnings.push(w);
            Ok(())
        }
    }
}

/// apt-get and dpkg change the live system: on another root (a chroot directory, an unpacked
/// image) they would read that root's database but unpack into `/`. Refused before anything
/// changes; the way is to run rocm-pin inside the root.
pub fn live_system_only(root: &Root, command: &str) -> anyhow::Result<()> {
    if root.is_system() {
        return Ok(());
    }
    Err(usage(format!(
        "{command} changes packages with apt-get and dpkg, which work on the live system (/), not on {}: run rocm-pin inside that root (chroot {} rocm-pin …); nothing changed",
        root.display(),
        root.display()
    )))
}

/// Install the replacement .debs into `root`. The gate and the stock match are judged on any
/// root; the apt transaction runs on the live system only ([`live_system_only`]). An error
/// carries whether the host had changed ([`HostChange`]).
pub fn install(
    root: &Root,
    opts: &InstallOptions,
    listener: &dyn Listener,
) -> anyhow::Result<InstallReport> {
    let mut changed = HostChange::Unchanged;
    install_steps(root, opts, listener, &mut changed).map_err(|e| changed.attach(e))
}

/// The steps of [`install`]; `changed` follows whether the host has changed so far.
fn install_steps(
    root: &Root,
    opts: &InstallOptions,
    listener: &dyn Listener,
    changed: &mut HostChange,
) -> anyhow::Result<InstallReport> {
    super::privilege::needs_root(
        root,
        "rocm-pin install",
        "changes packages with apt-get and dpkg and writes under /etc and /var/lib",
    )?;
    let mut report = InstallReport::default();
    // No .deb given: the ones an earlier install kept (the repair verify names).
    let kept;
    let opts = if opts.debs.is_empty() {
        kept = InstallOptions {
            debs: super::ourdebs::kept(root),
            ..opts.clone()
        };
        if kept.debs.is_empty() {
            return Err(usage(format!(
                "no .deb given, and no earlier install kept ours in {} (none was made on this host, it ran with --no-rollback, or a rollback removed them): give the .debs `rocm-pin package` made: rocm-pin install HSA.deb HIP.deb",
                StateLayout::ours_dir().display()
            )));
        }
        &kept
    } else {
        opts
    };
    if opts.guard {
        // Fail before changing anything if the hook could not name this executable.
        crate::process::self_path()?;
    }
    let (facts, marker) = read_debs(&opts.debs)?;
    super::install_family::refuse_unsupported(opts.local_repo, &facts)?;
    report.packages = facts.clone();

    // 1. Gate.
    if let Some(stopped) = gate_step(root, opts, &marker, &mut report, listener)? {
        report.outcome = stopped;
        return Ok(report);
    }
    // The status database, read once for every step before apt; read again only when
    // `dpkg --configure -a` changed it.
    let mut before = crate::rocm::read_status_with_depends(root)?;
    if complete_interrupted_run(root, &before, &facts, &mut report, listener, changed)? {
        before = crate::rocm::read_status_with_depends(root)?;
    }

    // 2. Stock match (before apt runs): exact version and architecture of our Provides.
    let mut tx = Transaction::plan(root, opts, &facts, &marker, &before)?;
    live_system_only(root, "rocm-pin install")?;
    tx.upload = super::stock_upload::plan(root, &facts, &before)?;
    if tx.need_apt {
        // 3. Simulate: refuse if apt would remove anything but the stock pair.
        simulate(root, opts, &tx, &mut report, listener)?;
        // 4. Keep the stock .debs for offline rollback.
        keep_stock_for_rollback(root, opts, &tx, &mut report, listener)?;
    }

    // 5. Our loader entry before apt: never a moment without the libraries in the cache
    // (none where the library directory is the loader's own: Debian's multiarch directory).
    let entry_host = root.host_path(&tx.loader_entry);
    let entry_existed = entry_host.exists();
    let mut before_apt = BeforeApt {
        host: *changed,
        entry_existed,
        entry_written: false,
    };
    let layout = rocm::RuntimeLayout::of_library_dir(&tx.lib_dir);
    if layout.needs_loader_entry()
        && !loader::loader_entry_lists(root, &tx.loader_entry, &tx.lib_dir).unwrap_or(false)
    {
        *changed = HostChange::Changed;
        before_apt.entry_written = true;
        loader::write_loader_entry(root, &tx.loader_entry, &tx.lib_dir)?;
        loader::run_ldconfig(root)?;
        report.actions.push(format!(
            "wrote {} ({}) and ran ldconfig",
            tx.loader_entry.display(),
            tx.lib_dir
        ));
    }

    // The database as apt left it: read once after apt, or still `before` when apt did not run.
    let after = if tx.need_apt {
        let auto = super::automarks::stock_auto(root, &facts)?;
        *changed = HostChange::Changed;
        let after = run_apt(root, opts, &tx, &facts, &before_apt, &mut report, listener)?;
        report
            .actions
            .extend(super::automarks::carry_to_ours(root, &facts, &auto)?);
        report.actions.extend(tx.upload.after_apt(root)?);
        report.outcome = Outcome::Installed;
        after
    } else {
        report.outcome = Outcome::AlreadyInstalled;
        report
            .actions
            .push("already installed at these versions: apt not run".into());
        before
    };
    // 6. ldconfig, our entry again (a stock prerm may have run ldconfig without it), the
    // release hold, the guard, the local repository.
    finish_host(root, opts, &tx, &facts, &after, &mut report, listener)?;
    keep_ours(root, opts, &mut report)?;
    if matches!(report.outcome, Outcome::Installed) {
        super::restart_list::tell(root, listener);
    }

    // 7. verify: workflow::install, above host/.
    Ok(report)
}

/// The version gate. `Some(outcome)` when it stops the install (off, or auto on another
/// release); a refusal (require on another release) is an error.
fn gate_step(
    root: &Root,
    opts: &InstallOptions,
    marker: &Marker,
    report: &mut InstallReport,
    listener: &dyn Listener,
) -> anyhow::Result<Option<Outcome>> {
    // The release the packages were made against (their prefix), 7.2.4 for the pinned runtime.
    let g = match marker.layout().spec().release_source {
        rocm::ReleaseSource::VersionFile => {
            let wanted = rocm::release_of_prefix(&marker.prefix);
            gate::evaluate(root, &marker.prefix, opts.mode, &wanted)
        }
        rocm::ReleaseSource::PackageVersions => {
            gate::evaluate_by_package_versions(root, marker, opts.mode)?
        }
    };
    // Said once: when the gate stops the install, the reason is the refusal (require) or the
    // command's result line (auto, off), so it is only reported here when the install goes on.
    if g.proceed() {
        listener.info(&g.reason);
    }
    report.gate = Some(g.clone());
    match (opts.mode, g.matches) {
        (GateMode::Off, _) => Ok(Some(Outcome::Off)),
        (GateMode::Auto, false) => {
            gate::write_skip_record(root, &g.reason)?;
            report.actions.push(format!(
                "wrote the skip record {}",
                StateLayout::skip_record().display()
            ));
            Ok(Some(Outcome::Skipped))
        }
        // The typed refusal (its text is the gate's reason, a gate unit test holds them equal).
        (GateMode::Require, false) => Err(g
            .refusal()
            .map(anyhow::Error::from)
            .unwrap_or_else(|| usage(g.reason))),
        _ => Ok(None),
    }
}

/// An earlier run killed in the middle leaves dpkg interrupted (packages unpacked but not
/// configured); apt refuses to do anything until `dpkg --configure -a` finishes the job.
/// Only our own packages' states decide this: anything else is the admin's to fix. True when
/// dpkg ran (the status database changed).
fn complete_interrupted_run(
    root: &Root,
    before: &[StatusEntry],
    facts: &[DebFacts],
    report: &mut InstallReport,
    listener: &dyn Listener,
    changed: &mut HostChange,
) -> anyhow::Result<bool> {
    let interrupted: Vec<String> = before
        .iter()
        .filter(|e| {
            facts
                .iter()
                .any(|f| f.package == e.package || f.stock_name == e.package)
        })
        .filter(|e| e.has_files() && !e.is_installed_ok())
        .map(|e| format!("{} ({})", e.package, e.abbrev()))
        .collect();
    if !interrupted.is_empty() {
        live_system_only(root, "completing an interrupted run (dpkg --configure -a)")?;
        *changed = HostChange::Changed;
        let out = progress::step(
            listener,
            "complete the interrupted run (dpkg --configure -a)",
            || {
                Command::new("dpkg")
                    .arg("--configure")
                    .arg("-a")
                    .env("DEBIAN_FRONTEND", "noninteractive")
                    .env(NO_GUARD_ENV, "1")
                    .output()
                    .context("cannot run dpkg --configure -a")
            },
        )?;
        if !out.status.success() {
            return Err(Failure::check_failed(format!(
                "an earlier run was interrupted ({}) and `dpkg --configure -a` failed ({}):\n{}",
                interrupted.join(", "),
                out.status,
                tail(&[out.stdout.as_slice(), out.stderr.as_slice()].concat(), 25)
            ))
            .into());
        }
        report.actions.push(format!(
            "completed an interrupted run: dpkg --configure -a ({})",
            interrupted.join(", ")
        ));
    }
    Ok(!interrupted.is_empty())
}

/// The files dpkg's md5sums list for each of ours installed that are gone from the root (a
/// deleted marker or library): what only a reinstall of ours puts back. A file absent by
/// dpkg's path-exclude (`/usr/share/doc` in a slim image) is how dpkg installed it.
fn missing_files_of_ours(root: &Root, facts: &[DebFacts], before: &[StatusEntry]) -> Vec<String> {
    let filters = crate::host::excludes::PathFilters::load(root).ok();
    facts
        .iter()
        .filter_map(|f| {
            before
                .iter()
                .find(|e| e.package == f.package && e.has_files())
        })
        .filter_map(|e| status::package_md5sums(root, &e.package, &e.architecture).ok()?)
        .flatten()
        .map(|(path, _)| path)
        .filter(|p| root.symlink_metadata(p).is_err())
        .filter(|p| !filters.as_ref().is_some_and(|f| f.is_excluded(p)))
        .collect()
}

/// What the apt transaction will be, decided before anything changes.
struct Transaction {
    stock_match: StockMatch,
    /// Pin conffiles of ours that were deleted (restored with --force-confmiss).
    missing_conffiles: Vec<String>,
    /// Other files of ours (dpkg's md5sums of an installed package of ours) that are gone:
    /// the marker, a library. `--reinstall` unpacks them again.
    missing_files: Vec<String>,
    /// The HSA library's directory and our loader entry naming it.
    lib_dir: String,
    loader_entry: PathBuf,
    /// Ours need installing, a stock package needs removing, or a pin needs restoring.
    need_apt: bool,
    /// Ours already installed at these versions: apt must be told to reinstall them (a stock
    /// package forced in next to them, a deleted pin conffile).
    reinstall: bool,
    /// The stock packages ours replace: the only packages apt may remove.
    stock_names: Vec<String>,
    /// Name → (version, state) before apt, from the one read of the status database.
    snapshot_before: Snapshot,
    /// Our .debs, then every stock package still installed removed by name (`name-`), so
    /// neither apt solver has to decide it: apt 3's solver refuses a transaction where a stock
    /// package forced in next to ours would have to go implicitly.
    deb_args: Vec<String>,
    upload: super::stock_upload::UploadUpdate, // what moves with ours to a newer stock upload
}

impl Transaction {
    fn plan(
        root: &Root,
        opts: &InstallOptions,
        facts: &[DebFacts],
        marker: &Marker,
        before: &[StatusEntry],
    ) -> anyhow::Result<Transaction> {
        let stock_match = match_stock(facts, before, opts.allow_downgrade)?;
        let missing_conffiles: Vec<String> = facts
            .iter()
            .filter(|f| {
                before
                    .iter()
                    .any(|e| e.package == f.package && e.has_files())
            })
            .map(|f| StateLayout::pin_file(&f.package))
            .filter(|p| !root.host_path(p).exists())
            .map(|p| p.display().to_string())
            .collect();
        let missing_files = missing_files_of_ours(root, facts, before);
        // The family's first library (the pair's HSA one): its directory is the loader entry's.
        let hsa_lib = super::install_family::loader_library(marker)
            .ok_or_else(|| usage("the marker names no library of its family's first part"))?;
        let lib_dir = Path::new(&hsa_lib.path)
            .parent()
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        let need_apt = !stock_match.ours_current
            || !stock_match.present.is_empty()
            || !missing_conffiles.is_empty()
            || !missing_files.is_empty()
            || stock_match.unprotected;
        let mut deb_args: Vec<String> =
            facts.iter().map(|f| f.path.display().to_string()).collect();
        deb_args.extend(
            stock_match
                .present
                .iter()
                .map(|s| format!("{}-", s.package)),
        );
        Ok(Transaction {
            stock_names: facts.iter().map(|f| f.stock_name.clone()).collect(),
            reinstall: stock_match.ours_current,
            stock_match,
            missing_conffiles,
            missing_files,
            lib_dir,
            loader_entry: StateLayout::loader_entry(&hsa_lib.package),
            need_apt,
            snapshot_before: snapshot_of(before),
            deb_args,
            upload: Default::default(),
        })
    }

    /// `apt-get [-s] install …` with this transaction's options and arguments.
    fn apt_command(&self, root: &Root, opts: &InstallOptions, simulate: bool) -> Command {
        let mut cmd = apt_get(root, opts.lock_timeout);
        if simulate {
            cmd.args(["-s", "install"]);
        } else {
            cmd.args(["install", "-y"]);
        }
        if opts.allow_downgrade {
            cmd.arg("--allow-downgrades");
        }
        if self.stock_match.repair {
            cmd.arg("--fix-broken");
        }
        if self.reinstall {
            cmd.arg("--reinstall");
            if !simulate {
                cmd.arg("-o").arg("Dpkg::Options::=--force-confmiss");
            }
        }
        cmd.args(&self.deb_args).args(self.upload.apt_args());
        cmd
    }
}

/// `apt-get -s`: refuse when apt would remove anything but the stock pair. Nothing changes.
fn simulate(
    root: &Root,
    opts: &InstallOptions,
    tx: &Transaction,
    report: &mut InstallReport,
    listener: &dyn Listener,
) -> anyhow::Result<()> {
    let sim = progress::step(listener, "simulate the transaction (apt-get -s)", || {
        let out = tx
            .apt_command(root, opts, true)
            .output()
            .context("cannot run apt-get -s")?;
        if !out.status.success() {
            return Err(usage(format!(
                "apt-get -s install refused the transaction ({}); nothing changed:\n{}",
                out.status,
                tail(&[out.stdout.as_slice(), out.stderr.as_slice()].concat(), 25)
            )));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    })?;
    let extra: Vec<String> = simulated_removals(&sim)
        .into_iter()
        .filter(|n| !tx.stock_names.contains(n))
        .collect();
    if !extra.is_empty() {
        return Err(usage(format!(
            "apt would also remove {}; refusing (only the stock packages ours replace, {}, may go). Nothing changed.",
            extra.join(", "),
            tx.stock_names.join(", ")
        )));
    }
    report.actions.push(format!(
        "simulated: apt removes only the stock packages ours replace ({})",
        tx.stock_names.join(", ")
    ));
    Ok(())
}

/// Keep the stock .debs for offline rollback while they are still installed (or record that
/// they are not kept, `--no-rollback`); a stock package at another version forced in next to
/// ours is not the one to restore.
fn keep_stock_for_rollback(
    root: &Root,
    opts: &InstallOptions,
    tx: &Transaction,
    report: &mut InstallReport,
    listener: &dyn Listener,
) -> anyhow::Result<()> {
    if opts.no_rollback {
        record_stock_not_kept(root, report)?;
    } else {
        let record = root.host_path(StateLayout::stock_not_kept());
        let _ = std::fs::remove_file(record);
    }
    for s in tx
        .stock_match
        .present
        .iter()
        .filter(|s| !opts.no_rollback && tx.stock_match.kept_for_rollback(s))
        .chain(tx.upload.new_stock.iter().filter(|_| !opts.no_rollback))
    {
        progress::step(listener, &format!("keep stock {}", s.package), || {
            keep_stock(root, s, opts.lock_timeout, report)
        })?;
    }
    for w in &report.warnings {
        listener.warn(w);
    }
    Ok(())
}

/// Keep our .debs for the repair `rocm-pin install` with none given (not with
/// `--no-rollback`: an image build keeps no second copy of anything in its layer).
fn keep_ours(root: &Root, opts: &InstallOptions, report: &mut InstallReport) -> anyhow::Result<()> {
    let family = super::install_family::family_of_facts(&report.packages);
    if family.name != rocm::families::RUNTIME.name {
        let kept = super::install_family::keep_family(root, opts.no_rollback, family, &opts.debs)?;
        report.actions.extend(kept);
        return Ok(());
    }
    if opts.no_rollback {
        super::ourdebs::forget(root)?;
        return Ok(());
    }
    let kept = super::ourdebs::keep(root, &opts.debs)?;
    report.actions.push(format!(
        "kept {} of ours in {} (`rocm-pin install` with no .deb reinstalls them)",
        kept.len(),
        StateLayout::ours_dir().display()
    ));
    Ok(())
}

/// Where the host stood before step 5 (our loader entry): what a failed apt run that changed
/// no package leaves behind, once a loader entry of ours that was not there is taken back.
struct BeforeApt {
    /// Whether the host had changed before step 5 (an interrupted run completed).
    host: HostChange,
    entry_existed: bool,
    /// Step 5 wrote the entry (it did not list the library directory).
    entry_written: bool,
}

/// The real transaction. On failure: our loader entry taken back when nothing changed, and the
/// error says whether dpkg changed packages (exit 1: run install again or roll back) or not
/// (exit 2). On success: only the stock pair may have gone.
fn run_apt(
    root: &Root,
    opts: &InstallOptions,
    tx: &Transaction,
    facts: &[DebFacts],
    before: &BeforeApt,
    report: &mut InstallReport,
    listener: &dyn Listener,
) -> anyhow::Result<Vec<StatusEntry>> {
    let snap_before = &tx.snapshot_before;
    let mut cmd = tx.apt_command(root, opts, false);
    let out = progress::step(listener, "apt-get install", || {
        cmd.output().context("cannot run apt-get install")
    })?;
    let after = crate::rocm::read_status_with_depends(root)?;
    let snap_after = snapshot_of(&after);
    if !out.status.success() {
        let changed = *snap_before != snap_after;
        if !changed && !before.entry_existed {
            let _ = std::fs::remove_file(root.host_path(&tx.loader_entry));
            let _ = loader::run_ldconfig(root);
        }
        let host = if changed || (before.entry_existed && before.entry_written) {
            HostChange::Changed
        } else {
            before.host
        };
        return Err(host.attach(apt_failure(opts, &out, changed)));
    }
    report.removed = snap_before
        .keys()
        .filter(|k| !snap_after.contains_key(*k))
        .cloned()
        .collect();
    let bad: Vec<&String> = report
        .removed
        .iter()
        .filter(|n| !tx.stock_names.contains(n))
        .collect();
    if !bad.is_empty() {
        return Err(Failure::check_failed(format!(
            "apt removed more than the stock packages ours replace: {}; reinstall them (apt-get install …) or `rocm-pin rollback`",
            bad.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
        ))
        .into());
    }
    report.actions.push(apt_action(tx, facts));
    Ok(after)
}

fn apt_failure(opts: &InstallOptions, out: &std::process::Output, changed: bool) -> anyhow::Error {
    let both = [out.stdout.as_slice(), out.stderr.as_slice()].concat();
    let text = String::from_utf8_lossy(&both);
    let lock = text.contains("Could not get lock") || text.contains("Unable to acquire");
    let msg = format!(
        "apt-get install failed ({}){}{}:\n{}",
        out.status,
        if lock {
            format!(
                "; another apt/dpkg held the lock for more than {}s (--lock-timeout)",
                opts.lock_timeout
            )
        } else {
            String::new()
        },
        if changed {
            "; dpkg changed packages: run `rocm-pin install` again to complete, or `rocm-pin rollback`"
        } else {
            "; nothing changed"
        },
        tail(&both, 25)
    );
    if changed {
        Failure::check_failed(msg).into()
    } else {
        usage(msg)
    }
}

/// The report line for the transaction that ran.
fn apt_action(tx: &Transaction, facts: &[DebFacts]) -> String {
    let stock_present = &tx.stock_match.present;
    format!(
        "apt-get install {}{}{}{}",
        facts
            .iter()
            .map(|f| format!("{}_{}", f.package, f.version))
            .collect::<Vec<_>>()
            .join(" "),
        if stock_present.is_empty() {
            String::new()
        } else {
            format!(
                " {} (the stock packages removed by name, same transaction{})",
                stock_present
                    .iter()
                    .map(|s| format!("{}-", s.package))
                    .collect::<Vec<_>>()
                    .join(" "),
                if tx.reinstall {
                    "; ours reinstalled: a stock package had been forced in next to them"
                } else {
                    ""
                }
            )
        },
        if tx.missing_conffiles.is_empty() {
            String::new()
        } else {
            format!(
                " (--reinstall --force-confmiss restored {})",
                tx.missing_conffiles.join(", ")
            )
        },
        if tx.missing_files.is_empty() {
            String::new()
        } else {
            format!(" (--reinstall restored {})", tx.missing_files.join(", "))
        }
    )
}

/// After apt: our loader entry (a stock prerm may have run ldconfig without it), ldconfig,
/// the skip record cleared, the release hold, the guard and the local repository.
fn finish_host(
    root: &Root,
    opts: &InstallOptions,
    tx: &Transaction,
    facts: &[DebFacts],
    after: &[StatusEntry],
    report: &mut InstallReport,
    listener: &dyn Listener,
) -> anyhow::Result<()> {
    let layout = rocm::RuntimeLayout::of_library_dir(&tx.lib_dir);
    if layout.needs_loader_entry()
        && !loader::loader_entry_lists(root, &tx.loader_entry, &tx.lib_dir).unwrap_or(false)
    {
        loader::write_loader_entry(root, &tx.loader_entry, &tx.lib_dir)?;
    }
    loader::run_ldconfig(root)?;
    gate::clear_skip_record(root)?;
    let held = crate::host::hold::write(
        root,
        after,
        &super::install_family::hold_stock_names(&tx.stock_names, after),
        layout.spec().hold_exact_dependants,
    )?;
    if !held.is_empty() {
        report.actions.push(format!(
            "holds {} at the installed release ({})",
            held.iter()
                .map(|(n, v)| format!("{n} {v}"))
                .collect::<Vec<_>>()
                .join(", "),
            StateLayout::release_hold().display()
        ));
    }

    if opts.guard {
        let guard = Guard::arm(
            root,
            GuardFlags {
                accept_skipped_backport_check: opts.accept_skipped_backport_check,
            },
        )?;
        report.actions.push(format!(
            "installed the guard: apt {APT_HOOK} and dpkg {DPKG_HOOK}, running {}",
            guard.binary.display()
        ));
    }
    if opts.local_repo {
        progress::step(listener, "local repository", || {
            super::localrepo::publish(root, facts)
        })?;
        report.actions.push(format!(
            "kept our .debs in the signed local repository {} (source {}, pinned by {})",
            StateLayout::local_repo().display(),
            StateLayout::local_repo_sources().display(),
            StateLayout::local_repo_preferences().display()
        ));
    }
    Ok(())
}

#[cfg(test)]
#[path = "install_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "install_steps_tests.rs"]
mod steps_tests;
