//! A patch series applied on top of the pinned commit: `--patch FILE` (repeatable) and
//! `--patches DIR` (every `*.patch` / `*.diff` in name order, before the `--patch` files). The
//! series is applied with `git apply` to the tool's own checkout (a URL fetch, or a shared clone
//! of a local checkout, which itself stays untouched and must still be clean), before anything is
//! configured. Each patch's name and sha256 goes into the manifest, the packages and the marker,
//! so a backport carried as a patch on top of a stock tag is visible wherever the commit is.
//! Generic git mechanics: nothing here knows what the patches change.

use crate::ops::build::refused;
use crate::ops::build::BuildError;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::Context;
use sha2::{Digest, Sha256};

use super::steps::Cmd;
use crate::exit::usage;
use crate::ops::build::BadInput;
use crate::rocm::PatchRecord;

/// One patch of the series, read once (the bytes hashed are the bytes applied).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Patch {
    pub path: PathBuf,
    pub record: PatchRecord,
    /// The tree paths it changes (from its `--- a/…` / `+++ b/…` headers).
    pub touches: Vec<String>,
}

/// The tree paths a unified or git diff changes.
pub(crate) fn touched_paths(text: &str) -> Vec<String> {
    let mut out: Vec<String> = vec![];
    for line in text.lines() {
        let Some(rest) = line
            .strip_prefix("+++ ")
            .or_else(|| line.strip_prefix("--- "))
        else {
            continue;
        };
        let path = rest.split('\t').next().unwrap_or("").trim();
        if path == "/dev/null" {
            continue;
        }
        let path = path
            .strip_prefix("a/")
            .or_else(|| path.strip_prefix("b/"))
            .unwrap_or(path);
        if !out.iter().any(|p| p == path) {
            out.push(path.to_string());
        }
    }
    out
}

/// The series: `dir`'s `*.patch`/`*.diff` files in name order, then `files` in the order given.
/// Refuses unreadable or empty files and two patches with the same name (the records could
/// not tell them apart).
pub(crate) fn load_series(dir: Option<&Path>, files: &[PathBuf]) -> anyhow::Result<Vec<Patch>> {
    let mut paths = vec![];
    if let Some(dir) = dir {
        let entries = std::fs::read_dir(dir).map_err(|e| BuildError::BadInputFile {
            what: "--patches",
            path: dir.to_path_buf(),
            why: BadInput::Unlistable(e.to_string()),
        })?;
        let mut found: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "patch" || x == "diff"))
            .collect();
        found.sort();
        if found.is_empty() {
            return Err(BuildError::BadInputFile {
                what: "--patches",
                path: dir.to_path_buf(),
                why: BadInput::NoPatchFiles,
            }
            .into());
        }
        paths.extend(found);
    }
    paths.extend(files.iter().cloned());
    let mut series: Vec<Patch> = vec![];
    for path in paths {
        let bad = |why| BuildError::BadInputFile {
            what: "patch",
            path: path.clone(),
            why,
        };
        let bytes = std::fs::read(&path).map_err(|e| bad(BadInput::Unreadable(e.to_string())))?;
        if bytes.iter().all(|b| b.is_ascii_whitespace()) {
            return Err(bad(BadInput::Empty).into());
        }
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| path.display().to_string());
        if let Some(other) = series.iter().find(|p| p.record.name == name) {
            return Err(usage(format!(
                "two patches are named {name} ({} and {}); rename one so the records tell them apart",
                other.path.display(),
                path.display()
            )));
        }
        let path = if path.is_absolute() {
            path
        } else {
            std::env::current_dir()
                .context("reading the current directory")?
                .join(path)
        };
        series.push(Patch {
            path,
            record: PatchRecord {
                name,
                sha256: hex::encode(Sha256::digest(&bytes)),
            },
            touches: touched_paths(&String::from_utf8_lossy(&bytes)),
        });
    }
    Ok(series)
}

