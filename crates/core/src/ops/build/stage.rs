//! Two things between the source check and the cmake steps: the tool's own checkout with the
//! patch series applied, and the ROCr stage cache — ROCr's build tree and private prefix are
//! kept, with a record of the inputs they were built from, so a build that fails later (CLR's
//! configure or build) does not rebuild ROCr when run again with the same inputs.

use std::path::{Path, PathBuf};

use anyhow::Context;
use sha2::{Digest, Sha256};

use super::cache::CacheKey;
use super::patches;
use super::source::SourceSpec;
use super::steps::Layout;
use crate::progress::{self, Listener};

/// Relative to the work directory.
pub(crate) const ROCR_STAGE_FILE: &str = "rocr-stage.json";

/// What the checkout and series steps take of a prepared build. Its own type, so this file
/// needs nothing of the build module that calls it.
pub(super) struct Checkout<'a> {
    pub(super) spec: &'a SourceSpec,
    pub(super) commit: &'a str,
    pub(super) layout: &'a Layout,
    pub(super) series: &'a [patches::Patch],
}

/// The `--dry-run` lines for the checkout and the series (nothing when there is no series).
pub(super) fn plan_lines(p: &Checkout<'_>) -> Vec<String> {
    let mut lines = vec![];
    if p.series.is_empty() {
        return lines;
    }
    let checkout = &p.layout.checkout;
    if let SourceSpec::Local(dir) = &p.spec {
        lines.push(format!(
            "# step checkout: the tool's own checkout of {} at {} (shared objects; yours is only read)",
            dir.display(),
            p.commit
        ));
        lines.extend(
            patches::local_checkout_commands(dir, p.commit, checkout, crate::rocm::SOURCE_PATHS)
                .iter()
                .map(|c| c.to_string()),
        );
    }
    lines.push(format!(
        "# step patch: {} patch(es) applied in order before configuring",
        p.series.len()
    ));
    for patch in p.series {
        lines.push(format!(
            "# patch {} sha256 {}",
            patch.record.name, patch.record.sha256
        ));
        lines.push(patches::apply_command(checkout, patch).to_string());
    }
    lines
}

/// Put the tool's checkout back to exactly `commit` (undoing an earlier series).
fn reset_checkout(dir: &Path, commit: &str) -> anyhow::Result<()> {
    let d = dir.display().to_string();
    patches::run_quiet(&[
        super::steps::Cmd::new(
            "git",
            [
                "-C",
                &d,
                "-c",
                "advice.detachedHead=false",
                "checkout",
                "--quiet",
                "--force",
                "--detach",
                commit,
            ],
        ),
        super::steps::Cmd::new("git", ["-C", &d, "clean", "-fdq"]),
    ])
}

/// Before a URL's reuse check: a checkout patched by an earlier build is reset first.
pub(super) fn reset_if_patched(p: &Checkout<'_>) -> anyhow::Result<()> {
    if !p.series.is_empty() && p.layout.checkout.join(".git").exists() {
        reset_checkout(&p.layout.checkout, p.commit)?;
    }
    Ok(())
}

/// With a series and a local source: make (or reset) the tool's own checkout. Then apply the
/// series to the checkout being built. No-op without a series.
pub(super) fn checkout_and_patch(p: &Checkout<'_>, listener: &dyn Listener) -> anyhow::Result<()> {
    if p.series.is_empty() {
        return Ok(());
    }
    let checkout = &p.layout.checkout;
    if let SourceSpec::Local(dir) = &p.spec {
        progress::step(listener, "checkout", || {
            if checkout.join(".git").exists() && reset_checkout(checkout, p.commit).is_ok() {
                return Ok(());
            }
            if checkout.exists() {
                std::fs::remove_dir_all(checkout)
                    .with_context(|| format!("removing {}", checkout.display()))?;
            }
            patches::run_quiet(&patches::local_checkout_commands(
                dir,
                p.commit,
                checkout,
                crate::rocm::SOURCE_PATHS,
            ))
        })?;
    }
    progress::step(
        listener,
        &format!("apply {} patch(es)", p.series.len()),
        || patches::apply_series(checkout, p.commit, p.series),
    )
}

/// The inputs ROCr's stage depends on: the whole key but CLR's own arguments, the
/// backport-check switch (which only decides validation after the build) and the patches that
/// change only CLR or HIP (`clr_only`: path prefixes ROCr's build never reads).
pub(crate) fn rocr_stage_digest(
    key: &CacheKey,
    series: &[patches::Patch],
    clr_only: &[&str],
) -> String {
    let mut k = key.clone();
    k.clr_cmake_args.clear();
    k.backport_check = true;
    k.patches = series
        .iter()
        .filter(|p| {
            p.touches.is_empty()
                || p.touches
                    .iter()
                    .any(|t| !clr_only.iter().any(|c| t.starts_with(c)))
        })
        .map(|p| p.record.clone())
        .collect();
    let bytes = serde_json::to_vec(&k).unwrap_or_else(|_| format!("{k:?}").into_bytes());
    hex::encode(Sha256::digest(bytes))
}

fn record_path(layout: &Layout) -> PathBuf {
    layout.work.join(ROCR_STAGE_FILE)
}

/// True when the last ROCr stage in `layout` was built from `digest` and is still there.
pub(crate) fn rocr_stage_valid(layout: &Layout, digest: &str) -> bool {
    std::fs::read_to_string(record_path(layout)).is_ok_and(|t| t.trim() == digest)
        && layout.rocr_build.join("CMakeCache.txt").is_file()
        && layout.rocr_prefix.join("lib").is_dir()
}

/// What [`super::staging_dir::clean_staging`] keeps when the ROCr stage is reused.
pub(crate) fn rocr_stage_paths(layout: &Layout) -> Vec<PathBuf> {
    vec![
        layout.rocr_build.clone(),
        layout.rocr_prefix.clone(),
        layout.cmake_dir.clone(),
        record_path(layout),
    ]
}

/// After ROCr's private install succeeded.
pub(crate) fn mark_rocr_stage(layout: &Layout, digest: &str) -> anyhow::Result<()> {
    let path = record_path(layout);
    std::fs::write(&path, format!("{digest}\n"))
        .with_context(|| format!("writing {}", path.display()))
}
