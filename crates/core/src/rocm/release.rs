//! Which ROCm release: the target the pinned pair is built for, where AMD installs a release
//! (`/opt/rocm-<release>`, reached through the `/opt/rocm` chain), and reading a release from a
//! `.info/version`, a versioned prefix or a stock package version. A leaf of `rocm`.

use std::path::{Path, PathBuf};

use crate::host::root::{Missing, Root};

/// The ROCm release the pinned pair is built for.
pub const TARGET_ROCM_VERSION: &str = "7.2.4";

/// Default ROCm install path; always resolved through its symlink chain before use.
pub const DEFAULT_ROCM_PATH: &str = "/opt/rocm";

/// The versioned prefix of ROCm `release` in AMD's layout (`/opt/rocm-7.2.4`).
pub fn versioned_prefix(release: &str) -> String {
    format!("{DEFAULT_ROCM_PATH}-{release}")
}

/// The ROCm version file, relative to the prefix.
pub const VERSION_RELPATH: &str = ".info/version";

/// Resolve a ROCm path through its whole symlink chain (`/opt/rocm -> /etc/alternatives/rocm ->
/// /opt/rocm-7.2.4`), relative to `root` (a chroot or `/`): absolute link targets are
/// interpreted inside `root`. Returns the resolved path *inside* root (e.g. `/opt/rocm-7.2.4`)
/// and every hop for reporting.
pub fn resolve_rocm_path(root: &Root, path: &Path) -> anyhow::Result<(PathBuf, Vec<PathBuf>)> {
    let resolved = root.resolve(path, Missing::Fail)?;
    Ok((resolved.path, resolved.hops))
}

/// Does a `.info/version` content name the target release? `7.2.4`, `7.2.4-42`, `7.2.4+123`
/// match `7.2.4`; `7.2.40`, `7.2.3`, `10.0.0` do not (same rule as the seed's
/// `^7\.2\.4([+-]|$)`, which the review checked).
pub fn version_matches(version_file_content: &str, target: &str) -> bool {
    let v = version_file_content.lines().next().unwrap_or("").trim();
    match v.strip_prefix(target) {
        Some(rest) => rest.is_empty() || rest.starts_with('-') || rest.starts_with('+'),
        None => false,
    }
}

/// The ROCm release a set of packages was made for, from its versioned prefix
/// (`/opt/rocm-6.3.0` → `6.3.0`); [`TARGET_ROCM_VERSION`] when the prefix carries none.
pub fn release_of_prefix(prefix: &str) -> String {
    prefix
        .trim_end_matches('/')
        .rsplit('/')
        .next()
        .and_then(|dir| dir.strip_prefix("rocm-"))
        .filter(|v| !v.is_empty() && v.chars().all(|c| c.is_ascii_digit() || c == '.'))
        .unwrap_or(TARGET_ROCM_VERSION)
        .to_string()
}

/// The ROCm release a stock package version encodes in its 5-digit release component
/// (`7.2.53211.70205-1~24.04` → `7.2.5`, `1.18.0.70204-93~24.04` → `7.2.4`). None when the
/// version has no such component.
pub fn release_of_stock_version(version: &str) -> Option<String> {
    let upstream = version.split_once(':').map_or(version, |(_, v)| v);
    let upstream = upstream.rsplit_once('-').map_or(upstream, |(u, _)| u);
    let last = upstream.rsplit('.').next()?;
    let n: u32 = (last.len() == 5).then(|| last.parse().ok()).flatten()?;
    Some(format!("{}.{}.{}", n / 10000, (n / 100) % 100, n % 100))
}

/// The ROCm release a Debian package version carries: its upstream part without epoch,
/// revision and repack/pre-release suffixes (`7.2.4+dfsg-1~exp1` → 7.2.4, `1:6.4.3-5` →
/// 6.4.3, `7.2.4~rc1-1` → 7.2.4). None when the upstream part does not start with
/// `<digits>.<digits>`.
pub fn release_of_package_version(version: &str) -> Option<String> {
    let upstream = version.split_once(':').map_or(version, |(_, v)| v);
    let upstream = upstream.rsplit_once('-').map_or(upstream, |(u, _)| u);
    // The leading run of digits and dots: `7.2.4` of `7.2.4+dfsg` or `7.2.4~rc1`.
    let release = upstream
        .split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .next()?
        .trim_end_matches('.');
    let parts: Vec<&str> = release.split('.').collect();
    (parts.len() >= 2 && parts.iter().all(|p| !p.is_empty() && p.len() <= 5))
        .then(|| release.to_string())
}

pub fn version_file(target_prefix: &str) -> String {
    format!(
        "{}/{}",
        target_prefix.trim_end_matches('/'),
        VERSION_RELPATH
    )
}

#[cfg(test)]
#[path = "release_tests.rs"]
mod tests;
