//! The exit-code contract shared by every subcommand, at the top of the library (layer 5,
//! docs/design.md "Layers"): it knows every domain's error type, and no domain knows it.
//!
//! 0 success; 1 a check failed (verify, install's post-check, rollback's post-check);
//! 2 usage or environment error (bad input, missing tool, refused operation);
//! 3 the ROCm version gate skipped this host (verify after an `auto` skip).
//!
//! Each domain owns its errors and their wording (`ops::build::BuildError`,
//! `rocm::gate::GateError`, `ops::repo::RepoError`, `deb::DebError`, …), each with `kind()`,
//! and turns them into an `anyhow::Error` itself; plain-message failures are
//! [`crate::exit::Failure`]. Each text is what the user reads on stderr (`rocm-pin: error: …`).
//! [`ExitKind::code`] is the one table of exit numbers; [`exit_code_for`], which `main` calls,
//! finds the first error of a known domain type anywhere in an `anyhow` chain ([`kind_of`] is
//! the one list of them). Whether an operation had changed the host when it failed is a fact
//! carried by [`crate::exit::AfterChange`] ([`HostChange`]), never read from an exit code.

pub use crate::exit::{find, host_change, usage, AfterChange, ExitKind, Failure, HostChange};
use std::error::Error as StdError;

/// The exit kind of one link of a chain when it is an error of a known domain type: each
/// domain says for its own errors. The one list of the library's error types.
pub fn kind_of(link: &(dyn StdError + 'static)) -> Option<ExitKind> {
    macro_rules! first_of {
        ($($ty:ty => $kind:expr),* $(,)?) => {
            $(if let Some(e) = link.downcast_ref::<$ty>() {
                let kind: fn(&$ty) -> ExitKind = $kind;
                return Some(kind(e));
            })*
        };
    }
    first_of! {
        Failure => Failure::kind,
        crate::host::root::RootReadError => |_| ExitKind::Usage,
        crate::host::status::BadRootValue => |_| ExitKind::Usage,
        // Bad input read from a file, a package or a root: usage or environment (exit 2).
        crate::host::root::ResolveError => |_| ExitKind::Usage,
        crate::deb::control::ControlError => |_| ExitKind::Usage,
        crate::deb::version::VersionError => |_| ExitKind::Usage,
        crate::deb::date::DateError => |_| ExitKind::Usage,
        crate::host::HostError => crate::host::HostError::kind,
        // The format crate's refusals (pkgformats knows no exit codes): malformed or refused
        // input, exit 2; an image's `Interrupted` ends with 128+signal (`exit_code_of`).
        crate::deb::DebError => |_| ExitKind::Usage,
        crate::elf::ElfError => |_| ExitKind::Usage,
        crate::image::ImageError => |_| ExitKind::Usage,
        crate::toolchain::ToolchainError => crate::toolchain::ToolchainError::kind,
        crate::rocm::RealTreeError => crate::rocm::RealTreeError::kind,
        crate::ops::build::BuildError => crate::ops::build::BuildError::kind,
        crate::rocm::gate::GateError => crate::rocm::gate::GateError::kind,
        crate::ops::ourdebs::error::InstallError => crate::ops::ourdebs::error::InstallError::kind,
        crate::ops::repo::RepoError => crate::ops::repo::RepoError::kind,
        crate::ops::verify::VerifyError => crate::ops::verify::VerifyError::kind,
        crate::ops::guard::GuardError => crate::ops::guard::GuardError::kind,
        crate::ops::plan::PlanError => crate::ops::plan::PlanError::kind,
    }
    None
}

/// The process exit code one link ends the run with, when it is ours: its kind's code, or
/// 128+signal for a run a signal ended. The only place an exit number is chosen.
fn exit_code_of(link: &(dyn StdError + 'static)) -> Option<i32> {
    if let Some(crate::image::ImageError::Interrupted { signal }) =
        link.downcast_ref::<crate::image::ImageError>()
    {
        // What a shell reports for a process a signal ended.
        return Some(128 + signal);
    }
    if let Some(interrupted) = link.downcast_ref::<crate::exit::Interrupted>() {
        return Some(interrupted.code());
    }
    kind_of(link).map(ExitKind::code)
}

/// Map any error to the process exit code: that of the first of our errors in the chain
/// (looking through [`AfterChange`]), else 2.
pub fn exit_code_for(err: &anyhow::Error) -> i32 {
    crate::exit::find_map(err, &exit_code_of).unwrap_or(ExitKind::Usage.code())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::build::{BadInput, BuildError};
    use crate::ops::ourdebs::error::{DebSetProblem, InstallError};
    use crate::ops::repo::{RepoConflict, RepoError};
    use crate::ops::verify::VerifyError;
    use crate::rocm::gate::GateError;
    use crate::rocm::RealTreeError;
    use crate::toolchain::ToolchainError;
    use anyhow::Context;
    use std::path::{Path, PathBuf};

    fn every_variant() -> Vec<(anyhow::Error, i32)> {
        let mut v = general_and_gate_variants();
        v.extend(build_install_and_repo_variants());
        v
    }

    fn general_and_gate_variants() -> Vec<(anyhow::Error, i32)> {
        let p = PathBuf::from("/x");
        vec![
            (anyhow::Error::from(Failure::Usage("u".into())), 2),
            (anyhow::Error::from(Failure::CheckFailed("c".into())), 1),
            (anyhow::Error::from(Failure::Skipped("s".into())), 3),
            (
                anyhow::Error::from(ToolchainError::MissingPrerequisites {
                    context: "t".into(),
                    missing: vec![],
                }),
                2,
            ),
            (
                anyhow::Error::from(ToolchainError::MissingLauncher {
                    tool: "ccache".into(),
                    package: "ccache".into(),
                }),
                2,
            ),
            (
                anyhow::Error::from(GateError::GateRefused {
                    found: None,
                    required: "7.2.4".into(),
                    finding: "/opt/rocm-7.2.4/.info/version is missing".into(),
                    rocm_path_elsewhere: None,
                }),
                2,
            ),
            (
                anyhow::Error::from(GateError::GateSkipped { reason: "r".into() }),
                3,
            ),
            (
                anyhow::Error::from(BuildError::DirtyCheckout {
                    checkout: p.clone(),
                    commit: "c".into(),
                    paths: vec![],
                    changes: vec![],
                }),
                2,
            ),
        ]
    }

    fn build_install_and_repo_variants() -> Vec<(anyhow::Error, i32)> {
        let p = PathBuf::from("/x");
        vec![
            (
                anyhow::Error::from(BuildError::ForeignOutDir { out: p.clone() }),
                2,
            ),
            (
                anyhow::Error::from(RealTreeError::ComgrIncompatible {
                    found: "3.0".into(),
                    found_in: p.clone(),
                    requested: "2.8".into(),
                    request_line: 1,
                    version_file: p.clone(),
                }),
                2,
            ),
            (
                anyhow::Error::from(RealTreeError::UnsupportedOffloadTargets {
                    clang: p.clone(),
                    gaps: vec![],
                }),
                2,
            ),
            (
                anyhow::Error::from(BuildError::NoRocmToBuildAgainst {
                    rocm_path: p.clone(),
                    url: "u".into(),
                    rocm_version: "7.2.4".into(),
                }),
                2,
            ),
            (
                anyhow::Error::from(BuildError::NotACommit {
                    given: "main".into(),
                }),
                2,
            ),
            (
                anyhow::Error::from(BuildError::WrongCommit {
                    checkout: p.clone(),
                    head: "a".into(),
                    wanted: "b".into(),
                }),
                2,
            ),
            (
                anyhow::Error::from(BuildError::BadInputFile {
                    what: "patch",
                    path: p.clone(),
                    why: BadInput::Empty,
                }),
                2,
            ),
            (
                anyhow::Error::from(BuildError::PatchDoesNotApply {
                    index: 1,
                    total: 1,
                    name: "a.patch".into(),
                    path: p.clone(),
                    commit: "c".into(),
                    files: vec![],
                    command: "git apply".into(),
                    git_stderr: String::new(),
                }),
                2,
            ),
            (
                anyhow::Error::from(InstallError::Downgrade {
                    package: "p".into(),
                    installed: "2".into(),
                    installed_commit: "c".into(),
                    offered: "1".into(),
                }),
                2,
            ),
            (
                anyhow::Error::from(InstallError::DebSet(DebSetProblem::NoMarker)),
                2,
            ),
            (
                anyhow::Error::from(RepoError::BadName {
                    what: "suite",
                    name: "a/b".into(),
                }),
                2,
            ),
            (anyhow::Error::from(RepoError::RepoConflicts(vec![])), 2),
            (
                anyhow::Error::from(RepoError::KeyExists { path: p.clone() }),
                2,
            ),
            (
                anyhow::Error::from(BuildError::StagingLocked {
                    staging: p.clone(),
                    lock: p,
                }),
                2,
            ),
            (
                anyhow::Error::from(VerifyError::VerifyFailed {
                    failed: 1,
                    names: vec!["n".into()],
                }),
                1,
            ),
        ]
    }

    #[test]
    fn each_variant_ends_the_run_with_its_exit_code() {
        for (e, code) in every_variant() {
            assert_eq!(exit_code_for(&e), code, "{e:?}");
            let wrapped = e.context("a step");
            assert_eq!(exit_code_for(&wrapped), code, "{wrapped:?}");
            let after = HostChange::Changed.attach(wrapped);
            assert_eq!(exit_code_for(&after), code, "{after:?}");
        }
        // A run a signal ended exits as a shell reports it, wherever the error sits.
        let interrupted = anyhow::Error::from(crate::image::ImageError::Interrupted { signal: 15 })
            .context("unpacking");
        assert_eq!(
            exit_code_for(&HostChange::Unchanged.attach(interrupted)),
            143
        );
        // So does a run that cleaned up after Ctrl-C (the demo), whatever wraps it.
        let ctrl_c = anyhow::Error::from(crate::exit::Interrupted {
            signal: libc::SIGINT,
            message: "demo interrupted".into(),
        })
        .context("rocm-pin demo");
        assert_eq!(exit_code_for(&ctrl_c), 130);
    }

    /// The exit statuses users read in `--help` and the man page are the table's codes.
    #[test]
    fn the_exit_status_help_lists_every_code_of_the_table() {
        let help = crate::exit::exit_status_help();
        for kind in [ExitKind::CheckFailed, ExitKind::Usage, ExitKind::Skipped] {
            let row = format!("\n  {:>3}  ", kind.code());
            assert!(help.contains(&row), "{row:?} missing from:\n{help}");
        }
        assert!(
            help.contains("\n    0  ") && help.contains("\n  130  "),
            "{help}"
        );
    }

    #[test]
    fn the_exit_code_is_found_under_any_context() {
        let inner: anyhow::Result<()> = Err(GateError::GateSkipped { reason: "r".into() }.into());
        let outer = inner
            .context("reading the host")
            .context("rocm-pin verify")
            .unwrap_err();
        assert_eq!(exit_code_for(&outer), 3);
        assert!(
            matches!(find::<GateError>(&outer), Some(GateError::GateSkipped { reason }) if reason == "r")
        );
        // Not ours at all: an environment error, exit 2.
        assert_eq!(exit_code_for(&anyhow::anyhow!("disk on fire")), 2);
        let io = std::fs::read("/nonexistent/rocm-pin").context("reading");
        assert_eq!(exit_code_for(&io.unwrap_err()), 2);
    }

    #[test]
    fn plain_constructors_keep_their_kind() {
        for kind in [ExitKind::CheckFailed, ExitKind::Usage, ExitKind::Skipped] {
            let e = Failure::new(kind, "m");
            assert_eq!(e.kind(), kind);
            assert_eq!(e.to_string(), "m");
        }
        assert_eq!(exit_code_for(&usage("u")), 2);
    }

    /// The host-changed fact rides along without changing what the user reads (the message,
    /// each cause line, the exit code) or what `find` sees; the deepest statement wins.
    #[test]
    fn the_host_changed_fact_travels_without_changing_text_or_exit_code() {
        let inner = || -> anyhow::Error {
            anyhow::Error::from(Failure::check_failed("apt-get install failed"))
                .context("running apt")
        };
        let lines = |e: &anyhow::Error| e.chain().map(|c| c.to_string()).collect::<Vec<_>>();
        let plain = inner();
        assert_eq!(host_change(&plain), None);
        let tagged = HostChange::Changed.attach(inner());
        assert_eq!(host_change(&tagged), Some(HostChange::Changed));
        assert_eq!(lines(&tagged), lines(&plain));
        assert_eq!(exit_code_for(&tagged), 1);
        assert!(
            matches!(find::<Failure>(&tagged), Some(Failure::CheckFailed(m)) if m == "apt-get install failed")
        );
        // A later, outer statement does not overwrite the deeper one; context keeps it.
        let outer = HostChange::Unchanged
            .attach(tagged)
            .context("installing the adopted packages");
        assert_eq!(host_change(&outer), Some(HostChange::Changed));
        assert_eq!(exit_code_for(&outer), 1);
        let untyped = HostChange::Unchanged.attach(anyhow::anyhow!("disk on fire"));
        assert_eq!(exit_code_for(&untyped), 2);
        assert_eq!(untyped.to_string(), "disk on fire");
        let skipped = HostChange::Changed.attach(Failure::skipped("s").into());
        assert_eq!(exit_code_for(&skipped), 3);
    }

    fn assert_texts(cases: Vec<(anyhow::Error, String)>) {
        for (e, want) in cases {
            assert_eq!(e.to_string(), want, "{e:?}");
        }
    }

    /// The texts users read (and the integration tests grep) are the ones the message-built
    /// errors had: each expected string below is the format string the call site used before.
    #[test]
    fn install_and_source_errors_read_as_the_messages_they_replaced() {
        let d = Path::new("/src/rocm systems");
        let (version, package, installed, commit) = ("1+pin1", "hsa-rocr-pinned", "1+pin2", "c2");
        assert_texts(vec![
            (
                anyhow::Error::from(InstallError::Downgrade {
                    package: package.into(),
                    installed: installed.into(),
                    installed_commit: commit.into(),
                    offered: version.into(),
                }),
                format!(
                    "{} {} is installed (commit {}); the given .deb is the older {version}: that is a downgrade to an earlier commit pin. Nothing changed. If going back to that pin is what you want, run again with --allow-downgrade.",
                    package, installed, commit
                ),
            ),
            (
                anyhow::Error::from(BuildError::NotACommit { given: "main".into() }),
                format!(
                    "--commit {:?} is not a full commit id (40 hex digits): the manifest records \
                     exactly what was built, so abbreviations and branch names are refused",
                    "main"
                ),
            ),
            (
                anyhow::Error::from(BuildError::WrongCommit {
                    checkout: d.into(),
                    head: "h".into(),
                    wanted: "w".into(),
                }),
                format!(
                    "source {} is at commit {}, not the requested {}: check out exactly that \
                     commit (git -C {} checkout --detach {}) or pass --commit {} if that is \
                     the code you mean to build",
                    d.display(), "h", "w", d.display(), "w", "h"
                ),
            ),
            (
                anyhow::Error::from(ToolchainError::MissingLauncher {
                    tool: "ccache".into(),
                    package: "ccache".into(),
                }),
                format!(
                    "--compiler-launcher {}: `{}` is not on PATH; install it (apt-get install -y {}) \
                     or build without a launcher",
                    "ccache", "ccache", "ccache"
                ),
            ),
        ]);
    }

    /// As above, for the build and repository errors.
    #[test]
    fn build_and_repo_errors_read_as_the_messages_they_replaced() {
        let d = Path::new("/src/rocm systems");
        assert_texts(vec![
            (
                anyhow::Error::from(BuildError::ForeignOutDir { out: d.into() }),
                format!(
                    "--out {} is not empty and is not a rocm-pin staging directory; choose a new or \
                     empty directory",
                    d.display()
                ),
            ),
            (
                anyhow::Error::from(BuildError::NoRocmToBuildAgainst {
                    rocm_path: d.into(),
                    url: "u".into(),
                    rocm_version: "7.2.4".into(),
                }),
                format!(
                    "ROCm path {} does not exist; nothing was fetched. The runtime at {} builds \
                     against an installed ROCm (its LLVM, comgr and device libraries): build inside the \
                     ROCm {} image or on a ROCm host, or give --rocm-path DIR (see docs/building.md)",
                    d.display(), "u", "7.2.4"
                ),
            ),
            (
                anyhow::Error::from(BuildError::StagingLocked {
                    staging: d.into(),
                    lock: d.join("lock"),
                }),
                format!(
                    "another rocm-pin build is using {} (lock {}); wait for it or choose another --out",
                    d.display(),
                    d.join("lock").display()
                ),
            ),
            (
                anyhow::Error::from(RepoError::RepoConflicts(vec![
                    RepoConflict::ChangedVersion {
                        deb: d.into(),
                        name: "n".into(),
                        version: "v".into(),
                        arch: "a".into(),
                        place: "the repository",
                        published_sha256: "s1".into(),
                        sha256: "s2".into(),
                    },
                    RepoConflict::StrayPoolFile { path: d.into() },
                ])),
                format!(
                    "refused, nothing written:\n  {}",
                    [
                        format!(
                            "{}: {} {} ({}) is already in {} with different contents (sha256 {}, this file {}); \
                             a published version must never change: bump the version",
                            d.display(), "n", "v", "a", "the repository", "s1", "s2"
                        ),
                        format!(
                            "{} already exists with different contents but is not in the index; \
                             remove it or start a new repository",
                            d.display()
                        )
                    ]
                    .join("\n  ")
                ),
            ),
            (
                anyhow::Error::from(BuildError::DirtyCheckout {
                    checkout: d.into(),
                    commit: "c".into(),
                    paths: vec!["p1".into(), "p2".into()],
                    changes: (0..22).map(|i| format!("?? f{i}")).collect(),
                }),
                format!(
                    "source {} has uncommitted changes or untracked files in the build paths ({}); the \
                     recorded commit {} would not be the code built. Commit, stash or remove them \
                     (git stash -u), then build again:\n    {}{}",
                    d.display(),
                    "p1 p2",
                    "c",
                    (0..20).map(|i| format!("?? f{i}")).collect::<Vec<_>>().join("\n    "),
                    "\n    … and 2 more"
                ),
            ),
            (
                anyhow::Error::from(VerifyError::VerifyFailed {
                    failed: 3,
                    names: vec!["a".into(), "b".into()],
                }),
                "verify failed: 3 check(s) failed (a, b)".to_string(),
            ),
        ]);
    }
}
