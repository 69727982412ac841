//! `rocm-pin status`: what is on this host, read-only.

use std::path::Path;

use crate::exit::ExitKind;
use crate::host::layout::StateLayout;
use crate::host::root::{FileKind, Root};
use crate::host::status::StatusEntry;
use crate::ops::rollback::installed_pin;
use crate::output::{escaped, escaped_keeping_lines, shown};
use crate::rocm::gate;
use crate::rocm::stock_runtime::{self, StockDiscovery};
use crate::rocm::{self, GateMode};

pub use crate::ops::stale_maps::StaleMapping;

/// Our installed pair: where it came from.
#[derive(Debug, Clone, serde::Serialize)]
pub struct OursInfo {
    pub commit: String,
    /// The commit's time (an adoption: when the in-place patch was applied); the package
    /// build date is this time too (SOURCE_DATE_EPOCH).
    pub commit_time: i64,
    pub commit_date: String,
    /// "built" (`rocm-pin build` + `package`) or "adopted" (`rocm-pin adopt`).
    pub origin: String,
    /// The marker's source note (adopted packages only).
    pub source: Option<String>,
    /// rocm-pin version that made the packages.
    pub tool_version: String,
    /// When dpkg installed them (mtime of their file list), Unix seconds.
    pub installed_at: Option<i64>,
}

/// One stock package of the pair.
#[derive(Debug, Clone, serde::Serialize)]
pub struct StockState {
    pub package: String,
    /// dpkg's two letters (`ii`, `rc`, …), "absent" when dpkg does not know it.
    pub state: String,
    pub version: Option<String>,
    /// Our package standing in for it (Provides at the exact version), when installed.
    pub replaced_by: Option<String>,
}

