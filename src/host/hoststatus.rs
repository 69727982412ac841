//! `rocm-pin status`: what is on this host, read-only.

use std::path::Path;

use super::gate;
use super::rollback::installed_pin;
use super::status::in_root;
use crate::rocm;

#[derive(Debug, Clone, serde::Serialize)]
pub struct StaleMapping {
    pub pid: u32,
    pub command: String,
    pub path: String,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct HostStatus {
    /// Every hop of the `/opt/rocm` chain, None when it does not resolve.
    pub rocm_path_chain: Option<Vec<String>>,
    /// `.info/version` of where `/opt/rocm` points.
    pub rocm_version: Option<String>,
    /// The prefix our packages installed into (from the marker).
    pub target_prefix: Option<String>,
    pub target_version: Option<String>,
    pub skip_record: Option<String>,
    pub gate: String,
    pub flavor: Option<String>,
    pub commit: Option<String>,
    /// The patch series the installed build carries on top of `commit` (from the marker).
    pub patches: Vec<crate::build::patches::PatchRecord>,
    /// The installed build skipped the backport check (`--no-backport-check`, from the marker).
    pub backport_check_skipped: bool,
    pub packages: Vec<String>,
    pub verify_ok: Option<bool>,
    pub verify_failed: Vec<String>,
    pub verify_checks: usize,
    /// Processes still mapping a deleted copy of a runtime library: they need a restart.
    pub stale_processes: Vec<StaleMapping>,
}

fn first_line(p: &Path) -> Option<String> {
    std::fs::read_to_string(p)
        .ok()
        .map(|t| t.lines().next().unwrap_or("").trim().to_string())
}

/// `/proc/<pid>/maps` lines mapping a deleted file of a runtime library family.
pub fn stale_mappings(proc_dir: &Path) -> Vec<StaleMapping> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(proc_dir) else {
        return out;
    };
    for e in rd.filter_map(|e| e.ok()) {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(maps) = std::fs::read_to_string(e.path().join("maps")) else {
            continue;
        };
        let command = first_line(&e.path().join("comm")).unwrap_or_default();
        let mut seen = Vec::new();
        for line in maps.lines() {
            let Some(path) = line.strip_suffix(" (deleted)") else {
                continue;
            };
            let Some(path) = path.split_whitespace().nth(5) else {
                continue;
            };
            let name = Path::new(path)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            if rocm::family_of(&name).is_some() && !seen.contains(&path.to_string()) {
                seen.push(path.to_string());
                out.push(StaleMapping {
                    pid,
                    command: command.clone(),
                    path: path.to_string(),
                });
            }
        }
    }
    out.sort_by(|a, b| (a.pid, &a.path).cmp(&(b.pid, &b.path)));
    out
}

pub fn host_status(root: &Path) -> anyhow::Result<HostStatus> {
    let chain = rocm::resolve_rocm_path(root, Path::new(rocm::DEFAULT_ROCM_PATH)).ok();
    let rocm_version = chain.as_ref().and_then(|(p, _)| {
        first_line(&in_root(
            root,
            &format!("{}/{}", p.display(), rocm::VERSION_RELPATH),
        ))
    });
    let pin = installed_pin(root)?;
    let marker = pin.as_ref().and_then(|(_, m)| m.clone());
    let target_prefix = marker.as_ref().map(|m| m.prefix.clone());
    let target_version = target_prefix
        .as_ref()
        .and_then(|p| first_line(&in_root(root, &format!("{p}/{}", rocm::VERSION_RELPATH))));
    let skip = gate::read_skip_record(root);
    let gate = match (&skip, &pin) {
        (Some(r), _) => format!("skipped by the version gate: {r}"),
        (None, Some(_)) => "installed (gate passed)".to_string(),
        (None, None) => "not installed".to_string(),
    };
    let (verify_ok, failed, n) = if pin.is_some() && skip.is_none() {
        match crate::verify::verify(&crate::verify::VerifyOptions {
            root: root.to_path_buf(),
            ..Default::default()
        }) {
            Ok(v) => (
                Some(v.ok),
                v.failed()
                    .map(|c| format!("{} {}: {}", c.name, c.subject, c.detail))
                    .collect(),
                v.checks.len(),
            ),
            Err(e) => (Some(false), vec![format!("{e:#}")], 0),
        }
    } else {
        (None, Vec::new(), 0)
    };
    Ok(HostStatus {
        rocm_path_chain: chain.map(|(_, h)| h.iter().map(|p| p.display().to_string()).collect()),
        rocm_version,
        target_prefix,
        target_version,
        skip_record: skip,
        gate,
        flavor: marker.as_ref().map(|m| m.flavor.clone()),
        commit: marker.as_ref().map(|m| m.commit.clone()),
        patches: marker
            .as_ref()
            .map(|m| m.patches.clone())
            .unwrap_or_default(),
        backport_check_skipped: marker.as_ref().is_some_and(|m| m.backport_check_skipped),
        packages: pin
            .as_ref()
            .map(|(o, _)| {
                o.iter()
                    .map(|e| format!("{} {} ({})", e.package, e.version, e.abbrev()))
                    .collect()
            })
            .unwrap_or_default(),
        verify_ok,
        verify_failed: failed,
        verify_checks: n,
        stale_processes: stale_mappings(&in_root(root, "/proc")),
    })
}

