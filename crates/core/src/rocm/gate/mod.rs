//! The ROCm version gate as applied to a host: read the target prefix's `.info/version`,
//! resolve `/opt/rocm`, decide per mode, and keep the skip record.

mod error;

pub use error::GateError;

use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::host::layout::StateLayout;
use crate::host::root::{FileKind, Root};
use crate::host::status::StatusEntry;
use crate::rocm::{self, GateMode};

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct GateDecision {
    pub mode: GateMode,
    /// The prefix our packages install into (from the marker), e.g. `/opt/rocm-7.2.4`.
    pub target_prefix: String,
    /// The first line of `<target prefix>/.info/version`, None when missing.
    pub found_version: Option<String>,
    pub wanted_version: String,
    /// Where `/opt/rocm` resolves (every hop), None when it does not resolve.
    pub rocm_path_chain: Option<Vec<String>>,
    /// True when `/opt/rocm` resolves to a prefix other than the target (multi-version host).
    pub rocm_path_elsewhere: bool,
    /// Where `/opt/rocm` resolves when that is not the target prefix (for the refusal's text).
    #[serde(skip)]
    pub rocm_path_other: Option<PathBuf>,
    pub matches: bool,
    /// What a person should read: why it matched or not, and what happens.
    pub reason: String,
    /// What the gate found, in the flavour's own terms (AMD's version file, Debian's package
    /// versions), without what the mode does about it: the refusal's text.
    #[serde(skip)]
    pub finding: String,
}

impl GateDecision {
    /// Install proceeds.
    pub fn proceed(&self) -> bool {
        self.matches && self.mode != GateMode::Off
    }

    /// The refusal when mode `require` meets a host that does not match; None otherwise.
    pub fn refusal(&self) -> Option<GateError> {
        if self.mode != GateMode::Require || self.matches {
            return None;
        }
        Some(GateError::GateRefused {
            found: self.found_version.clone(),
            required: self.wanted_version.clone(),
            finding: self.finding.clone(),
            rocm_path_elsewhere: self.rocm_path_other.clone(),
        })
    }
}

pub fn evaluate(root: &Root, target_prefix: &str, mode: GateMode, wanted: &str) -> GateDecision {
    let version_file = rocm::version_file(target_prefix);
    // Unreadable (absent, not a regular file, over its cap) reads as no version found: the
    // gate then refuses or skips, never installs.
    let found = root
        .read_to_string(&version_file, FileKind::VersionFile)
        .ok()
        .map(|t| t.lines().next().unwrap_or("").trim().to_string());
    let chain = rocm::resolve_rocm_path(root, Path::new(rocm::DEFAULT_ROCM_PATH)).ok();
    let elsewhere = chain
        .as_ref()
        .map(|(p, _)| p.as_path())
        .filter(|p| *p != Path::new(target_prefix));
    let matches = found
        .as_deref()
        .is_some_and(|v| rocm::version_matches(v, wanted));
    let reason = rocm::finding_text(
        found.as_deref(),
        wanted,
        target_prefix,
        &version_file,
        elsewhere,
    );
    let other = elsewhere.map(Path::to_path_buf);
    let finding = reason.clone();
    let reason = with_mode(reason, mode, matches);
    GateDecision {
        mode,
        target_prefix: target_prefix.to_string(),
        found_version: found,
        wanted_version: wanted.to_string(),
        rocm_path_chain: chain.map(|(_, hops)| {
            hops.iter()
                .map(|h| h.display().to_string())
                .collect::<Vec<_>>()
        }),
        rocm_path_elsewhere: other.is_some(),
        rocm_path_other: other,
        matches,
        reason,
        finding,
    }
}