/// The apt pin of one stock name.
#[derive(Debug, Clone, serde::Serialize)]
pub struct PinState {
    pub stock_name: String,
    pub file: String,
    /// The file exists and pins the stock name below 0.
    pub pinned: bool,
    /// Our package carries `Protected: yes`.
    pub protected: bool,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct HostStatus {
    /// Version of this document (docs/status-json.md).
    pub schema: u32,
    /// "healthy" (exit 0), "not-installed" (exit 0: nothing of ours, no in-place patch),
    /// "broken" (exit 1: patched in place, or ours installed and verify failing), "skipped"
    /// (exit 3: the version gate skipped this host).
    pub health: String,
    /// How `rocm-pin status` ends: None healthy or not installed, else the health's kind. The
    /// JSON carries it as its exit code (`exit_code`).
    #[serde(rename = "exit_code", serialize_with = "serialize_exit_code")]
    pub verdict: Option<ExitKind>,
    /// Every hop of the `/opt/rocm` chain, None when it does not resolve.
    pub rocm_path_chain: Option<Vec<String>>,
    /// `.info/version` of where `/opt/rocm` points; without one, the release a flavour whose
    /// release is its package versions (Debian's) carries, read the way the gate reads it.
    pub rocm_version: Option<String>,
    /// Where `rocm_version` was read when not from `.info/version`: `the package versions of
    /// libhsa-runtime64-1, libamdhip64-7, …`.
    pub rocm_version_from: Option<String>,
    /// The prefix our packages installed into (from the marker).
    pub target_prefix: Option<String>,
    pub target_version: Option<String>,
    pub skip_record: Option<String>,
    pub gate: String,
    #[serde(rename = "flavor")]
    pub suffix: Option<String>,
    pub commit: Option<String>,
    /// The patch series the installed build carries on top of `commit` (from the marker).
    pub patches: Vec<crate::rocm::PatchRecord>,
    /// The installed build skipped the backport check (`--no-backport-check`, from the marker).
    pub backport_check_skipped: bool,
    /// How many stock symbols each installed library lacks, by SONAME: packaged with
    /// `--allow-missing-symbols` (from the marker; absent when none).
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub missing_symbols: std::collections::BTreeMap<String, usize>,
    pub packages: Vec<String>,
    pub verify_ok: Option<bool>,
    pub verify_failed: Vec<String>,
    pub verify_checks: usize,
    /// Other copies of our libraries (verify's `shadow` check): every copy, who maps it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shadow: Option<crate::ops::verify_shadow::ShadowReport>,
    /// Processes still mapping a deleted copy of a runtime library: they need a restart.
    pub stale_processes: Vec<StaleMapping>,
    /// Why some or all of the root's processes could not be looked at (no `/proc` in the
    /// root, a refused file, no permission); None when every process was read. An empty
    /// `stale_processes` then says nothing about the processes not read.
    pub processes_unseen: Option<String>,
    /// A patch made the old in-place way (files hard-linked over dpkg-owned names).
    pub in_place: Option<crate::rocm::inplace::InPlacePatch>,
    pub ours: Option<OursInfo>,
    pub stock: Vec<StockState>,
    pub pins: Vec<PinState>,
    /// None when nothing of ours is installed.
    pub upgrades: Option<crate::rocm::upgrades::Upgrades>,
    /// The guard (`install --guard`, `guard on`) is armed: both hooks in place and the binary
    /// they run executable (`rocm-pin guard status` says more).
    pub guard: bool,
    pub guard_path: String,
    /// The local repository (`install --local-repo`), when present.
    pub local_repo: Option<String>,
    /// The release hold (`/etc/apt/preferences.d/rocm-pin-release-hold`): `package version`
    /// it holds, and what it should hold but does not (deleted or stale).
    pub release_hold: Vec<String>,
    pub release_hold_missing: Vec<String>,
    /// The stock runtime found by SONAME in the dpkg database, by flavour and release
    /// (docs/flavours.md); ours are not in it.
    pub stock_runtime: Vec<stock_runtime::StockRuntime>,
    /// Runtime libraries owned by packages no stock flavour names.
    pub stock_unrecognised: Vec<String>,
    /// With nothing of ours installed: the stock runtime packages found that apt has a newer
    /// candidate for (`apt-cache policy`), and why that is unknown when apt-cache failed.
    pub stock_runtime_upgrades: Vec<crate::rocm::upgrades::Available>,
    pub stock_runtime_upgrades_error: Option<String>,
    /// Installed replacements of the families other than the runtime pair (`rccl`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub families: Vec<crate::ops::family_status::FamilyPackage>,
}

/// `HostStatus::verdict` as the JSON's `exit_code` number.
fn serialize_exit_code<S: serde::Serializer>(
    verdict: &Option<ExitKind>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.serialize_i32(ExitKind::code_of(*verdict))
}

/// The first line of a version file inside the root (None when it cannot be read safely).
fn first_line_in(root: &Root, p: &str) -> Option<String> {
    root.read_to_string(p, FileKind::VersionFile)
        .ok()
        .map(|t| t.lines().next().unwrap_or("").trim().to_string())
}

fn ours_info(root: &Root, ours: &[StatusEntry], m: &rocm::Marker) -> OursInfo {
    let installed_at = ours
        .iter()
        .filter_map(|e| {
            let list = format!("/var/lib/dpkg/info/{}.list", e.package);
            let t = root.metadata(list).ok()?.modified().ok()?;
            t.duration_since(std::time::UNIX_EPOCH)
                .ok()
                .map(|d| d.as_secs() as i64)
        })
        .max();
    let adopted = m
        .source
        .as_deref()
        .is_some_and(|s| s.starts_with(rocm::ADOPTED_SOURCE));
    OursInfo {
        commit: m.commit.clone(),
        commit_time: m.commit_time,
        commit_date: crate::deb::date::changelog_date(m.commit_time)
            .unwrap_or_else(|e| e.to_string()),
        origin: if adopted { "adopted" } else { "built" }.to_string(),
        source: m.source.clone(),
        tool_version: m.tool_version.clone(),
        installed_at,
    }
}

/// The stock pair's dpkg state: the marker's stock names when ours is installed, else the
/// stock runtime packages dpkg knows.
fn stock_states(entries: &[StatusEntry], marker: Option<&rocm::Marker>) -> Vec<StockState> {
    let names: Vec<(String, Option<String>)> = match marker {
        Some(m) => m
            .replaced
            .iter()
            .map(|r| (r.stock_name.clone(), Some(r.package.clone())))
            .collect(),
        None => entries
            .iter()
            .filter(|e| rocm::stock_package_by_name(&e.package).is_some())
            .map(|e| (e.package.clone(), None))
            .collect(),
    };
    names
        .into_iter()
        .map(|(name, ours)| {
            let e = entries.iter().find(|e| e.package == name);
            let replaced_by =
                ours.filter(|o| entries.iter().any(|x| &x.package == o && x.has_files()));
            StockState {
                package: name,
                state: e.map(|e| e.abbrev()).unwrap_or_else(|| "absent".into()),
                version: e.filter(|e| e.has_files()).map(|e| e.version.clone()),
                replaced_by,
            }
        })
        .collect()
}

fn pin_states(root: &Root, ours: &[StatusEntry], m: &rocm::Marker) -> Vec<PinState> {
    m.replaced
        .iter()
        .map(|r| {
            let file = StateLayout::pin_file(&r.package);
            let pinned = root
                .read_to_string(&file, FileKind::Config)
                .ok()
                .and_then(|t| crate::host::apt::parse_preferences(&t).ok())
                .is_some_and(|st| {
                    st.iter()
                        .any(|s| s.priority < 0 && s.packages.iter().any(|p| p == &r.stock_name))
                });
            PinState {
                stock_name: r.stock_name.clone(),
                file: file.display().to_string(),
                pinned,
                protected: ours.iter().any(|e| e.package == r.package && e.protected),
            }
        })
        .collect()
}

/// (ok, failed lines, number of checks, shadow copies) of a verify run; None when not
/// applicable.
fn quick_verify(
    root: &Root,
    accept_skipped_backport_check: bool,
) -> (
    Option<bool>,
    Vec<String>,
    usize,
    Option<crate::ops::verify_shadow::ShadowReport>,
) {
    match crate::ops::verify::verify(&crate::ops::verify::VerifyOptions {
        root: root.clone(),
        accept_skipped_backport_check,
        ..Default::default()
    }) {
        Ok(v) => (
            Some(v.ok),
            v.failed()
                .map(|c| format!("{} {}: {}", c.name, c.subject, c.detail))
                .collect(),
            v.checks.len(),
            v.shadow,
        ),
        Err(e) => (Some(false), vec![format!("{e:#}")], 0, None),
    }
}

/// The host's ROCm release where there is no `.info/version` to read, and where it was read:
/// a flavour whose release is its package versions (Debian's), read the way the gate reads it.
/// With ours installed, the stock packages they replaced (their installed versions, else the
/// versions ours Provides: `gate::replaced_releases`); without, the one stock runtime found.
/// None for AMD's packaging, or when the packages name no one release.
fn release_by_package_versions(
    entries: &[StatusEntry],
    found: &StockDiscovery,
    marker: Option<&rocm::Marker>,
) -> Option<(String, String)> {
    let (release, names) = match marker {
        Some(m) => {
            if m.layout().spec().release_source != rocm::ReleaseSource::PackageVersions {
                return None;
            }
            let releases = gate::replaced_releases(entries, m);
            let names: Vec<String> = releases.iter().map(|(n, _)| n.clone()).collect();
            (gate::one_release(&releases)?, names)
        }
        None => {
            let runtimes = stock_runtime::release_by_package_versions(found);
            let [rt] = runtimes.as_slice() else {
                return None;
            };
            let names = rt.packages.iter().map(|p| p.package.clone()).collect();
            (rt.release.clone()?, names)
        }
    };
    Some((
        release,
        format!("the package versions of {}", names.join(", ")),
    ))
}

/// Nothing of ours is installed: what `rocm-pin install` would decide here under `mode`, so the
/// line leads somewhere instead of just saying "not installed".
fn gate_preview(root: &Root, mode: GateMode, found: &StockDiscovery) -> String {
    // A release read from package versions is judged against the replacements' marker, which
    // only `rocm-pin install <debs>` has: no /opt prefix to preview.
    let by_versions = stock_runtime::release_by_package_versions(found);
    if !by_versions.is_empty() {
        let titles: Vec<&str> = by_versions
            .iter()
            .map(|r| r.flavour_title.as_str())
            .collect();
        return format!(
            "not installed; for {} (above): {}; its gate compares these package versions with the ones the replacements were made against",
            titles.join(" and "),
            stock_runtime::PACKAGE_AGAINST_THIS_STOCK
        );
    }
    let target = match rocm::resolve_rocm_path(root, Path::new(rocm::DEFAULT_ROCM_PATH)) {
        Ok((prefix, _)) => prefix.display().to_string(),
        Err(_) => rocm::versioned_prefix(rocm::TARGET_ROCM_VERSION),
    };
    let d = gate::evaluate(root, &target, mode, rocm::TARGET_ROCM_VERSION);
    let verdict = match (mode, d.matches) {
        (GateMode::Off, _) => "would do nothing",
        (_, true) => "would proceed",
        (GateMode::Auto, false) => "would skip this host (exit 0)",
        (GateMode::Require, false) => "would refuse (exit 2)",
    };
    let mode_name = match mode {
        GateMode::Require => "require",
        GateMode::Auto => "auto",
        GateMode::Off => "off",
    };
    format!(
        "not installed; `rocm-pin install` {verdict} under mode {mode_name}: {}",
        d.reason
    )
}

/// How many stock symbols each of our libraries lacks, by SONAME (the marker's record).
fn missing_symbol_counts(
    marker: Option<&crate::rocm::Marker>,
) -> std::collections::BTreeMap<String, usize> {
    marker
        .map(|m| {
            m.missing_symbols
                .iter()
                .map(|(so, v)| (so.clone(), v.len()))
                .collect()
        })
        .unwrap_or_default()
}

/// The ROCm release our installed pin targets, read the way its layout records a release.
fn target_release(root: &Root, m: &rocm::Marker) -> Option<String> {
    match m.layout().spec().release_source {
        rocm::ReleaseSource::VersionFile => {
            first_line_in(root, &format!("{}/{}", m.prefix, rocm::VERSION_RELPATH))
        }
        rocm::ReleaseSource::PackageVersions => m
            .replaced
            .first()
            .and_then(|r| m.layout().spec().release_of_version(&r.stock_version)),
    }
}

/// The host as `rocm-pin status` reports it; `mode` is the gate mode an install would use.
pub fn host_status(root: &Root, mode: GateMode) -> anyhow::Result<HostStatus> {
    host_status_with(root, mode, false)
}

/// [`host_status`], its verify accepting a recorded `--no-backport-check` when `accept`.
pub fn host_status_with(
    root: &Root,
    mode: GateMode,
    accept_skipped_backport_check: bool,
) -> anyhow::Result<HostStatus> {
    let chain = rocm::resolve_rocm_path(root, Path::new(rocm::DEFAULT_ROCM_PATH)).ok();
    let version_file = chain.as_ref().and_then(|(p, _)| {
        first_line_in(root, &format!("{}/{}", p.display(), rocm::VERSION_RELPATH))
    });
    // The status database, read once for every view below (the hold needs Depends).
    let entries = crate::rocm::read_status_with_depends(root)?;
    let found = stock_runtime::discover(root, &entries);
    let pin = installed_pin(root, &entries)?;
    let ours: Vec<StatusEntry> = pin.as_ref().map(|(o, _)| o.clone()).unwrap_or_default();
    let marker = pin.as_ref().and_then(|(_, m)| m.clone());
    let target_prefix = marker.as_ref().map(|m| m.prefix.clone());
    let target_version = marker.as_ref().and_then(|m| target_release(root, m));
    let (rocm_version, rocm_version_from) = match version_file {
        Some(v) => (Some(v), None),
        None => release_by_package_versions(&entries, &found, marker.as_ref())
            .map_or((None, None), |(r, from)| (Some(r), Some(from))),
    };
    let skip = gate::read_skip_record(root);
    let gate = match (&skip, &pin) {
        (Some(r), _) => format!("skipped by the version gate: {r}"),
        (None, Some(_)) => "installed (gate passed)".to_string(),
        (None, None) => gate_preview(root, mode, &found),
    };
    let in_place = crate::rocm::inplace::detect(root, &entries);
    let (verify_ok, failed, n, shadow) = if (pin.is_some() || in_place.is_some()) && skip.is_none()
    {
        quick_verify(root, accept_skipped_backport_check)
    } else {
        (None, Vec::new(), 0, None)
    };
    let (health, verdict) = match (&skip, verify_ok, &pin) {
        (Some(_), _, _) => ("skipped", Some(ExitKind::Skipped)),
        (None, Some(true), _) => ("healthy", None),
        // Nothing of ours and no in-place patch: nothing is broken yet.
        (None, None, None) => ("not-installed", None),
        _ => ("broken", Some(ExitKind::CheckFailed)),
    };
    let (stock_runtime_upgrades, stock_runtime_upgrades_error) = match &marker {
        None => match crate::rocm::upgrades::stock_candidates(root, &found.runtimes) {
            Ok(a) => (a, None),
            Err(e) => (Vec::new(), Some(format!("{e:#}"))),
        },
        Some(_) => (Vec::new(), None),
    };
    let local_repo = StateLayout::local_repo();
    let held = crate::host::hold::read(root);
    let release_hold: Vec<String> = held.iter().map(|(n, v)| format!("{n} {v}")).collect();
    let release_hold_missing: Vec<String> = marker
        .iter()
        .flat_map(|m| crate::ops::verify_hold::missing(root, &entries, m))
        .map(|(n, v)| format!("{n} {v}"))
        .collect();
    let processes = crate::ops::stale_maps::scan(root);
    Ok(HostStatus {
        schema: 1,
        health: health.to_string(),
        verdict,
        rocm_path_chain: chain.map(|(_, h)| h.iter().map(|p| p.display().to_string()).collect()),
        rocm_version,
        rocm_version_from,
        target_prefix,
        target_version,
        skip_record: skip,
        gate,
        suffix: marker.as_ref().map(|m| m.suffix.clone()),
        commit: marker.as_ref().map(|m| m.commit.clone()),
        patches: marker
            .as_ref()
            .map(|m| m.patches.clone())
            .unwrap_or_default(),
        backport_check_skipped: marker.as_ref().is_some_and(|m| m.backport_check_skipped),
        missing_symbols: missing_symbol_counts(marker.as_ref()),
        packages: ours
            .iter()
            .map(|e| format!("{} {} ({})", e.package, e.version, e.abbrev()))
            .collect(),
        verify_ok,
        verify_failed: failed,
        verify_checks: n,
        shadow,
        // The root's own /proc (a chroot's bind mount), read inside it: a link to the
        // host's /proc in an image is a loop there, not the host's processes.
        stale_processes: processes.stale,
        processes_unseen: processes.unseen,
        in_place,
        ours: marker.as_ref().map(|m| ours_info(root, &ours, m)),
        stock: stock_states(&entries, marker.as_ref()),
        pins: marker
            .as_ref()
            .map(|m| pin_states(root, &ours, m))
            .unwrap_or_default(),
        upgrades: marker
            .as_ref()
            .map(|m| crate::rocm::upgrades::available(root, &ours, m)),
        guard: crate::ops::guard::guard_status(root).is_ok_and(|g| g.armed),
        guard_path: StateLayout::GUARD_APT_HOOK.to_string(),
        local_repo: root
            .exists(&local_repo)
            .then(|| local_repo.display().to_string()),
        release_hold,
        release_hold_missing,
        stock_runtime: found.runtimes,
        stock_unrecognised: found.unrecognised,
        stock_runtime_upgrades,
        stock_runtime_upgrades_error,
        families: crate::ops::family_status::installed(&entries),
    })
}

impl HostStatus {
    /// One warning line per library packaged with `--allow-missing-symbols`.
    fn push_missing_symbols(&self, s: &mut String) {
        for (soname, n) in &self.missing_symbols {
            s.push_str(&format!(
                "  warning: {soname} lacks {n} stock symbols (packaged with --allow-missing-symbols; `rocm-pin verify` names the programs that need them)\n"
            ));
        }
    }

