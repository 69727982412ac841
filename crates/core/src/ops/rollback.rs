//! `rocm-pin rollback`: one apt transaction installs the kept stock .debs and purges ours
//! (`apt-get install --purge ./stock*.deb <ours>-`), offline. Removing ours first would take
//! `rocm-hip-runtime` with it; a plain remove would leave our pin conffiles pinning stock to -1.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::Context;

use super::guard::Guard;
use super::install::deb_file_name;
use crate::exit::{usage, Failure, HostChange};
use crate::host::layout::StateLayout;
use crate::host::loader;
use crate::host::root::Root;
use crate::host::status::{self, StatusEntry};
use crate::ops::verify::{Check, Checks};
use crate::progress::{self, Listener};
use crate::rocm::{self, Marker};

#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct RollbackReport {
    pub stock_debs: Vec<String>,
    pub purged: Vec<String>,
    pub removed: Vec<String>,
    /// The checks after the swap, of the same type as verify's.
    pub checks: Vec<Check>,
    pub ok: bool,
}

impl RollbackReport {
    /// `ok` from the checks; an error naming every failed one (`command` ran but they fail).
    pub(crate) fn judged(mut self, command: &str) -> anyhow::Result<RollbackReport> {
        self.ok = self.checks.iter().all(|c| c.ok);
        if !self.ok {
            let failed: Vec<String> = self
                .checks
                .iter()
                .filter(|c| !c.ok)
                .map(|c| format!("{}: {}", c.name, crate::output::shown(&c.detail)))
                .collect();
            return Err(Failure::check_failed(format!(
                "{command} ran but checks fail: {}",
                failed.join("; ")
            ))
            .into());
        }
        Ok(self)
    }
}

/// Our installed packages among `entries` (the status database of `root`, read by the
/// caller) and the marker.
pub fn installed_pin(
    root: &Root,
    entries: &[StatusEntry],
) -> anyhow::Result<Option<(Vec<StatusEntry>, Option<Marker>)>> {
    let ours: Vec<StatusEntry> = entries
        .iter()
        .filter(|e| rocm::is_ours_of(e, &rocm::families::RUNTIME) && e.has_files())
        .cloned()
        .collect();
    if ours.is_empty() {
        return Ok(None);
    }
    let mut marker = None;
    for e in &ours {
        if let Ok(list) = status::package_list(root, &e.package, &e.architecture) {
            if let Some(p) = list.iter().find(|p| rocm::is_marker_path(p)) {
                marker = root
                    .read_file(p, crate::host::root::FileKind::Marker)
                    .ok()
                    .and_then(|b| serde_json::from_slice::<Marker>(&b).ok());
            }
        }
    }
    Ok(Some((ours, marker)))
}

/// Why the stock .debs rollback needs (`missing`) are not there, and how to get stock back.
fn missing_stock_message(root: &Root, missing: &[(PathBuf, &rocm::ReplacedPackage)]) -> String {
    let names: Vec<String> = missing
        .iter()
        .map(|(_, r)| format!("{} {}", r.stock_name, r.stock_version))
        .collect();
    let requests: Vec<String> = missing
        .iter()
        .map(|(_, r)| format!("{}={}", r.stock_name, r.stock_version))
        .collect();
    let download = format!(
        "`apt-get download {}` (apt configured with the stock ROCm repository) into {}, then `rocm-pin rollback` again",
        requests.join(" "),
        StateLayout::stock_dir().display()
    );
    if root.host_path(StateLayout::stock_not_kept()).exists() {
        format!(
            "rocm-pin install ran with --no-rollback (as the image recipe's install-runtime.sh does): no stock .debs were kept, so the stock {} cannot be put back offline. In an image, roll back by using the previous image (or the base image without install-runtime.sh); or get the .debs with {download}. Nothing changed.",
            names.join(" and ")
        )
    } else {
        let paths: Vec<String> = missing
            .iter()
            .map(|(p, _)| p.display().to_string())
            .collect();
        format!(
            "the kept stock package(s) {} are missing: rollback needs the stock {} .debs; get them with {download}. Nothing changed.",
            paths.join(", "),
            names.join(" and ")
        )
    }
}

/// Put the stock packages of `root` back (the apt transaction on the live system only: the
/// checks before it say what is missing on any root). An error carries whether the host had
/// changed ([`HostChange`]).
pub fn rollback(
    root: &Root,
    lock_timeout: u32,
    listener: &dyn Listener,
) -> anyhow::Result<RollbackReport> {
    let mut changed = HostChange::Unchanged;
    rollback_steps(root, lock_timeout, listener, &mut changed).map_err(|e| changed.attach(e))
}

