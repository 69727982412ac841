//! The source tree at the pinned commit: a local checkout is checked (HEAD is exactly the commit,
//! nothing modified or untracked in the build paths), a URL is fetched sparse and blobless at
//! exactly that commit. The commit we record must be the code we built.

use crate::ops::build::refused;
use crate::ops::build::BuildError;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::Context;

use super::steps::Cmd;
use crate::exit::usage;

/// Where the source comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SourceSpec {
    /// A local checkout (absolute path).
    Local(PathBuf),
    /// A git URL (https://, ssh://, git@host:…, file://).
    Url(String),
}

impl SourceSpec {
    /// URLs are told by their scheme (`scheme://`) or scp-like `user@host:path` form; anything
    /// else is a local path, made absolute against the current directory.
    pub(crate) fn parse(text: &str) -> anyhow::Result<SourceSpec> {
        if text.is_empty() {
            return Err(usage("--source is empty"));
        }
        let scp_like = !text.starts_with('/')
            && text
                .split_once(':')
                .is_some_and(|(host, _)| host.contains('@') && !host.contains('/'));
        if text.contains("://") || scp_like {
            return Ok(SourceSpec::Url(text.to_string()));
        }
        let path = PathBuf::from(text);
        let abs = if path.is_absolute() {
            path
        } else {
            std::env::current_dir()
                .context("reading the current directory")?
                .join(path)
        };
        Ok(SourceSpec::Local(abs))
    }

    pub(crate) fn display(&self) -> String {
        match self {
            SourceSpec::Local(p) => p.display().to_string(),
            SourceSpec::Url(u) => u.clone(),
        }
    }
}

/// A full commit id: 40 (SHA-1) or 64 (SHA-256) hex digits, lower-cased.
pub(crate) fn normalize_commit(commit: &str) -> anyhow::Result<String> {
    let c = commit.trim().to_ascii_lowercase();
    if (c.len() == 40 || c.len() == 64) && c.chars().all(|ch| ch.is_ascii_hexdigit()) {
        Ok(c)
    } else {
        Err(BuildError::NotACommit {
            given: commit.to_string(),
        }
        .into())
    }
}