    pub fn to_human(&self) -> String {
        let mut s = String::new();
        let chain = self
            .rocm_path_chain
            .as_ref()
            .map(|c| {
                c.iter()
                    .map(|hop| escaped(hop))
                    .collect::<Vec<_>>()
                    .join(" -> ")
            })
            .unwrap_or_else(|| format!("{} does not resolve", rocm::DEFAULT_ROCM_PATH));
        let whence = match (&self.rocm_version_from, &self.rocm_path_chain) {
            (Some(from), Some(_)) => format!("from {}; {chain}", shown(from)),
            (Some(from), None) => format!("from {}", shown(from)),
            (None, _) => chain,
        };
        s.push_str(&format!(
            "ROCm:        {} ({whence})\n",
            shown(self.rocm_version.as_deref().unwrap_or("unknown"))
        ));
        for r in &self.stock_runtime {
            s.push_str(&format!("stock ROCm:  {}\n", shown(&r.describe())));
        }
        for u in &self.stock_unrecognised {
            s.push_str(&format!("stock ROCm:  {}\n", shown(u)));
        }
        for a in &self.stock_runtime_upgrades {
            s.push_str(&format!(
                "stock ROCm:  upgrade available: {} {} -> {} (apt's candidate)\n",
                shown(&a.package),
                shown(&a.current),
                shown(&a.newest)
            ));
        }
        if let Some(p) = &self.target_prefix {
            s.push_str(&format!(
                "target:      {} (ROCm {})\n",
                shown(p),
                shown(self.target_version.as_deref().unwrap_or("unknown"))
            ));
        }
        s.push_str(&format!("gate:        {}\n", shown(&self.gate)));
        if let Some(p) = &self.in_place {
            s.push_str(&format!("in place:    {}", p.describe()));
        }
        if let (Some(f), Some(c)) = (&self.suffix, &self.commit) {
            s.push_str(&format!(
                "installed:   suffix {}, commit {}\n",
                shown(f),
                shown(c)
            ));
        }
        for p in &self.patches {
            s.push_str(&format!(
                "  + patch    {} (sha256 {})\n",
                shown(&p.name),
                shown(&p.sha256)
            ));
        }
        if self.backport_check_skipped {
            s.push_str(
                "  built with --no-backport-check (verify needs --accept-skipped-backport-check)\n",
            );
        }
        self.push_missing_symbols(&mut s);
        for p in &self.packages {
            s.push_str(&format!("             {}\n", shown(p)));
        }
        self.push_ours_and_stock(&mut s);
        self.push_upgrades(&mut s);
        s.push_str(&format!(
            "guard hook:  {}\n",
            if self.guard {
                format!("on ({})", shown(&self.guard_path))
            } else {
                "off (`rocm-pin guard status` says why; `rocm-pin guard on` arms it)".to_string()
            }
        ));
        s.push_str(&format!(
            "local repo:  {}\n",
            shown(self.local_repo.as_deref().unwrap_or("none"))
        ));
        if !self.release_hold.is_empty() || !self.release_hold_missing.is_empty() {
            s.push_str(&format!(
                "hold:        {} ({}){}\n",
                if self.release_hold.is_empty() {
                    "nothing".to_string()
                } else {
                    escaped(&self.release_hold.join(", ")).into_owned()
                },
                StateLayout::release_hold().display(),
                if self.release_hold_missing.is_empty() {
                    String::new()
                } else {
                    format!(
                        "; MISSING {}: a new stock release could half-upgrade around the pin — run `rocm-pin install` again",
                        shown(&self.release_hold_missing.join(", "))
                    )
                }
            ));
        }
        s.push_str(&crate::ops::family_status::human(&self.families));
        self.push_verify_and_processes(&mut s);
        s.push_str(&format!(
            "health:      {} (exit {})\n",
            self.health.to_uppercase(),
            ExitKind::code_of(self.verdict)
        ));
        escaped_keeping_lines(&s).into_owned()
    }