/// The release each stock package `marker` replaced carries on this host, by the package
/// versions (Debian's flavour): its installed version, or the stock version ours Provides
/// when ours is installed in its place; None when neither is installed. What the gate judges,
/// and what `rocm-pin status` names as the host's ROCm.
pub fn replaced_releases(
    entries: &[StatusEntry],
    marker: &rocm::Marker,
) -> Vec<(String, Option<String>)> {
    let installed = |name: &str| {
        entries
            .iter()
            .find(|e| e.package == name && e.status.ends_with(" installed"))
    };
    marker
        .replaced
        .iter()
        .map(|r| {
            let version = match (installed(&r.stock_name), installed(&r.package)) {
                (Some(stock), _) => Some(stock.version.as_str()),
                (None, Some(_)) => Some(r.stock_version.as_str()),
                (None, None) => None,
            };
            (
                r.stock_name.clone(),
                version.and_then(rocm::release_of_package_version),
            )
        })
        .collect()
}

/// The one release the installed packages of [`replaced_releases`] carry; None when none is
/// installed or they differ. A package neither installed as stock nor as ours carries no
/// release to disagree with: one of ours force-removed (the repair reinstalls it), or a HIP
/// sibling an ordinary host never installed (`libhiprtc6` on sid) that ours brings.
pub fn one_release(found: &[(String, Option<String>)]) -> Option<String> {
    let mut releases = found.iter().filter_map(|(_, r)| r.as_deref());
    let first = releases.next()?;
    releases.all(|r| r == first).then(|| first.to_string())
}

/// The gate for a flavour whose release is its packages' versions (Debian's, no
/// `.info/version`): the release each stock package replaced carries on this host (its
/// installed version, or the stock version ours Provides when ours is installed), against the
/// release the replacements were made for (the marker's stock versions).
pub fn evaluate_by_package_versions(
    root: &Root,
    marker: &rocm::Marker,
    mode: GateMode,
) -> anyhow::Result<GateDecision> {
    let entries = crate::rocm::read_status(root)?;
    let wanted = marker
        .replaced
        .first()
        .and_then(|r| rocm::release_of_package_version(&r.stock_version))
        .unwrap_or_else(|| rocm::TARGET_ROCM_VERSION.to_string());
    let found = replaced_releases(&entries, marker);
    let found_release = one_release(&found);
    let matches = found_release.as_deref() == Some(wanted.as_str());
    let names: Vec<String> = found
        .iter()
        .map(|(n, r)| format!("{n} {}", r.as_deref().unwrap_or("not installed")))
        .collect();
    let reason = match &found_release {
        Some(v) if matches => format!(
            "ROCm {v} from the package versions ({}) matches {wanted}",
            names.join(", ")
        ),
        _ => format!(
            "ROCm from the package versions ({}) does not match {wanted}",
            names.join(", ")
        ),
    };
    let finding = reason.clone();
    let reason = with_mode(reason, mode, matches);
    Ok(GateDecision {
        mode,
        target_prefix: marker.prefix.clone(),
        found_version: found_release,
        wanted_version: wanted,
        rocm_path_chain: None,
        rocm_path_elsewhere: false,
        rocm_path_other: None,
        matches,
        reason,
        finding,
    })
}

pub fn write_skip_record(root: &Root, reason: &str) -> anyhow::Result<()> {
    let p = root.host_path(StateLayout::skip_record());
    if let Some(d) = p.parent() {
        std::fs::create_dir_all(d).with_context(|| format!("cannot create {}", d.display()))?;
    }
    std::fs::write(&p, format!("{reason}\n"))
        .with_context(|| format!("cannot write the skip record {}", p.display()))
}

pub fn read_skip_record(root: &Root) -> Option<String> {
    root.read_to_string(StateLayout::skip_record(), FileKind::StateRecord)
        .ok()
        .map(|s| s.trim().to_string())
}

pub fn clear_skip_record(root: &Root) -> anyhow::Result<()> {
    let p = root.host_path(StateLayout::skip_record());
    match std::fs::remove_file(&p) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e).with_context(|| format!("cannot remove {}", p.display())),
    }
}