/// The commands that make the tool's own checkout of a local `source` at `commit` (sparse: only
/// `paths`), sharing its objects instead of copying them; the user's checkout is only read.
pub(crate) fn local_checkout_commands(
    source: &Path,
    commit: &str,
    dir: &Path,
    paths: &[&str],
) -> Vec<Cmd> {
    let d = dir.display().to_string();
    let mut sparse = vec![
        "-C".to_string(),
        d.clone(),
        "sparse-checkout".into(),
        "set".into(),
    ];
    sparse.extend(paths.iter().map(|p| p.to_string()));
    vec![
        Cmd::new(
            "git",
            [
                "clone",
                "--quiet",
                "--shared",
                "--no-checkout",
                &source.display().to_string(),
                &d,
            ],
        ),
        Cmd::new("git", sparse),
        Cmd::new(
            "git",
            [
                "-C",
                &d,
                "-c",
                "advice.detachedHead=false",
                "checkout",
                "--quiet",
                "--detach",
                commit,
            ],
        ),
    ]
}

/// The `git apply` line for one patch (shown by `--dry-run`).
pub(crate) fn apply_command(checkout: &Path, patch: &Patch) -> Cmd {
    Cmd::new(
        "git",
        [
            "-C",
            &checkout.display().to_string(),
            "apply",
            "--whitespace=nowarn",
            &patch.path.display().to_string(),
        ],
    )
}

/// The files `git apply` complained about, from its stderr (`error: patch failed: FILE:LINE`,
/// `error: FILE: does not exist in index`, `error: FILE: No such file or directory`).
fn failing_files(stderr: &str) -> Vec<String> {
    let mut files = vec![];
    for line in stderr.lines() {
        let Some(rest) = line.strip_prefix("error: ") else {
            continue;
        };
        let file = if let Some(f) = rest.strip_prefix("patch failed: ") {
            f.rsplit_once(':').map(|(f, _)| f).unwrap_or(f)
        } else if let Some((f, _)) = rest.split_once(": ") {
            f
        } else {
            continue;
        };
        if !files.iter().any(|x| x == file) {
            files.push(file.to_string());
        }
    }
    files
}

/// Apply the series in order to `checkout`, at `commit`. A patch that does not apply stops the
/// build before anything is configured, naming the patch, the file(s) and git's message.
pub(crate) fn apply_series(checkout: &Path, commit: &str, series: &[Patch]) -> anyhow::Result<()> {
    for (n, patch) in series.iter().enumerate() {
        let cmd = apply_command(checkout, patch);
        let out = Command::new(&cmd.program)
            .args(&cmd.args)
            .stdin(Stdio::null())
            .output()
            .with_context(|| format!("running {cmd}"))?;
        if !out.status.success() {
            let stderr = String::from_utf8_lossy(&out.stderr);
            return Err(BuildError::PatchDoesNotApply {
                index: n + 1,
                total: series.len(),
                name: patch.record.name.clone(),
                path: patch.path.clone(),
                commit: commit.to_string(),
                files: failing_files(&stderr),
                command: cmd.to_string(),
                git_stderr: stderr.into_owned(),
            }
            .into());
        }
    }
    Ok(())
}