    fn push_verify_and_processes(&self, s: &mut String) {
        match self.verify_ok {
            Some(true) => s.push_str(&format!(
                "verify:      all {} checks pass\n",
                self.verify_checks
            )),
            Some(false) => {
                s.push_str(&format!(
                    "verify:      FAILING ({} of {} checks)\n",
                    self.verify_failed.len(),
                    self.verify_checks
                ));
                for f in &self.verify_failed {
                    s.push_str(&format!("             {}\n", shown(f)));
                }
            }
            None => s.push_str("verify:      not applicable\n"),
        }
        self.push_processes(s);
    }

    /// The processes still mapping a deleted runtime library, and why any were not looked at.
    fn push_processes(&self, s: &mut String) {
        if self.stale_processes.is_empty() {
            match &self.processes_unseen {
                Some(why) => s.push_str(&format!(
                    "processes:   could not look at processes: {why}\n"
                )),
                None => s.push_str("processes:   none maps a deleted runtime library\n"),
            }
        } else {
            s.push_str("processes still mapping a deleted runtime library (restart them):\n");
            for p in &self.stale_processes {
                s.push_str(&format!(
                    "             {} {} {}\n",
                    p.pid,
                    shown(&p.command),
                    shown(&p.path)
                ));
            }
            if let Some(why) = &self.processes_unseen {
                s.push_str(&format!(
                    "             could not look at other processes: {why}\n"
                ));
            }
        }
    }

