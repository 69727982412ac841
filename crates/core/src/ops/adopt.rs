//! `rocm-pin adopt`: turn a host or image patched in place (see `inplace`) into ours, offline
//! and without a source build. The live patched libraries become the staging tree, the stock
//! .debs (apt cache, kept, or `apt-get download`) the rollback copies, and the rest is exactly
//! `rocm-pin package` + `rocm-pin install`. Runs on the live system (`/`).
//!
//! Crash safety: once the .debs exist, a state file names them. A run killed after that point
//! is completed by the next `rocm-pin adopt` (install is idempotent and finishes an interrupted
//! dpkg run); a run killed before it changed nothing but files under the state directory.

use std::path::{Path, PathBuf};

use anyhow::Context;

use super::install::{self, deb_file_name, deb_is, InstallOptions, InstallReport};
use crate::exit::{host_change, usage, Failure, HostChange};
use crate::host::layout::StateLayout;
use crate::host::refused;
use crate::host::root::{FileKind, Root};
use crate::host::status;
use crate::ops::package::{self, PackageRequest, StagingInput, StockInput};
use crate::ops::plan::staging::{self, Staging};
use crate::ops::plan::PlanOptions;
use crate::progress::{self, Listener};
use crate::rocm::inplace::{self, InPlacePatch};
use crate::rocm::{self, GateMode};

#[derive(Debug, Clone)]
pub struct AdoptOptions {
    /// Where the .debs go (default `/var/lib/rocm-pin/adopted`).
    pub out: Option<PathBuf>,
    /// Adopt even when no stock .deb can be had (rollback then needs the stock packages from
    /// a repository).
    pub no_rollback: bool,
    pub lock_timeout: u32,
    /// Install the guard hooks too (as `rocm-pin install --guard`).
    pub guard: bool,
    /// The commit the live libraries were built from (`--commit`): needed where the flavour
    /// keeps no in-place marker (Debian's); where a marker is, it must agree.
    pub commit: Option<String>,
}

#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct AdoptReport {
    /// What was found (None when this run completed an interrupted one).
    pub patch: Option<InPlacePatch>,
    pub commit: String,
    /// Stock .debs kept for rollback.
    pub stock_debs: Vec<String>,
    pub debs: Vec<String>,
    pub actions: Vec<String>,
    pub warnings: Vec<String>,
    /// True when this run completed an earlier, interrupted one.
    pub resumed: bool,
    pub install: Option<InstallReport>,
}

/// The state file naming the .debs of an adoption in progress.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct AdoptState {
    commit: String,
    /// The patch's prefix (`/opt/rocm-7.2.4`; `/usr` for Debian's flavour).
    prefix: String,
    /// The library directory patched in place; absent in the records of earlier versions,
    /// which adopted `<prefix>/lib` only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    lib_dir: Option<String>,
    debs: Vec<PathBuf>,
}

impl AdoptState {
    fn layout(&self) -> rocm::RuntimeLayout {
        match &self.lib_dir {
            Some(dir) => rocm::RuntimeLayout::of_library_dir(dir),
            None => rocm::RuntimeLayout::versioned_prefix(&self.prefix),
        }
    }
}

fn state_path(root: &Root) -> PathBuf {
    root.host_path(StateLayout::adopt_record())
}