/// Run `cmds` (the checkout commands) quietly; the error names the command and git's stderr.
pub(crate) fn run_quiet(cmds: &[Cmd]) -> anyhow::Result<()> {
    for cmd in cmds {
        let out = Command::new(&cmd.program)
            .args(&cmd.args)
            .stdin(Stdio::null())
            .output()
            .with_context(|| format!("running {cmd}"))?;
        if !out.status.success() {
            return Err(refused(format!(
                "{cmd} failed ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn git_apply_errors_name_the_files() {
        let stderr = "error: patch failed: projects/clr/rocclr/cmake/ROCclrLC.cmake:18\n\
                      error: projects/clr/rocclr/cmake/ROCclrLC.cmake: patch does not apply\n\
                      error: projects/hip/x.h: No such file or directory\n";
        assert_eq!(
            failing_files(stderr),
            vec![
                "projects/clr/rocclr/cmake/ROCclrLC.cmake".to_string(),
                "projects/hip/x.h".to_string()
            ]
        );
    }

    #[test]
    fn diff_headers_name_the_touched_paths() {
        let diff = "diff --git a/projects/clr/x.cmake b/projects/clr/x.cmake\n--- a/projects/clr/x.cmake\n\
                    +++ b/projects/clr/x.cmake\n@@ -1 +1 @@\n--- not a header\n\
                    --- /dev/null\n+++ b/projects/hip/new.h\t2025-01-01\n";
        assert_eq!(
            touched_paths(diff),
            ["projects/clr/x.cmake", "not a header", "projects/hip/new.h"]
        );
    }

    #[test]
    fn series_is_directory_order_then_files_and_names_are_unique() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("series");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("0002-b.patch"), "b\n").unwrap();
        std::fs::write(dir.join("0001-a.patch"), "a\n").unwrap();
        std::fs::write(dir.join("README"), "not a patch\n").unwrap();
        let extra = d.path().join("9-extra.diff");
        std::fs::write(&extra, "c\n").unwrap();
        let s = load_series(Some(&dir), std::slice::from_ref(&extra)).unwrap();
        let names: Vec<&str> = s.iter().map(|p| p.record.name.as_str()).collect();
        assert_eq!(names, ["0001-a.patch", "0002-b.patch", "9-extra.diff"]);
        assert_eq!(
            s[0].record.sha256,
            "87428fc522803d31065e7bce3cf03fe475096631e5e07bbd7a0fde60c4cf25c7"
        );
        let dup = load_series(Some(&dir), &[dir.join("0001-a.patch")])
            .unwrap_err()
            .to_string();
        assert!(dup.contains("two patches are named 0001-a.patch"), "{dup}");
        std::fs::write(d.path().join("empty.patch"), "\n").unwrap();
        assert!(load_series(None, &[d.path().join("empty.patch")]).is_err());
    }

    fn bad_input(err: &anyhow::Error) -> (&'static str, &Path, &BadInput) {
        match err.downcast_ref::<BuildError>() {
            Some(BuildError::BadInputFile { what, path, why }) => (what, path, why),
            other => panic!("not BadInputFile: {other:?} ({err})"),
        }
    }

    #[test]
    fn unusable_patch_files_are_refused_naming_the_file_and_why() {
        let d = tempfile::tempdir().unwrap();
        let empty = d.path().join("empty.patch");
        std::fs::write(&empty, " \n\t\n").unwrap();
        let err = load_series(None, std::slice::from_ref(&empty)).unwrap_err();
        assert_eq!(
            bad_input(&err),
            ("patch", empty.as_path(), &BadInput::Empty)
        );
        assert_eq!(
            err.to_string(),
            format!("patch {} is empty", empty.display())
        );
        assert_eq!(crate::error::exit_code_for(&err), 2);

        let gone = d.path().join("gone.patch");
        let err = load_series(None, std::slice::from_ref(&gone)).unwrap_err();
        let (what, path, why) = bad_input(&err);
        assert!(
            what == "patch" && path == gone && matches!(why, BadInput::Unreadable(_)),
            "{err}"
        );

        let no_patches = d.path().join("series");
        std::fs::create_dir_all(&no_patches).unwrap();
        std::fs::write(no_patches.join("README"), "x\n").unwrap();
        let err = load_series(Some(&no_patches), &[]).unwrap_err();
        assert_eq!(
            bad_input(&err),
            ("--patches", no_patches.as_path(), &BadInput::NoPatchFiles)
        );
        let err = load_series(Some(&d.path().join("no-dir")), &[]).unwrap_err();
        assert!(
            matches!(bad_input(&err).2, BadInput::Unlistable(_)),
            "{err}"
        );
    }

    #[test]
    fn a_patch_that_does_not_apply_names_itself_and_the_file() {
        let d = tempfile::tempdir().unwrap();
        let tree = d.path().join("tree");
        let commit = super::super::source::tests::repo_with_one_commit(&tree, "a.txt", "one\n");
        let patch = d.path().join("0001-change.patch");
        std::fs::write(
            &patch,
            "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-something else\n+two\n",
        )
        .unwrap();
        let series = load_series(None, std::slice::from_ref(&patch)).unwrap();
        let err = apply_series(&tree, &commit, &series).unwrap_err();
        match err.downcast_ref::<BuildError>() {
            Some(BuildError::PatchDoesNotApply {
                index,
                total,
                name,
                commit: c,
                files,
                ..
            }) => {
                assert_eq!((*index, *total), (1, 1));
                assert_eq!(name, "0001-change.patch");
                assert_eq!(c, &commit);
                assert_eq!(files, &["a.txt".to_string()]);
            }
            other => panic!("not PatchDoesNotApply: {other:?} ({err})"),
        }
        assert!(err.to_string().contains("does not apply to"), "{err}");
        assert_eq!(
            std::fs::read_to_string(tree.join("a.txt")).unwrap(),
            "one\n"
        );
    }
}
