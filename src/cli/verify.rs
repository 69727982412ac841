//! `rocm-pin verify`.

use std::path::PathBuf;

use clap::Args;

use crate::cli_shared::verify_root::{self, RootVerifyArgs};
use rocm_pin_core::image::limits::ImageLimits;
use rocm_pin_core::image::ImageSource;
use rocm_pin_core::ops::verify_image::verify_image_with_consumers;

/// Check that the patched runtime is installed, pinned and the one the loader uses.
///
/// Read-only. Exit 0 when every check passes, 1 when any fails, 2 for usage or environment
/// errors, 3 when the version gate skipped this host (its skip record exists).
///
/// Example: `rocm-pin verify --json | jq '.checks[] | select(.ok | not)'`
#[derive(Args, Debug)]
pub struct VerifyArgs {
    /// The flags of a verify of a root, shared with rocm-pin-guard's verify
    #[command(flatten)]
    pub at: RootVerifyArgs,
    /// Check a built image without running it: unpack its layers (fetched with skopeo; no
    /// transport prefix means docker://, e.g. containers-storage:NAME for local images) into a
    /// temporary root, verify there, and check its io.rocm-pin.commit label
    #[arg(long, value_name = "REF", conflicts_with_all = ["root", "image_archive"])]
    pub image: Option<String>,
    /// Like --image, from an oci-archive or docker-archive tarball
    #[arg(long, value_name = "FILE", conflicts_with = "root")]
    pub image_archive: Option<PathBuf>,
    /// Raise (or lower) a limit on unpacking the image, repeatable: bytes=64G (written in
    /// all), entries=4000000, file-bytes=16G (one file), depth=128 (path components),
    /// ratio=1000 (uncompressed per compressed byte of a layer). See docs/docker.md
    #[arg(long, value_name = "KEY=VALUE")]
    pub image_limit: Vec<String>,
    /// Check a Python venv holding ROCm as wheels instead: our rocm-sdk-core installed and its
    /// pin for pip and uv in force (docs/wheels.md)
    #[arg(long, value_name = "DIR", conflicts_with_all = ["image", "image_archive", "consumer"])]
    pub venv: Option<PathBuf>,
}

pub fn run(args: VerifyArgs) -> anyhow::Result<()> {
    let at = args.at;
    if let Some(venv) = &args.venv {
        return super::venv::verify(venv, at.json, at.quiet);
    }
    let image = match (&args.image, &args.image_archive) {
        (Some(r), _) => Some(ImageSource::Reference(r.clone())),
        (None, Some(p)) => Some(ImageSource::Archive(p.clone())),
        (None, None) => None,
    };
    if image.is_none() && !args.image_limit.is_empty() {
        return Err(rocm_pin_core::error::usage(
            "--image-limit applies to --image and --image-archive only",
        ));
    }
    let Some(source) = image else {
        return verify_root::run(at);
    };
    let mut limits = ImageLimits::default();
    for spec in &args.image_limit {
        limits.set(spec).map_err(rocm_pin_core::error::usage)?;
    }
    let report = verify_image_with_consumers(
        &source,
        at.accept_skipped_backport_check,
        &limits,
        &at.consumer,
    )?;
    verify_root::print(&report, at.json, at.quiet)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rocm_pin_core::ops::verify::VerifyError;
    use rocm_pin_core::rocm::gate::GateError;

    fn args(root: &std::path::Path) -> VerifyArgs {
        VerifyArgs {
            at: RootVerifyArgs {
                json: false,
                quiet: true,
                root: root.to_path_buf(),
                accept_skipped_backport_check: false,
                consumer: Vec::new(),
            },
            image: None,
            image_archive: None,
            image_limit: Vec::new(),
            venv: None,
        }
    }

    #[test]
    fn a_host_the_gate_skipped_ends_with_exit_3_and_the_skip_record() {
        let d = tempfile::tempdir().unwrap();
        rocm_pin_core::rocm::gate::write_skip_record(
            &rocm_pin_core::host::root::Root::new(d.path()),
            "ROCm 7.2.5 at /opt/rocm-7.2.5",
        )
        .unwrap();
        let err = run(args(d.path())).unwrap_err();
        assert!(
            matches!(err.downcast_ref::<GateError>(),
                Some(GateError::GateSkipped { reason }) if reason == "ROCm 7.2.5 at /opt/rocm-7.2.5"),
            "{err:?}"
        );
        assert_eq!(rocm_pin_core::error::exit_code_for(&err), 3);
    }

    #[test]
    fn a_host_without_the_runtime_fails_verify_with_exit_1() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("var/lib/dpkg")).unwrap();
        std::fs::write(d.path().join("var/lib/dpkg/status"), "").unwrap();
        let err = run(args(d.path())).unwrap_err();
        match err.downcast_ref::<VerifyError>() {
            Some(VerifyError::VerifyFailed { failed, names }) => {
                assert!(*failed >= 1 && !names.is_empty(), "{err}");
                assert!(*failed >= names.len(), "{err}");
            }
            other => panic!("not VerifyFailed: {other:?} ({err})"),
        }
        assert_eq!(rocm_pin_core::error::exit_code_for(&err), 1);
    }
}