    fn push_ours_and_stock(&self, s: &mut String) {
        if let Some(o) = &self.ours {
            s.push_str(&format!(
                "origin:      {} — commit time {}, made by rocm-pin {}{}\n",
                match &o.source {
                    Some(src) if o.origin == "adopted" => escaped(src).into_owned(),
                    _ => "built from source (rocm-pin build + package)".to_string(),
                },
                shown(&o.commit_date),
                shown(&o.tool_version),
                o.installed_at
                    .map(|t| format!(
                        ", installed {}",
                        crate::deb::date::changelog_date(t).unwrap_or_else(|e| e.to_string())
                    ))
                    .unwrap_or_default()
            ));
        }
        for st in &self.stock {
            let what = match (&st.version, &st.replaced_by) {
                (Some(v), _) => format!("{} {}", shown(&st.state), shown(v)),
                (None, Some(o)) => format!("not installed (replaced by {})", shown(o)),
                (None, None) => format!("not installed ({})", shown(&st.state)),
            };
            s.push_str(&format!("stock:       {}: {what}\n", shown(&st.package)));
        }
        for p in &self.pins {
            s.push_str(&format!(
                "pin:         {} {} {}{}; Protected: {}\n",
                shown(&p.file),
                if p.pinned { "pins" } else { "does NOT pin" },
                shown(&p.stock_name),
                if p.pinned { " away (priority < 0)" } else { "" },
                if p.protected { "yes" } else { "NO" }
            ));
        }
    }