/// The steps of [`rollback`]; `changed` follows whether the host has changed so far (the
/// guard suspended for the apt run comes back when it fails, so only apt counts).
fn rollback_steps(
    root: &Root,
    lock_timeout: u32,
    listener: &dyn Listener,
    changed: &mut HostChange,
) -> anyhow::Result<RollbackReport> {
    super::privilege::needs_root(
        root,
        "rocm-pin rollback",
        "changes packages with apt-get and dpkg and writes under /etc and /var/lib",
    )?;
    // The status database, read once before apt runs.
    let entries = crate::rocm::read_status(root)?;
    let Some((ours, marker)) = installed_pin(root, &entries)? else {
        return Err(usage(
            "no rocm-pin replacement package is installed: nothing to roll back",
        ));
    };
    let marker = marker.ok_or_else(|| {
        usage(format!(
            "the provenance marker {} is missing or unreadable, so the stock versions to restore are unknown; reinstall the replacement (`{}`) first",
            super::ourdebs::marker_path_shown(&ours.iter().collect::<Vec<_>>()),
            super::ourdebs::reinstall_command(root)
        ))
    })?;
    let mut report = RollbackReport::default();
    let debs = kept_stock_debs(root, &marker)?;
    report.stock_debs = debs.iter().map(|d| d.display().to_string()).collect();
    let before: BTreeMap<String, String> = entries
        .into_iter()
        .filter(|e| e.has_files())
        .map(|e| (e.package, e.version))
        .collect();
    super::install::live_system_only(root, "rocm-pin rollback")?;
    // The guard would run verify after dpkg and fail the rollback: it leaves first, and
    // comes back exactly as it was (same binary, same flags) when the rollback fails.
    let swap: Vec<(String, String)> = marker
        .replaced
        .iter()
        .map(|r| (r.package.clone(), r.stock_name.clone()))
        .collect();
    let ours_names: Vec<String> = swap.iter().map(|(o, _)| o.clone()).collect();
    let auto = super::automarks::auto_installed(root, &ours_names)?;
    let suspended = Guard::suspend(root)?;
    *changed = HostChange::Changed;
    if let Err(e) = swap_back(root, &ours, &debs, lock_timeout, listener) {
        if let Some(s) = suspended {
            let _ = s.restore(root);
        }
        return Err(e);
    }
    super::automarks::mark_auto(root, &super::automarks::carried(&swap, &auto))?;
    // Done: the guard's private copy goes with its hooks.
    // Another family of ours still installed (RCCL) keeps the guard and its part of the hold.
    let others_left = super::install_family::others_left(root)?;
    match suspended {
        Some(s) if !others_left.is_empty() => s.restore(root)?,
        Some(_) => {
            Guard::disarm(root)?;
        }
        None => {}
    }
    report.purged = ours.iter().map(|e| e.package.clone()).collect();
    // The release hold goes with our pins: the stock release may move again.
    if super::install_family::hold_for(root, &others_left, &marker)? {
        report
            .purged
            .push(StateLayout::release_hold().display().to_string());
    }
    // Our kept .debs (install's repair copies) leave with our packages.
    if super::ourdebs::forget(root)? {
        report
            .purged
            .push(StateLayout::ours_dir().display().to_string());
    }
    // The local repository (--local-repo) holds only our packages: it leaves with them.
    if super::localrepo::remove(root)? {
        report
            .purged
            .push(StateLayout::local_repo().display().to_string());
    }
    loader::run_ldconfig(root)?;
    let after_entries = crate::rocm::read_status(root)?;
    let after: BTreeMap<String, String> = after_entries
        .iter()
        .filter(|e| e.has_files())
        .map(|e| (e.package.clone(), e.version.clone()))
        .collect();
    report.removed = before
        .keys()
        .filter(|k| !after.contains_key(*k))
        .cloned()
        .collect();
    let cache = loader::read_cache(root)?;
    report.checks = rollback_checks(
        root,
        &ours,
        &marker,
        &after_entries,
        &report.removed,
        &cache,
    );
    report.judged("rollback")
}

/// The stock .debs kept at install time, one per replaced package; all of them or a refusal
/// naming every missing one and how to get it.
pub(crate) fn kept_stock_debs(root: &Root, marker: &Marker) -> anyhow::Result<Vec<PathBuf>> {
    let mut debs: Vec<PathBuf> = Vec::new();
    let mut missing = Vec::new();
    for r in &marker.replaced {
        let p = root.host_path(StateLayout::stock_dir()).join(deb_file_name(
            &r.stock_name,
            &r.stock_version,
            &r.architecture,
        ));
        if p.exists() {
            debs.push(p);
        } else {
            missing.push((p, r));
        }
    }
    if !missing.is_empty() {
        return Err(usage(missing_stock_message(root, &missing)));
    }
    Ok(debs)
}