impl HostStatus {
    pub fn to_human(&self) -> String {
        let mut s = String::new();
        let chain = self
            .rocm_path_chain
            .as_ref()
            .map(|c| c.join(" -> "))
            .unwrap_or_else(|| format!("{} does not resolve", rocm::DEFAULT_ROCM_PATH));
        s.push_str(&format!(
            "ROCm:        {} ({chain})\n",
            self.rocm_version.as_deref().unwrap_or("unknown")
        ));
        if let Some(p) = &self.target_prefix {
            s.push_str(&format!(
                "target:      {p} (ROCm {})\n",
                self.target_version.as_deref().unwrap_or("unknown")
            ));
        }
        s.push_str(&format!("gate:        {}\n", self.gate));
        if let (Some(f), Some(c)) = (&self.flavor, &self.commit) {
            s.push_str(&format!("installed:   flavor {f}, commit {c}\n"));
        }
        for p in &self.patches {
            s.push_str(&format!("  + patch    {} (sha256 {})\n", p.name, p.sha256));
        }
        if self.backport_check_skipped {
            s.push_str(
                "  built with --no-backport-check (verify needs --accept-skipped-backport-check)\n",
            );
        }
        for p in &self.packages {
            s.push_str(&format!("             {p}\n"));
        }
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
                    s.push_str(&format!("             {f}\n"));
                }
            }
            None => s.push_str("verify:      not applicable\n"),
        }
        if self.stale_processes.is_empty() {
            s.push_str("processes:   none maps a deleted runtime library\n");
        } else {
            s.push_str("processes still mapping a deleted runtime library (restart them):\n");
            for p in &self.stale_processes {
                s.push_str(&format!(
                    "             {} {} {}\n",
                    p.pid, p.command, p.path
                ));
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_deleted_runtime_mappings_only() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("4242");
        std::fs::create_dir_all(&p).unwrap();
        std::fs::write(p.join("comm"), "python3\n").unwrap();
        std::fs::write(
            p.join("maps"),
            "7f00-7f01 r-xp 00000000 08:01 123 /opt/rocm-7.2.4/lib/libamdhip64.so.7.2.70204 (deleted)\n\
             7f01-7f02 r--p 00001000 08:01 123 /opt/rocm-7.2.4/lib/libamdhip64.so.7.2.70204 (deleted)\n\
             7f02-7f03 r-xp 00000000 08:01 124 /usr/lib/libfoo.so.1 (deleted)\n\
             7f03-7f04 r-xp 00000000 08:01 125 /opt/rocm-7.2.4/lib/libhsa-runtime64.so.1.18.0\n",
        )
        .unwrap();
        std::fs::create_dir_all(d.path().join("self")).unwrap();
        let m = stale_mappings(d.path());
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].pid, 4242);
        assert_eq!(m[0].command, "python3");
        assert!(m[0].path.ends_with("libamdhip64.so.7.2.70204"));
    }
}