/// Run git and return trimmed stdout; the error names the command and git's stderr.
pub(crate) fn git_output(dir: &Path, args: &[&str]) -> anyhow::Result<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .with_context(|| format!("running git {} in {}", args.join(" "), dir.display()))?;
    if !out.status.success() {
        return Err(refused(format!(
            "git {} in {} failed ({}): {}",
            args.join(" "),
            dir.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim_end().to_string())
}

/// The read-only commands the local checks run, for `--dry-run`.
pub(crate) fn local_check_commands(dir: &Path, paths: &[&str]) -> Vec<Cmd> {
    let mut status = vec![
        "-C".to_string(),
        dir.display().to_string(),
        "status".into(),
        "--porcelain=v1".into(),
        "--untracked-files=all".into(),
        "--".into(),
    ];
    status.extend(paths.iter().map(|p| p.to_string()));
    vec![
        Cmd::new(
            "git",
            [
                "-C",
                &dir.display().to_string(),
                "rev-parse",
                "--verify",
                "HEAD^{commit}",
            ],
        ),
        Cmd::new("git", status),
    ]
}

/// Refuse a local checkout that is not exactly `commit` with a clean build tree.
pub(crate) fn check_local(dir: &Path, commit: &str, paths: &[&str]) -> anyhow::Result<()> {
    if !dir.is_dir() {
        return Err(usage(format!(
            "source {} is not a directory (give a local rocm-systems checkout or a git URL)",
            dir.display()
        )));
    }
    let head = git_output(dir, &["rev-parse", "--verify", "HEAD^{commit}"]).map_err(|e| {
        usage(format!(
            "source {} is not a usable git checkout: {e:#}",
            dir.display()
        ))
    })?;
    if head != commit {
        return Err(BuildError::WrongCommit {
            checkout: dir.to_path_buf(),
            head,
            wanted: commit.to_string(),
        }
        .into());
    }
    let mut args = vec!["status", "--porcelain=v1", "--untracked-files=all", "--"];
    args.extend(paths.iter().copied());
    let status = git_output(dir, &args)?;
    if !status.trim().is_empty() {
        return Err(BuildError::DirtyCheckout {
            checkout: dir.to_path_buf(),
            commit: commit.to_string(),
            paths: paths.iter().map(|p| p.to_string()).collect(),
            changes: status.lines().map(str::to_string).collect(),
        }
        .into());
    }
    Ok(())
}

/// The commands that fetch `commit` from `url` into `dir`: sparse (only `paths`), blobless,
/// depth 1, then a detached checkout.
pub(crate) fn fetch_commands(url: &str, commit: &str, dir: &Path, paths: &[&str]) -> Vec<Cmd> {
    let d = dir.display().to_string();
    let mut sparse = vec![
        "-C".to_string(),
        d.clone(),
        "sparse-checkout".into(),
        "set".into(),
    ];
    sparse.extend(paths.iter().map(|p| p.to_string()));
    vec![
        Cmd::new("git", ["init", "--quiet", &d]),
        Cmd::new("git", ["-C", &d, "remote", "add", "origin", url]),
        Cmd::new("git", sparse),
        Cmd::new(
            "git",
            [
                "-C",
                &d,
                "fetch",
                "--filter=blob:none",
                "--depth=1",
                "origin",
                commit,
            ],
        ),
        Cmd::new(
            "git",
            [
                "-C",
                &d,
                "-c",
                "advice.detachedHead=false",
                "checkout",
                "--detach",
                commit,
            ],
        ),
    ]
}

/// After a fetch: HEAD must be the commit (a server that answered with something else fails here).
pub(crate) fn verify_fetched(dir: &Path, commit: &str) -> anyhow::Result<()> {
    let head = git_output(dir, &["rev-parse", "--verify", "HEAD^{commit}"])?;
    if head != commit {
        return Err(refused(format!(
            "the fetched checkout in {} is at {head}, not {commit}",
            dir.display()
        )));
    }
    Ok(())
}

/// Committer timestamp of `commit` (seconds since the epoch).
pub(crate) fn commit_time(dir: &Path, commit: &str) -> anyhow::Result<i64> {
    let text = git_output(dir, &["show", "-s", "--format=%ct", commit])?;
    text.trim()
        .parse()
        .with_context(|| format!("git show --format=%ct {commit} printed {text:?}"))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn tells_urls_from_paths() {
        for url in [
            "https://github.com/ROCm/rocm-systems.git",
            "file:///srv/git/rocm-systems",
            "git@github.com:ROCm/rocm-systems.git",
            "ssh://git@host/x",
        ] {
            assert!(
                matches!(SourceSpec::parse(url).unwrap(), SourceSpec::Url(_)),
                "{url}"
            );
        }
        for path in ["/src/rocm-systems", "rocm-systems", "./a:b"] {
            assert!(
                matches!(SourceSpec::parse(path).unwrap(), SourceSpec::Local(_)),
                "{path}"
            );
        }
    }

    #[test]
    fn only_full_commits() {
        assert!(normalize_commit(crate::rocm::PIN_COMMIT).is_ok());
        assert_eq!(
            normalize_commit("B539BF7EEBFD99AD0A69668CAA1F4037034D501F").unwrap(),
            crate::rocm::PIN_COMMIT
        );
        for bad in [
            "b539bf7",
            "main",
            "",
            "g539bf7eebfd99ad0a69668caa1f4037034d501f",
        ] {
            let err = normalize_commit(bad).unwrap_err();
            assert!(
                matches!(err.downcast_ref::<BuildError>(), Some(BuildError::NotACommit { given }) if given == bad),
                "{bad}: {err:?}"
            );
        }
    }

    /// A git repository in `dir` with one commit of `file`; its commit id.
    pub(crate) fn repo_with_one_commit(dir: &Path, file: &str, text: &str) -> String {
        let git = |args: &[&str]| {
            let out = Command::new("git")
                .arg("-C")
                .arg(dir)
                .args(["-c", "user.name=t", "-c", "user.email=t@t"])
                .args(args)
                .output()
                .unwrap();
            assert!(out.status.success(), "git {args:?}: {out:?}");
        };
        std::fs::create_dir_all(dir).unwrap();
        git(&["init", "--quiet"]);
        std::fs::write(dir.join(file), text).unwrap();
        git(&["add", file]);
        git(&["commit", "--quiet", "-m", "one"]);
        git_output(dir, &["rev-parse", "HEAD"]).unwrap()
    }

    #[test]
    fn a_checkout_at_another_commit_is_refused_naming_both() {
        let d = tempfile::tempdir().unwrap();
        let head = repo_with_one_commit(d.path(), "a.txt", "a\n");
        let err = check_local(d.path(), crate::rocm::PIN_COMMIT, &["a.txt"]).unwrap_err();
        assert!(
            matches!(err.downcast_ref::<BuildError>(),
                Some(BuildError::WrongCommit { checkout, head: h, wanted })
                    if checkout == d.path() && *h == head && wanted == crate::rocm::PIN_COMMIT),
            "{err:?}"
        );
        assert_eq!(crate::error::exit_code_for(&err), 2);
        check_local(d.path(), &head, &["a.txt"]).unwrap();
    }

    #[test]
    fn a_change_in_the_build_paths_is_refused_listing_it() {
        let d = tempfile::tempdir().unwrap();
        let head = repo_with_one_commit(d.path(), "a.txt", "a\n");
        std::fs::write(d.path().join("a.txt"), "changed\n").unwrap();
        std::fs::write(d.path().join("new.txt"), "new\n").unwrap();
        std::fs::write(d.path().join("elsewhere.txt"), "not checked\n").unwrap();
        let err = check_local(d.path(), &head, &["a.txt", "new.txt"]).unwrap_err();
        assert!(
            matches!(err.downcast_ref::<BuildError>(),
                Some(BuildError::DirtyCheckout { commit, changes, .. })
                    if *commit == head && changes == &[" M a.txt".to_string(), "?? new.txt".to_string()]),
            "{err:?}"
        );
        assert!(err.to_string().contains("git stash -u"), "{err}");
    }
}
