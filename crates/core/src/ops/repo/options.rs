//! What a repository is asked to be (where, suite, component, flat or not, signing key) and
//! the paths of its layout that follow from it.

use std::path::PathBuf;

use super::error::RepoError;

pub const DEFAULT_SUITE: &str = "stable";
pub const DEFAULT_COMPONENT: &str = "main";

#[derive(Debug, Clone)]
pub struct RepoOptions {
    pub out: PathBuf,
    pub suite: String,
    pub component: String,
    /// Armored OpenPGP secret key (unprotected) to sign Release with.
    pub sign_key: Option<PathBuf>,
    pub flat: bool,
    pub origin: String,
    pub label: String,
}

impl RepoOptions {
    pub fn new(out: impl Into<PathBuf>) -> Self {
        RepoOptions {
            out: out.into(),
            suite: DEFAULT_SUITE.to_string(),
            component: DEFAULT_COMPONENT.to_string(),
            sign_key: None,
            flat: false,
            origin: "rocm-pin".to_string(),
            label: "rocm-pin".to_string(),
        }
    }
}

/// Suite and component names become path components and Release values.
pub(super) fn check_name(what: &'static str, name: &str) -> anyhow::Result<()> {
    let ok = !name.is_empty()
        && name != "."
        && name != ".."
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._+-".contains(&b));
    if !ok {
        return Err(RepoError::BadName {
            what,
            name: name.to_string(),
        }
        .into());
    }
    Ok(())
}

/// Where the index files (Packages, Release) of this repository live.
pub(super) fn index_root(opts: &RepoOptions) -> PathBuf {
    if opts.flat {
        opts.out.clone()
    } else {
        opts.out.join("dists").join(&opts.suite)
    }
}

/// Path of a Packages file relative to `index_root`.
pub(super) fn packages_rel(opts: &RepoOptions, arch: &str) -> String {
    if opts.flat {
        "Packages".to_string()
    } else {
        format!("{}/binary-{arch}/Packages", opts.component)
    }
}

/// Where the index files are, relative to the repository directory (`""` when flat).
pub(super) fn index_rel(opts: &RepoOptions) -> String {
    if opts.flat {
        String::new()
    } else {
        format!("dists/{}", opts.suite)
    }
}
