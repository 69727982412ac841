//! `rocm-pin verify`.

use std::path::PathBuf;

use clap::Args;

use crate::error::ExitError;
use crate::image::ImageSource;
use crate::image_verify::verify_image;
use crate::verify::{verify, VerifyOptions};

/// Check that the patched runtime is installed, pinned and the one the loader uses.
///
/// Read-only. Exit 0 when every check passes, 1 when any fails, 2 for usage or environment
/// errors, 3 when the version gate skipped this host (its skip record exists).
///
/// Example: `rocm-pin verify --json | jq '.checks[] | select(.ok | not)'`
#[derive(Args, Debug)]
pub struct VerifyArgs {
    /// Print the report as JSON on stdout (schema: docs/verify-json.md)
    #[arg(long)]
    pub json: bool,
    /// Print nothing when every check passes; only the failed checks otherwise (for hooks)
    #[arg(long, short)]
    pub quiet: bool,
    /// Check the installation under this root directory instead of / (a chroot or image tree)
    #[arg(long, default_value = "/")]
    pub root: PathBuf,
    /// Check a built image without running it: unpack its layers (fetched with skopeo; no
    /// transport prefix means docker://, e.g. containers-storage:NAME for local images) into a
    /// temporary root, verify there, and check its io.rocm-pin.commit label
    #[arg(long, value_name = "REF", conflicts_with_all = ["root", "image_archive"])]
    pub image: Option<String>,
    /// Like --image, from an oci-archive or docker-archive tarball
    #[arg(long, value_name = "FILE", conflicts_with = "root")]
    pub image_archive: Option<PathBuf>,
    /// Accept packages built with --no-backport-check (recorded in them): their HSA library may
    /// lack the backport symbol; without this flag that is a failure
    #[arg(long)]
    pub accept_skipped_backport_check: bool,
}

pub fn run(args: VerifyArgs) -> anyhow::Result<()> {
    let image = match (&args.image, &args.image_archive) {
        (Some(r), _) => Some(ImageSource::Reference(r.clone())),
        (None, Some(p)) => Some(ImageSource::Archive(p.clone())),
        (None, None) => None,
    };
    let report = match image {
        Some(source) => verify_image(&source, args.accept_skipped_backport_check)?,
        None => verify(&VerifyOptions {
            root: crate::host::root::Root::new(&args.root),
            accept_skipped_backport_check: args.accept_skipped_backport_check,
            ..VerifyOptions::default()
        })?,
    };
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&report)?);
    } else if args.quiet {
        for c in report.failed() {
            errln!(
                "rocm-pin verify: FAIL {} {}: {}",
                c.name,
                c.subject,
                c.detail
            );
        }
    } else {
        out!("{}", report.to_human());
    }
    match report.exit_code() {
        0 => Ok(()),
        3 => Err(ExitError::skipped(format!(
            "the version gate skipped this host ({}): the patched runtime is not installed by design",
            report.skipped.as_deref().unwrap_or("")
        ))
        .into()),
        _ => {
            let names: std::collections::BTreeSet<&str> =
                report.failed().map(|c| c.name.as_str()).collect();
            Err(ExitError::check_failed(format!(
                "verify failed: {} check(s) failed ({})",
                report.failed().count(),
                names.into_iter().collect::<Vec<_>>().join(", ")
            ))
            .into())
        }
    }
}