/// One adoption at a time: an exclusive flock on `/var/lib/rocm-pin/adopt.lock`, held until
/// the returned file is dropped. Work directories of killed runs are removed under it.
fn lock_and_clean(root: &Root) -> anyhow::Result<std::fs::File> {
    let dir = root.host_path(StateLayout::STATE_DIR);
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let path = root.host_path(StateLayout::adopt_lock());
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .with_context(|| format!("cannot open {}", path.display()))?;
    if file.try_lock().is_err() {
        return Err(usage(format!(
            "another `rocm-pin adopt` is running ({} is locked); nothing changed",
            path.display()
        )));
    }
    for e in std::fs::read_dir(&dir)?.filter_map(|e| e.ok()) {
        if e.file_name()
            .to_string_lossy()
            .starts_with(StateLayout::ADOPT_WORK_PREFIX)
        {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
    Ok(file)
}

/// Adopt the in-place patch of `root` (the live system only: adoption ends in `rocm-pin
/// install`'s apt transaction, refused on another root before anything is written).
pub fn adopt(
    root: &Root,
    opts: &AdoptOptions,
    listener: &dyn Listener,
) -> anyhow::Result<AdoptReport> {
    install::live_system_only(root, "rocm-pin adopt")?;
    super::privilege::needs_root(
        root,
        "rocm-pin adopt",
        "changes packages with apt-get and dpkg and writes under /var/lib",
    )?;
    let mut report = AdoptReport::default();
    let state_file = state_path(root);
    let dir = root.host_path(StateLayout::STATE_DIR);
    let lock_path = root.host_path(StateLayout::adopt_lock());
    let state_dir_existed = dir.exists();
    let lock_existed = lock_path.exists();
    let lock = lock_and_clean(root)?;
    // Before install runs, adoption writes only under the state directory; install and the
    // steps after it state their own fact.
    let result = adopt_locked(root, opts, &state_file, &mut report, listener)
        .map_err(|e| HostChange::Unchanged.attach(e));
    drop(lock);
    // A refusal leaves no trace: no lock file, no directory rocm-pin made for nothing.
    if !lock_existed {
        let _ = std::fs::remove_file(&lock_path);
    }
    if result.is_err() && !state_dir_existed {
        let _ = std::fs::remove_dir(root.host_path(StateLayout::stock_dir()));
        let _ = std::fs::remove_dir(&dir);
    }
    result.map(|()| report)
}

/// Why there is nothing to adopt. On a flavour whose in-place patches are found through its
/// stock packages (Debian's), the runtime found is named with the way to replace it.
fn not_patched_reason(root: &Root, entries: &[status::StatusEntry]) -> String {
    let found = crate::rocm::stock_runtime::discover(root, entries);
    if let Some(why) = unreadable_md5sums(root, &found.runtimes) {
        return format!(
            "cannot tell whether this host is patched in place: {why}; nothing changed. In-place patches are found by dpkg's md5sums: restore the file from the package's .deb (`apt-get download <package>; dpkg-deb -I <package>_*.deb md5sums`) and run `rocm-pin adopt` again"
        );
    }
    let by_packages: Vec<&crate::rocm::stock_runtime::StockRuntime> = found
        .runtimes
        .iter()
        .filter(|r| rocm::flavour_spec(r.flavour).in_place == rocm::InPlaceSearch::StockPackageDirs)
        .collect();
    let Some(r) = by_packages.first() else {
        return "this host is not patched in place: every stock runtime file matches dpkg's md5sums and there is no in-place marker (.info/atom-rocm-runtime-commit). Nothing to adopt; nothing changed. To install the patched pair use `rocm-pin install`.".to_string();
    };
    format!(
        "this host is not patched in place: every runtime file of the stock runtime here, {}, matches dpkg's md5sums. Nothing to adopt; nothing changed. To replace it with the patched pair: {}.",
        r.describe(),
        crate::rocm::stock_runtime::PACKAGE_AGAINST_THIS_STOCK
    )
}

/// The stock runtime packages whose md5sums dpkg has not got or cannot be read. In-place
/// detection leaves such a package out, so "every file matches" would be said of files never
/// compared.
fn unreadable_md5sums(
    root: &Root,
    runtimes: &[crate::rocm::stock_runtime::StockRuntime],
) -> Option<String> {
    let why: Vec<String> = runtimes
        .iter()
        .flat_map(|r| &r.packages)
        .filter_map(
            |p| match status::package_md5sums(root, &p.package, &p.architecture) {
                Ok(Some(_)) => None,
                Ok(None) => Some(format!(
                    "{}'s md5sums file is missing from /var/lib/dpkg/info",
                    p.package
                )),
                Err(e) => Some(format!("{e:#}")),
            },
        )
        .collect();
    (!why.is_empty()).then(|| why.join("; "))
}

fn adopt_locked(
    root: &Root,
    opts: &AdoptOptions,
    state_file: &Path,
    report: &mut AdoptReport,
    listener: &dyn Listener,
) -> anyhow::Result<()> {
    if state_file.exists() {
        let state: AdoptState = serde_json::from_slice(
            &std::fs::read(state_file)
                .with_context(|| format!("cannot read {}", state_file.display()))?,
        )
        .with_context(|| format!("{} is not an adoption state file", state_file.display()))?;
        resumable_with(&state, opts.commit.as_deref(), state_file)?;
        listener.info(&format!(
            "completing the adoption interrupted earlier ({})",
            state_file.display()
        ));
        report.resumed = true;
        return finish(root, opts, state, report, listener);
    }

    // The status database, read once for the detection and the stock .debs (install, which
    // adopt ends in, reads it again: adopt wrote nothing dpkg reads, but install stands alone).
    let entries = crate::rocm::read_status(root)?;
    let given = opts.commit.as_deref();
    let patch = patch_to_adopt(root, &entries, given)?;
    let commit = patch
        .commit(given)
        .context("internal: a clean in-place patch without a commit")?;
    report.commit = commit.clone();
    listener.info(&format!(
        "patched in place: commit {commit}, {}",
        patch
            .libraries
            .iter()
            .map(|l| l.path.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    ));

    let stock_debs = progress::step(listener, "find the stock .debs for rollback", || {
        find_stock_debs(root, &entries, &patch, opts, report)
    })?;
    let out = opts.out.clone().unwrap_or_else(StateLayout::adopted_debs);
    let work_parent = root.host_path(StateLayout::STATE_DIR);
    std::fs::create_dir_all(&work_parent)
        .with_context(|| format!("cannot create {}", work_parent.display()))?;
    let work = tempfile::Builder::new()
        .prefix(StateLayout::ADOPT_WORK_PREFIX)
        .tempdir_in(&work_parent)
        .with_context(|| {
            format!(
                "cannot create a work directory in {}",
                work_parent.display()
            )
        })?;
    let staging = progress::step(listener, "stage the live patched libraries", || {
        make_staging(root, &patch, &commit, given, &work.path().join("staging"))
    })?;
    let layout = patch.layout();
    let req = PackageRequest {
        staging: StagingInput::Read(staging),
        stock: if stock_debs.is_empty() {
            StockInput::PatchedInPlace(root.clone())
        } else {
            StockInput::Debs {
                debs: stock_debs.clone(),
                target_root: root.clone(),
            }
        },
        prefix: Some(layout.package_prefix().to_string()),
        out: out.clone(),
        compression: crate::deb::Compression::Xz,
        threads: None,
        source_date_epoch: None,
        // The live bytes, unchanged: what runs now is what gets packaged (and no binutils
        // needed on an image).
        options: PlanOptions {
            strip: false,
            ..PlanOptions::default()
        },
    };
    let outcome = package::package(&req, listener)
        .context("packaging the live patched libraries failed; nothing on the host changed")?;
    let debs: Vec<PathBuf> = outcome.debs.iter().map(|d| d.output.clone()).collect();
    report.actions.push(format!(
        "packaged the live patched pair as {}",
        debs.iter()
            .map(|d| d.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    ));
    let state = AdoptState {
        commit,
        prefix: patch.prefix.clone(),
        // Written where it says more than `<prefix>/lib` (the record stays as it was on AMD's).
        lib_dir: (layout != rocm::RuntimeLayout::versioned_prefix(&patch.prefix))
            .then(|| patch.lib_dir.clone()),
        debs,
    };
    write_state(state_file, &state)?;
    report.patch = Some(patch);
    finish(root, opts, state, report, listener)
}

/// An interrupted adoption completes with the packages it built for its commit: a `--commit`
/// naming another one is refused (exit 2, nothing changed) rather than silently ignored.
fn resumable_with(
    state: &AdoptState,
    given: Option<&str>,
    state_file: &Path,
) -> anyhow::Result<()> {
    match given {
        Some(c) if !c.eq_ignore_ascii_case(&state.commit) => Err(usage(format!(
            "--commit {c} but the adoption interrupted earlier ({}) built its packages for commit {}; nothing changed: run `rocm-pin adopt` (or with that --commit) to complete it, or remove the record and adopt again",
            state_file.display(),
            state.commit
        ))),
        _ => Ok(()),
    }
}

/// The live in-place patch to adopt, judged with the commit `--commit` gives; a refusal
/// (exit 2, nothing changed) when there is none or it cannot be adopted as it is.
fn patch_to_adopt(
    root: &Root,
    entries: &[status::StatusEntry],
    given: Option<&str>,
) -> anyhow::Result<InPlacePatch> {
    if let Some(c) = given {
        if !inplace::is_full_commit(c) {
            return Err(usage(format!(
                "--commit {c:?} is not a full 40-digit commit id; nothing changed"
            )));
        }
    }
    match inplace::detect(root, entries).map(|p| p.with_commit(given)) {
        None => Err(usage(not_patched_reason(root, entries))),
        Some(p) if !p.is_live() => Err(usage(format!(
            "nothing live to adopt; nothing changed:\n{}",
            p.describe()
        ))),
        // Only the commit is missing (a flavour without the in-place marker): one line.
        Some(p) if p.problems == [p.commit_unknown()] => Err(usage(format!(
            "refusing to adopt the in-place patch of {}; nothing changed: {}",
            p.stock
                .iter()
                .map(|(n, v)| format!("{n} {v}"))
                .collect::<Vec<_>>()
                .join(", "),
            p.problems[0]
        ))),
        Some(p) if !p.problems.is_empty() => Err(usage(format!(
            "refusing to adopt this in-place patch; nothing changed:\n{}",
            p.describe()
        ))),
        Some(p) => Ok(p),
    }
}

fn write_state(path: &Path, state: &AdoptState) -> anyhow::Result<()> {
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, serde_json::to_vec_pretty(state)?)
        .with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("cannot write {}", path.display()))
}

/// Install exactly as `rocm-pin install` does, take the in-place markers over, verify.
fn finish(
    root: &Root,
    opts: &AdoptOptions,
    state: AdoptState,
    report: &mut AdoptReport,
    listener: &dyn Listener,
) -> anyhow::Result<()> {
    report.commit = state.commit.clone();
    report.debs = state.debs.iter().map(|d| d.display().to_string()).collect();
    for d in &state.debs {
        if !d.is_file() {
            return Err(usage(format!(
                "the interrupted adoption's package {} is gone; remove {} and run `rocm-pin adopt` again",
                d.display(),
                state_path(root).display()
            )));
        }
    }
    let inst = install::install(
        root,
        &InstallOptions {
            debs: state.debs.clone(),
            mode: GateMode::Require,
            lock_timeout: opts.lock_timeout,
            guard: opts.guard,
            local_repo: false,
            allow_downgrade: false,
            accept_skipped_backport_check: false,
            // Adoption keeps (or, with --no-rollback, could not find) the stock .debs itself.
            no_rollback: false,
        },
        listener,
    );
    let inst = match inst {
        Ok(i) => i,
        Err(e) => {
            // Only an install that left the host unchanged (it says so) lets the next run
            // start from the host again instead of completing with the same .debs: one that
            // failed after apt ran must be completed, whatever its exit code.
            if host_change(&e) == Some(HostChange::Unchanged) {
                let _ = std::fs::remove_file(state_path(root));
            }
            return Err(e.context("installing the adopted packages"));
        }
    };
    report.actions.extend(inst.actions.iter().cloned());
    report.warnings.extend(inst.warnings.iter().cloned());
    report.install = Some(inst);
    report.actions.extend(
        take_over_markers(root, &state.layout(), &state.commit)
            .map_err(|e| HostChange::Changed.attach(e))?,
    );
    std::fs::remove_file(state_path(root))
        .with_context(|| format!("cannot remove {}", state_path(root).display()))
        .map_err(|e| HostChange::Changed.attach(e))?;
    // verify: workflow::adopt, above host/.
    Ok(())
}

/// Move the in-place markers into the state directory, after checking they name the commit
/// that is now installed: they must never be left to disagree with the packages. Nothing to do
/// where the flavour keeps no marker.
fn take_over_markers(
    root: &Root,
    layout: &rocm::RuntimeLayout,
    commit: &str,
) -> anyhow::Result<Vec<String>> {
    let dir = root.host_path(StateLayout::adopted_from());
    let mut done = Vec::new();
    if layout.inplace_markers().is_none() {
        return Ok(done);
    }
    let prefix = layout.prefix.as_str();
    for rel in [rocm::INPLACE_COMMIT_RELPATH, rocm::INPLACE_SONAMES_RELPATH] {
        let from = root.host_path(format!("{prefix}/{rel}"));
        if !from.exists() {
            continue;
        }
        if rel == rocm::INPLACE_COMMIT_RELPATH {
            let text = root
                .read_to_string(format!("{prefix}/{rel}"), FileKind::StateRecord)
                .unwrap_or_default();
            let found = text
                .lines()
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase();
            if found != commit {
                return Err(Failure::check_failed(format!(
                    "{} now says {found}, but the adopted packages carry {commit}; it was changed during the adoption — check it, then remove it",
                    from.display()
                ))
                .into());
            }
        }
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        let name = Path::new(rel).file_name().unwrap_or_default();
        let to = dir.join(name);
        std::fs::copy(&from, &to)
            .with_context(|| format!("cannot copy {} to {}", from.display(), to.display()))?;
        std::fs::remove_file(&from).with_context(|| format!("cannot remove {}", from.display()))?;
        done.push(format!(
            "took over the in-place marker {prefix}/{rel} (kept as {})",
            StateLayout::adopted_from().join(name).display()
        ));
    }
    Ok(done)
}

/// The stock .debs at exactly the installed versions: kept by an earlier run, the apt cache,
/// else `apt-get download`. They are kept in the state directory so rollback works offline.
/// The dpkg database cannot rebuild them: the in-place patch overwrote stock files.
fn find_stock_debs(
    root: &Root,
    entries: &[status::StatusEntry],
    patch: &InPlacePatch,
    opts: &AdoptOptions,
    report: &mut AdoptReport,
) -> anyhow::Result<Vec<PathBuf>> {
    let keep_dir = root.host_path(StateLayout::stock_dir());
    let mut found = Vec::new();
    let mut missing = Vec::new();
    for (name, version) in &patch.stock {
        let arch = entries
            .iter()
            .find(|e| &e.package == name)
            .map(|e| e.architecture.clone())
            .unwrap_or_default();
        let file = deb_file_name(name, version, &arch);
        let kept = keep_dir.join(&file);
        let cached = root.host_path("/var/cache/apt/archives").join(&file);
        if kept.is_file() && deb_is(&kept, name, version) {
            found.push(kept);
            report.stock_debs.push(format!("{file} (already kept)"));
            continue;
        }
        std::fs::create_dir_all(&keep_dir)
            .with_context(|| format!("cannot create {}", keep_dir.display()))?;
        if cached.is_file() && deb_is(&cached, name, version) {
            std::fs::copy(&cached, &kept).with_context(|| {
                format!("cannot copy {} to {}", cached.display(), kept.display())
            })?;
            found.push(kept);
            report
                .stock_debs
                .push(format!("{file} (from the apt cache)"));
            continue;
        }
        let out = crate::host::apt::apt_command(root, "apt-get")
            .arg("-o")
            .arg(format!("DPkg::Lock::Timeout={}", opts.lock_timeout))
            .arg("download")
            .arg(format!("{name}={version}"))
            .current_dir(&keep_dir)
            .output();
        if out.as_ref().is_ok_and(|o| o.status.success())
            && kept.is_file()
            && deb_is(&kept, name, version)
        {
            found.push(kept);
            report.stock_debs.push(format!("{file} (apt-get download)"));
            continue;
        }
        let _ = std::fs::remove_file(&kept);
        missing.push(format!("{name} {version}"));
    }
    if missing.is_empty() {
        return Ok(found);
    }
    if !opts.no_rollback {
        let _ = std::fs::remove_dir(&keep_dir);
        return Err(usage(format!(
            "no stock .deb for {} (not kept in {}, not in /var/cache/apt/archives, `apt-get download` failed). The dpkg database cannot rebuild it: the in-place patch overwrote its files. Without it `rocm-pin rollback` cannot put stock back offline. Put the .deb into /var/cache/apt/archives (or configure its repository), or accept that with `rocm-pin adopt --no-rollback`. Nothing changed.",
            missing.join(", "),
            StateLayout::stock_dir().display()
        )));
    }
    report.warnings.push(format!(
        "--no-rollback: no stock .deb for {}; `rocm-pin rollback` will need them from a repository",
        missing.join(", ")
    ));
    // Packaging reads every stock fact from one source: the dpkg database then.
    Ok(Vec::new())
}

/// The staging of an adoption: the live real files and their soname/dev links copied into
/// `staging/lib`, of the commit (the marker's, or `given` with `--commit`), with a source
/// saying where the libraries came from.
fn make_staging(
    root: &Root,
    patch: &InPlacePatch,
    commit: &str,
    given: Option<&str>,
    staging: &Path,
) -> anyhow::Result<Staging> {
    let lib = staging.join("lib");
    std::fs::create_dir_all(&lib).with_context(|| format!("cannot create {}", lib.display()))?;
    for l in &patch.libraries {
        let host = root.host_path(&l.path);
        let name = Path::new(&l.path)
            .file_name()
            .context("library without a file name")?
            .to_string_lossy()
            .into_owned();
        let dest = lib.join(&name);
        std::fs::copy(&host, &dest)
            .with_context(|| format!("cannot copy {} to {}", host.display(), dest.display()))?;
        let soname = crate::elf::read_elf(&dest)?
            .soname
            .with_context(|| format!("{} has no SONAME", l.path))?;
        for link in &l.links {
            std::os::unix::fs::symlink(&name, lib.join(link))
                .with_context(|| format!("cannot link {link} in {}", lib.display()))?;
        }
        if !l.links.contains(&soname) {
            return Err(refused(format!(
                "the soname link {soname} of {} is missing",
                l.path
            )));
        }
    }
    let layout = patch.layout();
    let marker = layout.inplace_markers().map(|[commit, _]| commit);
    // The commit's own time is not on the host; the marker's mtime (when the patch was
    // applied) orders the package version instead; without a marker, the newest patched
    // library's mtime (when it was copied over the stock file).
    let times: Vec<&str> = match &marker {
        Some(m) if root.metadata(m).is_ok() => vec![m.as_str()],
        _ => patch.libraries.iter().map(|l| l.path.as_str()).collect(),
    };
    let commit_time = times
        .iter()
        .filter_map(|p| root.metadata(p).ok())
        .filter_map(|m| m.modified().ok())
        .filter_map(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_secs() as i64)
        .filter(|t| *t > 0)
        .max()
        .unwrap_or(1);
    let source = match (&marker, given) {
        (Some(m), None) => format!(
            "{} of {} (marker {m})",
            rocm::ADOPTED_SOURCE,
            layout.lib_dir
        ),
        _ => format!(
            "{} of {} (commit given with --commit)",
            rocm::ADOPTED_SOURCE,
            layout.lib_dir
        ),
    };
    staging::adopted(staging, commit, commit_time, source)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `--commit` on resuming must name the record's commit (any case), or nothing happens.
    #[test]
    fn a_resumed_adoption_refuses_another_commit() {
        let state: AdoptState = serde_json::from_str(
            r#"{"commit":"b539bf7eebfd99ad0a69668caa1f4037034d501f","prefix":"/usr","lib_dir":"/usr/lib/x86_64-linux-gnu","debs":["/x.deb"]}"#,
        )
        .unwrap();
        let record = Path::new("/var/lib/rocm-pin/adopt.json");
        assert!(resumable_with(&state, None, record).is_ok());
        assert!(resumable_with(
            &state,
            Some("B539BF7EEBFD99AD0A69668CAA1F4037034D501F"),
            record
        )
        .is_ok());
        let e = resumable_with(&state, Some("xyz"), record).unwrap_err();
        assert_eq!(crate::error::exit_code_for(&e), 2);
        let text = e.to_string();
        assert!(
            text.contains("--commit xyz")
                && text.contains("b539bf7eebfd99ad0a69668caa1f4037034d501f")
                && text.contains("/var/lib/rocm-pin/adopt.json")
                && text.contains("nothing changed"),
            "{text}"
        );
    }

    /// A record written before `lib_dir` existed (AMD's `<prefix>/lib`) still resumes, and a
    /// Debian adoption's record names the multiarch directory (no marker to take over there).
    #[test]
    fn adoption_records_resume_with_their_layout() {
        let old: AdoptState = serde_json::from_str(
            r#"{"commit":"b539bf7eebfd99ad0a69668caa1f4037034d501f","prefix":"/opt/rocm-7.2.4","debs":["/x.deb"]}"#,
        )
        .unwrap();
        assert_eq!(
            old.layout(),
            rocm::RuntimeLayout::versioned_prefix("/opt/rocm-7.2.4")
        );
        assert!(old.layout().inplace_markers().is_some());
        // Written back, it is the record it was (no lib_dir key on AMD's layout).
        assert!(!serde_json::to_string(&old).unwrap().contains("lib_dir"));
        let debian = AdoptState {
            commit: rocm::PIN_COMMIT.into(),
            prefix: "/usr".into(),
            lib_dir: Some("/usr/lib/x86_64-linux-gnu".into()),
            debs: vec![],
        };
        let back: AdoptState =
            serde_json::from_str(&serde_json::to_string(&debian).unwrap()).unwrap();
        assert_eq!(
            back.layout(),
            rocm::RuntimeLayout::multiarch("/usr/lib/x86_64-linux-gnu")
        );
        assert!(back.layout().inplace_markers().is_none());
        let d = tempfile::tempdir().unwrap();
        assert!(
            take_over_markers(&Root::new(d.path()), &back.layout(), rocm::PIN_COMMIT)
                .unwrap()
                .is_empty()
        );
    }
}
