//! `rocm-pin verify --image REF | --image-archive FILE`: a built image checked from the outside,
//! the way CI checks a published tag. The image is unpacked ([`crate::image`]) into a temporary
//! root, every verify check runs there (`verify --root`), and the image's commit label must name
//! the commit the installed replacement packages carry.

use std::collections::BTreeSet;

use crate::image::limits::ImageLimits;
use crate::image::{self, ImageSource};
use crate::ops::verify::{verify, Check, VerifyOptions, VerifyReport};
use crate::rocm;

/// The label the recipe's Dockerfiles set on every image that carries the runtime.
pub const COMMIT_LABEL: &str = "io.rocm-pin.commit";
/// The OCI revision label, checked when [`COMMIT_LABEL`] is absent (the artifact image sets
/// both; a downstream image's revision is its own project's, so the recipe sets ours there).
pub const OCI_REVISION_LABEL: &str = "org.opencontainers.image.revision";

/// Unpack `source` (within `limits`) and verify it. Errors (exit 2) only when the image cannot
/// be read; a signal during the run is [`crate::image::ImageError::Interrupted`], the root removed.
pub fn verify_image(
    source: &ImageSource,
    accept_skipped_backport_check: bool,
    limits: &ImageLimits,
) -> anyhow::Result<VerifyReport> {
    verify_image_with_consumers(source, accept_skipped_backport_check, limits, &[])
}

/// [`verify_image`], judging `consumers` (paths inside the image, `verify --consumer`) too.
pub fn verify_image_with_consumers(
    source: &ImageSource,
    accept_skipped_backport_check: bool,
    limits: &ImageLimits,
    consumers: &[std::path::PathBuf],
) -> anyhow::Result<VerifyReport> {
    let unpacked = image::unpack_within(source, limits)?;
    let root = crate::host::root::Root::new(unpacked.root());
    let opts = VerifyOptions {
        root: root.clone(),
        // The host's LD_LIBRARY_PATH says nothing about the image; the image's own
        // (config.Env) is what a container started from it has.
        ld_library_path: unpacked
            .env_var("LD_LIBRARY_PATH")
            .filter(|v| !v.is_empty())
            .map(str::to_string),
        accept_skipped_backport_check,
        consumers: consumers.to_vec(),
        ..VerifyOptions::default()
    };
    let mut report = verify(&opts)?;
    // A signal that arrived while verify read the root ends the run now, not with a report.
    unpacked.check_interrupt()?;
    report.root = source.describe();
    if report.skipped.is_some() {
        return Ok(report);
    }
    if let Some(check) = label_check(&unpacked.labels, &root)? {
        report.ok = report.ok && check.ok;
        report.checks.push(check);
    }
    Ok(report)
}

/// The commit label against the installed packages' commit; None when the image has no label.
fn label_check(
    labels: &std::collections::BTreeMap<String, String>,
    root: &crate::host::root::Root,
) -> anyhow::Result<Option<Check>> {
    let Some((name, value)) = [COMMIT_LABEL, OCI_REVISION_LABEL]
        .into_iter()
        .find_map(|n| labels.get(n).map(|v| (n, v.trim())))
    else {
        return Ok(None);
    };
    let installed: BTreeSet<String> = crate::rocm::read_status(root)?
        .into_iter()
        .filter(|e| e.has_files())
        .filter_map(|e| e.extra.get(rocm::COMMIT_FIELD).cloned())
        .collect();
    let ok = installed.len() == 1 && installed.contains(value);
    let detail = if ok {
        format!("{value} = {} of the installed packages", rocm::COMMIT_FIELD)
    } else if installed.is_empty() {
        format!(
            "the image says {value}, but no installed package carries {}",
            rocm::COMMIT_FIELD
        )
    } else {
        format!(
            "the image says {value}, but the installed packages carry {}: the image was built from another artifact than its label names (rebuild it, or fix the label)",
            installed.into_iter().collect::<Vec<_>>().join(", ")
        )
    };
    Ok(Some(Check {
        name: "image-label".into(),
        subject: name.into(),
        ok,
        detail,
        environment: false,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn root_with_commit(commit: &str) -> tempfile::TempDir {
        let t = tempfile::tempdir().unwrap();
        let dpkg = t.path().join("var/lib/dpkg");
        std::fs::create_dir_all(&dpkg).unwrap();
        std::fs::write(
            dpkg.join("status"),
            format!(
                "Package: hip-runtime-amd-pinned\nStatus: install ok installed\nVersion: 1\nArchitecture: amd64\n{}: {commit}\n\n",
                rocm::COMMIT_FIELD
            ),
        )
        .unwrap();
        t
    }

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn the_commit_label_must_name_the_installed_commit() {
        let a = "a".repeat(40);
        let b = "b".repeat(40);
        let root = root_with_commit(&a);
        let ok = label_check(
            &labels(&[(COMMIT_LABEL, &a)]),
            &crate::host::root::Root::new(root.path()),
        )
        .unwrap()
        .unwrap();
        assert!(ok.ok, "{ok:?}");
        let bad = label_check(
            &labels(&[(COMMIT_LABEL, &b)]),
            &crate::host::root::Root::new(root.path()),
        )
        .unwrap()
        .unwrap();
        assert!(!bad.ok && bad.detail.contains(&a), "{bad:?}");
        // Ours wins over the OCI revision (a downstream image's revision is its own project's).
        let both = labels(&[(COMMIT_LABEL, &a), (OCI_REVISION_LABEL, &b)]);
        assert!(
            label_check(&both, &crate::host::root::Root::new(root.path()))
                .unwrap()
                .unwrap()
                .ok
        );
        let rev = label_check(
            &labels(&[(OCI_REVISION_LABEL, &b)]),
            &crate::host::root::Root::new(root.path()),
        )
        .unwrap()
        .unwrap();
        assert!(!rev.ok && rev.subject == OCI_REVISION_LABEL, "{rev:?}");
        assert!(
            label_check(&labels(&[]), &crate::host::root::Root::new(root.path()))
                .unwrap()
                .is_none()
        );
    }
}