    fn push_upgrades(&self, s: &mut String) {
        let Some(u) = &self.upgrades else { return };
        if let Some(e) = &u.error {
            s.push_str(&format!("upgrades:    unknown ({})\n", shown(e)));
            return;
        }
        if u.ours.is_empty() {
            s.push_str("upgrades:    ours: none published\n");
        }
        for a in &u.ours {
            s.push_str(&format!(
                "upgrades:    ours: {} {} -> {} (a new commit pin; `apt-get upgrade` installs it)\n",
                shown(&a.package),
                shown(&a.current),
                shown(&a.newest)
            ));
        }
        match &u.stock_release {
            None => s.push_str("             stock: nothing newer than the replaced versions\n"),
            Some(rel) if u.target_release.as_ref() == Some(rel) => {
                s.push_str(&format!(
                    "             stock: a newer upload of ROCm {}, the release this pin targets — kept back by the pin:\n",
                    shown(rel)
                ));
                self.push_stock_upgrades(s, u);
            }
            Some(rel) => {
                s.push_str(&format!(
                    "             stock: ROCm {} is available while this pin targets {} — kept back by the pin:\n",
                    shown(rel),
                    shown(u.target_release.as_deref().unwrap_or("?"))
                ));
                self.push_stock_upgrades(s, u);
            }
        }
    }