/// One apt transaction: the stock .debs installed, ours purged.
pub(crate) fn swap_back(
    root: &Root,
    ours: &[StatusEntry],
    debs: &[PathBuf],
    lock_timeout: u32,
    listener: &dyn Listener,
) -> anyhow::Result<()> {
    let mut cmd = crate::host::apt::apt_command(root, "apt-get");
    cmd.env("NEEDRESTART_MODE", "l")
        .arg("-o")
        .arg(format!("DPkg::Lock::Timeout={lock_timeout}"))
        .arg("-o")
        .arg("Dpkg::Use-Pty=0")
        .args([
            "install",
            "-y",
            // Not --no-download: with it apt 2.6 looks for local .debs in its archive cache
            // ("Internal Error, Pathname to install is not absolute"). Offline anyway: the
            // stock .debs are local files, and nothing else is installed.
            "--purge",
            "--allow-remove-essential",
        ])
        .args(debs)
        // `pkg-` removes within the install transaction; --purge makes it a purge, so our pin
        // conffiles go too (apt-get install has no `pkg_` purge modifier: "Unable to locate").
        .args(ours.iter().map(|e| format!("{}-", e.package)));
    let out = progress::step(listener, "apt-get install stock + purge ours", || {
        cmd.output().context("cannot run apt-get")
    })?;
    if !out.status.success() {
        let both = [out.stdout.as_slice(), out.stderr.as_slice()].concat();
        return Err(Failure::check_failed(format!(
            "apt-get failed ({}):\n{}",
            out.status,
            crate::process::tail_lines(&both, 25)
        ))
        .into());
    }
    Ok(())
}