/// The gate's finding with what the mode does about it (the same words for both flavours).
fn with_mode(mut reason: String, mode: GateMode, matches: bool) -> String {
    match mode {
        GateMode::Off => reason = format!("mode off: not installing ({reason})"),
        GateMode::Auto if !matches => reason.push_str("; mode auto: skipped, nothing changed"),
        GateMode::Require if !matches => reason.push_str(rocm::REQUIRE_REFUSES),
        _ => {}
    }
    reason
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root_with(version: Option<&str>, link_to: &str) -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        let r = d.path();
        std::fs::create_dir_all(r.join("opt/rocm-7.2.4/.info")).unwrap();
        std::fs::create_dir_all(r.join("etc/alternatives")).unwrap();
        if let Some(v) = version {
            std::fs::write(r.join("opt/rocm-7.2.4/.info/version"), v).unwrap();
        }
        std::os::unix::fs::symlink(link_to, r.join("etc/alternatives/rocm")).unwrap();
        std::os::unix::fs::symlink("/etc/alternatives/rocm", r.join("opt/rocm")).unwrap();
        d
    }

    #[test]
    fn gate_matrix_versions_by_modes() {
        let cases = [
            (Some("7.2.4\n"), true),
            (Some("7.2.4-42\n"), true),
            (Some("7.2.4+123\n"), true),
            (Some("7.2.40\n"), false),
            (Some("7.2.3\n"), false),
            (Some("10.0.0\n"), false),
            (None, false),
        ];
        for (v, want) in cases {
            let d = root_with(v, "/opt/rocm-7.2.4");
            for mode in [GateMode::Require, GateMode::Auto, GateMode::Off] {
                let g = evaluate(&Root::new(d.path()), "/opt/rocm-7.2.4", mode, "7.2.4");
                assert_eq!(g.matches, want, "{v:?} {mode:?}: {}", g.reason);
                assert_eq!(g.proceed(), want && mode != GateMode::Off);
                assert!(!g.rocm_path_elsewhere);
                if v.is_none() {
                    assert!(g.reason.contains("missing"), "{}", g.reason);
                }
            }
        }
    }

    #[test]
    fn says_when_opt_rocm_points_elsewhere() {
        let d = root_with(Some("7.2.4"), "/opt/rocm-7.2.5");
        std::fs::create_dir_all(d.path().join("opt/rocm-7.2.5")).unwrap();
        let g = evaluate(
            &Root::new(d.path()),
            "/opt/rocm-7.2.4",
            GateMode::Require,
            "7.2.4",
        );
        assert!(g.matches && g.rocm_path_elsewhere, "{g:?}");
        assert!(g.reason.contains("/opt/rocm-7.2.5"));
        assert_eq!(g.rocm_path_chain.unwrap().len(), 3);
    }

    #[test]
    fn require_refuses_naming_the_version_found_and_the_one_required() {
        let d = root_with(Some("7.2.3\n"), "/opt/rocm-7.2.4");
        let g = evaluate(
            &Root::new(d.path()),
            "/opt/rocm-7.2.4",
            GateMode::Require,
            "7.2.4",
        );
        let err = anyhow::Error::from(g.refusal().expect("7.2.3 is refused"));
        assert!(
            matches!(err.downcast_ref::<GateError>(),
                Some(GateError::GateRefused { found: Some(found), required, .. })
                    if found == "7.2.3" && required == "7.2.4"),
            "{err:?}"
        );
        assert_eq!(crate::error::exit_code_for(&err), 2);
        // The refusal says what the decision's reason says, on every kind of host.
        assert_eq!(err.to_string(), g.reason);
        let missing = root_with(None, "/opt/rocm-7.2.4");
        let elsewhere = root_with(Some("7.2.3"), "/opt/rocm-7.2.5");
        std::fs::create_dir_all(elsewhere.path().join("opt/rocm-7.2.5")).unwrap();
        for root in [&missing, &elsewhere] {
            let g = evaluate(
                &Root::new(root.path()),
                "/opt/rocm-7.2.4",
                GateMode::Require,
                "7.2.4",
            );
            let e = g.refusal().expect("refused");
            assert_eq!(e.to_string(), g.reason);
            if root.path() == missing.path() {
                assert!(
                    matches!(e, GateError::GateRefused { found: None, .. }),
                    "{e:?}"
                );
            } else {
                assert!(
                    matches!(&e, GateError::GateRefused { rocm_path_elsewhere: Some(p), .. }
                        if p == Path::new("/opt/rocm-7.2.5")),
                    "{e:?}"
                );
            }
        }
        // Only mode require on a host that does not match refuses.
        for mode in [GateMode::Auto, GateMode::Off] {
            assert!(
                evaluate(&Root::new(d.path()), "/opt/rocm-7.2.4", mode, "7.2.4")
                    .refusal()
                    .is_none()
            );
        }
        let ok = root_with(Some("7.2.4"), "/opt/rocm-7.2.4");
        assert!(evaluate(
            &Root::new(ok.path()),
            "/opt/rocm-7.2.4",
            GateMode::Require,
            "7.2.4"
        )
        .refusal()
        .is_none());
    }

    /// Debian's flavour under mode `require` (the default): the refusal says what the gate
    /// judged, the package versions, not AMD's `/usr/.info/version is missing`.
    #[test]
    fn debians_refusal_names_the_package_versions() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("var/lib/dpkg")).unwrap();
        std::fs::write(
            d.path().join("var/lib/dpkg/status"),
            "Package: libamdhip64-7\nStatus: install ok installed\nArchitecture: amd64\n\
             Version: 7.1.0-1\nDescription: x\n",
        )
        .unwrap();
        let marker = rocm::Marker {
            commit: rocm::PIN_COMMIT.into(),
            commit_time: 0,
            suffix: "debian".into(),
            prefix: "/usr".into(),
            replaced: vec![rocm::ReplacedPackage {
                stock_name: "libamdhip64-7".into(),
                stock_version: "7.2.4-1~exp2".into(),
                architecture: "amd64".into(),
                package: "libamdhip64-7-pinned".into(),
                version: "7.2.4-1~exp2+pin1".into(),
            }],
            libraries: vec![],
            files: Default::default(),
            tool_version: "t".into(),
            patches: vec![],
            backport_check_skipped: false,
            source: None,
            missing_symbols: Default::default(),
        };
        let g =
            evaluate_by_package_versions(&Root::new(d.path()), &marker, GateMode::Require).unwrap();
        let e = g.refusal().expect("7.1 is not 7.2.4").to_string();
        assert!(e.contains("libamdhip64-7 7.1"), "{e}");
        assert!(e.contains("does not match 7.2.4"), "{e}");
        assert!(!e.contains(".info/version"), "{e}");
        assert_eq!(e, g.reason);
    }

    /// One of ours force-removed (its stock not back either): the repair `rocm-pin install`
    /// is judged by the packages still installed, not refused for the missing one (the
    /// advice loop of issue 32). Another release on an installed one still refuses.
    #[test]
    fn a_package_neither_stock_nor_ours_does_not_refuse_the_repair() {
        let found = |hsa: Option<&str>| {
            vec![
                ("libhsa-runtime64-1".to_string(), hsa.map(str::to_string)),
                ("libamdhip64-7".to_string(), Some("7.2.4".to_string())),
            ]
        };
        assert_eq!(one_release(&found(None)).as_deref(), Some("7.2.4"));
        assert_eq!(one_release(&found(Some("7.1.0"))), None);
        assert_eq!(one_release(&found(Some("7.2.4"))).as_deref(), Some("7.2.4"));
        let nothing = vec![("libamdhip64-7".to_string(), None)];
        assert_eq!(one_release(&nothing), None);
    }

    #[test]
    fn skip_record_round_trip() {
        let d = tempfile::tempdir().unwrap();
        assert!(read_skip_record(&Root::new(d.path())).is_none());
        write_skip_record(&Root::new(d.path()), "why").unwrap();
        assert_eq!(
            read_skip_record(&Root::new(d.path())).as_deref(),
            Some("why")
        );
        clear_skip_record(&Root::new(d.path())).unwrap();
        clear_skip_record(&Root::new(d.path())).unwrap();
        assert!(read_skip_record(&Root::new(d.path())).is_none());
    }
}