    /// The stock packages kept back, the held ones and the ways forward.
    fn push_stock_upgrades(&self, s: &mut String, u: &crate::rocm::upgrades::Upgrades) {
        for a in &u.stock {
            s.push_str(&format!(
                "               {} {} (replaced: {}, priority {})\n",
                shown(&a.package),
                shown(&a.newest),
                shown(&a.current),
                a.priority
            ));
        }
        for a in &u.held {
            s.push_str(&format!(
                "               {} held at {} ({} available; {})\n",
                shown(&a.package),
                shown(&a.current),
                shown(&a.newest),
                StateLayout::release_hold().display()
            ));
        }
        for (i, w) in u.ways_forward.iter().enumerate() {
            s.push_str(&format!(
                "             way forward {}: {}\n",
                i + 1,
                shown(w)
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rocm::stock_runtime::{StockRuntime, StockRuntimePackage};
    use crate::rocm::{Half, StockFlavour};

    const DEBIAN_DIR: &str = "/usr/lib/x86_64-linux-gnu";

    fn runtime(flavour: StockFlavour, release: &str, packages: &[(&str, &str)]) -> StockRuntime {
        StockRuntime {
            flavour,
            flavour_title: rocm::flavour_spec(flavour).title.to_string(),
            release: Some(release.into()),
            release_from: "the package versions".into(),
            library_dirs: vec![DEBIAN_DIR.into()],
            packages: packages
                .iter()
                .map(|(package, version)| StockRuntimePackage {
                    package: package.to_string(),
                    version: version.to_string(),
                    architecture: "amd64".into(),
                    half: if package.starts_with("libhsa") {
                        Half::Hsa
                    } else {
                        Half::Hip
                    },
                    libraries: Vec::new(),
                })
                .collect(),
        }
    }

    fn installed(package: &str, version: &str) -> StatusEntry {
        StatusEntry {
            package: package.into(),
            version: version.into(),
            status: "install ok installed".into(),
            ..Default::default()
        }
    }

    /// A Debian host has no `.info/version`: the `ROCm:` line names the release its stock
    /// packages' versions carry, as the gate reads it, before and after ours replace them.
    #[test]
    fn the_release_of_debians_packaging_is_read_from_its_package_versions() {
        let stock = [
            ("libhsa-runtime64-1", "7.2.4+dfsg-1~exp1"),
            ("libamdhip64-7", "7.2.4-1~exp2"),
        ];
        let entries: Vec<StatusEntry> = stock.iter().map(|(p, v)| installed(p, v)).collect();
        let found = StockDiscovery {
            runtimes: vec![runtime(StockFlavour::Debian, "7.2.4", &stock)],
            unrecognised: Vec::new(),
        };
        let (release, from) = release_by_package_versions(&entries, &found, None).unwrap();
        assert_eq!(release, "7.2.4");
        assert_eq!(
            from,
            "the package versions of libhsa-runtime64-1, libamdhip64-7"
        );

        // Ours installed in place of the stock: the versions ours Provides.
        let mut marker = crate::ops::fakehost::marker();
        for (r, (name, version)) in marker.replaced.iter_mut().zip(stock) {
            r.stock_name = name.into();
            r.stock_version = version.into();
            r.package = format!("{name}-pinned");
        }
        for l in &mut marker.libraries {
            l.path = format!("{DEBIAN_DIR}/{}", l.soname);
        }
        let ours: Vec<StatusEntry> = marker
            .replaced
            .iter()
            .map(|r| installed(&r.package, &r.version))
            .collect();
        let none = StockDiscovery::default();
        let (release, from) = release_by_package_versions(&ours, &none, Some(&marker)).unwrap();
        assert_eq!(release, "7.2.4");
        assert!(from.contains("libamdhip64-7"), "{from}");

        // Two releases at once name no one release; AMD's packaging has its version file.
        let mut two = found.clone();
        two.runtimes.push(runtime(
            StockFlavour::Debian,
            "6.4.3",
            &[("libamdhip64-6", "6.4.3-5")],
        ));
        assert_eq!(release_by_package_versions(&entries, &two, None), None);
        let amd = StockDiscovery {
            runtimes: vec![runtime(
                StockFlavour::Amd,
                "7.2.4",
                &[("hsa-rocr", "1.18.0.70204-93~24.04")],
            )],
            unrecognised: Vec::new(),
        };
        assert_eq!(release_by_package_versions(&entries, &amd, None), None);
        assert_eq!(
            release_by_package_versions(&ours, &none, Some(&crate::ops::fakehost::marker())),
            None
        );
    }

    /// `status` reads the dpkg status file once for its screen (our pair, the stock states,
    /// the in-place check, the release hold) and once in the verify it runs (it was 3 + 1).
    #[test]
    fn status_reads_the_dpkg_status_file_once_plus_its_verify() {
        let host = crate::ops::fakehost::FakeHost::new("7.2.4");
        host.install_ours("install ok installed");
        let before = crate::host::status::status_parses();
        let s = host_status(&host.root, GateMode::Require).unwrap();
        assert_eq!(crate::host::status::status_parses() - before, 2, "{s:?}");
    }

    #[test]
    fn the_json_exit_code_is_the_verdicts_code() {
        let code = |v| serialize_exit_code(&v, serde_json::value::Serializer).unwrap();
        assert_eq!(code(None), 0);
        assert_eq!(code(Some(ExitKind::CheckFailed)), 1);
        assert_eq!(code(Some(ExitKind::Usage)), 2);
        assert_eq!(code(Some(ExitKind::Skipped)), 3);
    }
}