/// After the swap: nothing but ours removed, each stock package installed, our pins gone, and
/// the loader (its cache `cache`, read after ldconfig ran) resolving every library of the
/// marker to a stock file.
fn rollback_checks(
    root: &Root,
    ours: &[StatusEntry],
    marker: &Marker,
    after_entries: &[StatusEntry],
    removed: &[String],
    cache: &[loader::CacheEntry],
) -> Vec<Check> {
    let mut checks = Checks::default();
    let mut add =
        |name: &str, subject: &str, ok: bool, detail: String| checks.add(name, subject, ok, detail);
    let unexpected: Vec<&String> = removed
        .iter()
        .filter(|n| !ours.iter().any(|e| &&e.package == n))
        .collect();
    add(
        "dependants",
        "",
        unexpected.is_empty(),
        if unexpected.is_empty() {
            "every other package is still installed".into()
        } else {
            format!(
                "apt removed {}",
                unexpected
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        },
    );
    for r in &marker.replaced {
        let e = after_entries.iter().find(|e| e.package == r.stock_name);
        let ok = e.is_some_and(|e| e.is_installed_ok() && e.version == r.stock_version);
        add(
            "stock-installed",
            &r.stock_name,
            ok,
            format!(
                "{} {}",
                r.stock_name,
                if ok { "ii" } else { "not installed" }
            ),
        );
        let pin = StateLayout::pin_file(&r.package);
        let gone = !root.host_path(&pin).exists();
        add(
            "unpinned",
            &r.package,
            gone,
            format!(
                "{} {}",
                pin.display(),
                if gone { "removed" } else { "still present" }
            ),
        );
    }
    // The loader resolves the stock libraries: the winner is a file of a stock package.
    let stock_files: Vec<String> = marker
        .replaced
        .iter()
        .filter_map(|r| {
            after_entries
                .iter()
                .find(|e| e.package == r.stock_name)
                .and_then(|e| status::package_list(root, &e.package, &e.architecture).ok())
        })
        .flatten()
        .filter_map(|p| root.canonical(&p).ok())
        .collect();
    for lib in &marker.libraries {
        let res = loader::resolve(root, &lib.soname, cache, None);
        let winner = res.winner.as_deref().and_then(|w| root.canonical(w).ok());
        let ok = winner.as_ref().is_some_and(|w| stock_files.contains(w));
        add(
            "loader",
            &lib.soname,
            ok,
            format!(
                "{} → {}{}",
                lib.soname,
                winner.as_deref().unwrap_or("(not found)"),
                if ok {
                    " (stock)"
                } else {
                    " (not a stock file)"
                }
            ),
        );
    }
    checks.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn replaced(name: &str) -> rocm::ReplacedPackage {
        rocm::ReplacedPackage {
            stock_name: name.into(),
            stock_version: "1.18.0.70204-93~24.04".into(),
            architecture: "amd64".into(),
            package: format!("{name}-pinned"),
            version: "1.18.0.70204-93~24.04+pin1".into(),
        }
    }

    #[test]
    fn missing_stock_says_how_to_get_it_back() {
        let root = tempfile::tempdir().unwrap();
        let (hsa, hip) = (replaced("hsa-rocr"), replaced("hip-runtime-amd"));
        let missing = vec![
            (PathBuf::from("/var/lib/rocm-pin/stock/a.deb"), &hsa),
            (PathBuf::from("/var/lib/rocm-pin/stock/b.deb"), &hip),
        ];
        let m = missing_stock_message(&Root::new(root.path()), &missing);
        assert!(m.contains("/var/lib/rocm-pin/stock/a.deb, /var/lib/rocm-pin/stock/b.deb"));
        assert!(m.contains(
            "apt-get download hsa-rocr=1.18.0.70204-93~24.04 hip-runtime-amd=1.18.0.70204-93~24.04"
        ));
        assert!(!m.contains("--no-rollback"), "{m}");
        // After `rocm-pin install --no-rollback`: the record names the reason and the image way.
        let record = Root::new(root.path()).host_path(StateLayout::stock_not_kept());
        std::fs::create_dir_all(record.parent().unwrap()).unwrap();
        std::fs::write(&record, "x\n").unwrap();
        let m = missing_stock_message(&Root::new(root.path()), &missing);
        assert!(
            m.contains("--no-rollback") && m.contains("previous image"),
            "{m}"
        );
        assert!(
            m.contains("hsa-rocr 1.18.0.70204-93~24.04 and hip-runtime-amd"),
            "{m}"
        );
        assert!(m.ends_with("Nothing changed."), "{m}");
    }
}

/// rollback's checks on a directory made to look like a host ([`FakeHost`]); the apt
/// transaction itself runs in the chroot acceptance tests (day2).
#[cfg(test)]
mod steps_tests {
    use super::*;
    use crate::error::exit_code_for;
    use crate::ops::fakehost::{self, FakeHost, HIP_STOCK, HSA_STOCK, PAIR};
    use crate::progress::Silent;

    /// `ldconfig -p` as it prints the cache, each soname at `path` (in-root).
    fn cache(entries: &[(&str, &str)]) -> Vec<loader::CacheEntry> {
        let flags = format!("libc6,{}", loader::native_abi_tag().unwrap_or("x86-64"));
        let mut text = format!("{} libs found in cache `/etc/ld.so.cache'\n", entries.len());
        for (soname, path) in entries {
            text.push_str(&format!("\t{soname} ({flags}) => {path}\n"));
        }
        loader::parse_ldconfig_p(&text)
    }

    fn stock_cache() -> Vec<loader::CacheEntry> {
        cache(&[
            (
                "libhsa-runtime64.so.1",
                "/opt/rocm-7.2.4/lib/libhsa-runtime64.so.1",
            ),
            ("libamdhip64.so.7", "/opt/rocm-7.2.4/lib/libamdhip64.so.7"),
        ])
    }

    fn ours() -> Vec<StatusEntry> {
        let text: Vec<String> = PAIR
            .iter()
            .map(|(s, v, p)| fakehost::ours(p, s, v, "install ok installed"))
            .collect();
        status::parse_status(&text.join("\n"), &[rocm::COMMIT_FIELD]).unwrap()
    }

    fn ours_removed() -> Vec<String> {
        PAIR.iter().map(|(_, _, p)| p.to_string()).collect()
    }

    fn keep_stock_debs(host: &FakeHost) {
        for (name, version, _) in PAIR {
            // Only their presence is judged before apt would run.
            host.write(
                &StateLayout::stock_dir()
                    .join(deb_file_name(name, version, "amd64"))
                    .to_string_lossy(),
                "!<arch>\n",
            );
        }
    }

    #[test]
    fn our_packages_and_the_marker_are_read_from_the_root() {
        let host = FakeHost::new("7.2.4");
        let read = || crate::rocm::read_status(&host.root).unwrap();
        assert!(installed_pin(&host.root, &read()).unwrap().is_none());
        host.install_ours("install ok installed");
        let (ours, marker) = installed_pin(&host.root, &read()).unwrap().unwrap();
        assert_eq!(
            ours.iter().map(|e| e.package.as_str()).collect::<Vec<_>>(),
            ["hsa-rocr-pinned", "hip-runtime-amd-pinned"]
        );
        assert_eq!(marker, Some(fakehost::marker()));
    }

    #[test]
    fn missing_kept_stock_debs_are_named_and_nothing_changes() {
        let host = FakeHost::new("7.2.4");
        host.install_ours("install ok installed");
        let status_before = std::fs::read(status::status_path(&host.root)).unwrap();
        let e = rollback(&host.root, 60, &Silent).unwrap_err();
        assert_eq!(exit_code_for(&e), 2);
        let msg = format!("{e:#}");
        assert!(
            msg.contains(&format!(
                "apt-get download hsa-rocr={HSA_STOCK} hip-runtime-amd={HIP_STOCK}"
            )) && msg.ends_with("Nothing changed."),
            "{msg}"
        );
        assert_eq!(
            std::fs::read(status::status_path(&host.root)).unwrap(),
            status_before
        );
    }

    #[test]
    fn with_the_stock_debs_kept_apt_is_refused_on_a_root_that_is_not_the_live_system() {
        let host = FakeHost::new("7.2.4");
        host.install_ours("install ok installed");
        keep_stock_debs(&host);
        host.write(StateLayout::GUARD_APT_HOOK, "// guard\n");
        let parses_before = status::status_parses();
        let e = rollback(&host.root, 60, &Silent).unwrap_err();
        // One read of the status file for our pair and the before-snapshot (it was two).
        assert_eq!(status::status_parses() - parses_before, 1);
        assert_eq!(exit_code_for(&e), 2);
        assert!(
            format!("{e:#}").contains("rocm-pin rollback changes packages with apt-get and dpkg"),
            "{e:#}"
        );
        // Refused before the guard leaves.
        assert!(host.exists(StateLayout::GUARD_APT_HOOK));
    }

    #[test]
    fn a_rolled_back_root_passes_every_check() {
        let host = FakeHost::new("7.2.4");
        let after = crate::rocm::read_status(&host.root).unwrap();
        let checks = rollback_checks(
            &host.root,
            &ours(),
            &fakehost::marker(),
            &after,
            &ours_removed(),
            &stock_cache(),
        );
        let names: Vec<&str> = checks.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "dependants",
                "stock-installed",
                "unpinned",
                "stock-installed",
                "unpinned",
                "loader",
                "loader"
            ]
        );
        assert!(checks.iter().all(|c| c.ok), "{checks:?}");
        assert_eq!(
            checks[6].detail,
            format!("libamdhip64.so.7 → {} (stock)", fakehost::HIP_LIB)
        );
    }

    #[test]
    fn each_thing_left_wrong_after_the_swap_fails_its_check() {
        let host = FakeHost::new("7.2.4");
        // A pin conffile left behind, the metapackage gone with ours, and the loader still
        // finding our library first (a stale copy outside the stock package's files).
        host.write(
            &StateLayout::pin_file("hsa-rocr-pinned").to_string_lossy(),
            "Package: hsa-rocr\nPin: version *\nPin-Priority: -1\n",
        );
        host.set_status(&[
            fakehost::stock("hsa-rocr", HSA_STOCK, "install ok installed"),
            fakehost::stock("hip-runtime-amd", HIP_STOCK, "install ok installed"),
        ]);
        let ours_lib = &fakehost::marker().libraries[1].path;
        host.write(ours_lib, "patched library bytes\n");
        let after = crate::rocm::read_status(&host.root).unwrap();
        let mut removed = ours_removed();
        removed.push("rocm-hip-runtime".into());
        let checks = rollback_checks(
            &host.root,
            &ours(),
            &fakehost::marker(),
            &after,
            &removed,
            &cache(&[
                (
                    "libhsa-runtime64.so.1",
                    "/opt/rocm-7.2.4/lib/libhsa-runtime64.so.1",
                ),
                ("libamdhip64.so.7", ours_lib),
            ]),
        );
        let failed: Vec<String> = checks
            .iter()
            .filter(|c| !c.ok)
            .map(|c| format!("{}: {}", c.name, c.detail))
            .collect();
        assert_eq!(
            failed,
            [
                "dependants: apt removed rocm-hip-runtime".to_string(),
                "unpinned: /etc/apt/preferences.d/hsa-rocr-pinned still present".to_string(),
                format!("loader: libamdhip64.so.7 → {ours_lib} (not a stock file)"),
            ]
        );
    }
}
