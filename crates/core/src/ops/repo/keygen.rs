//! `repo keygen`: a new signing key pair written to files.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;

use super::error::RepoError;
use super::signing;
use crate::exit::usage;

/// Files written by [`keygen`].
#[derive(Debug, Clone, serde::Serialize)]
pub struct KeyFiles {
    /// Armored secret key (mode 0600, no passphrase): give it to `--sign-key`.
    pub secret: PathBuf,
    /// Armored public key.
    pub public_asc: PathBuf,
    /// Binary public key, for `signed-by=` in an apt sources entry.
    pub public_gpg: PathBuf,
    pub fingerprint: String,
}

/// Make a signing key. `out` names the secret key (`KEY.asc`); the public key goes beside it as
/// `KEY.pub.asc` and `KEY.pub.gpg`. Refuses to overwrite any of them.
pub fn keygen(out: &Path, user_id: &str) -> anyhow::Result<KeyFiles> {
    let file_name = out
        .file_name()
        .and_then(|n| n.to_str())
        .with_context(|| format!("{} is not a file name", out.display()))?;
    let stem = file_name.strip_suffix(".asc").unwrap_or(file_name);
    let dir = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let files = KeyFiles {
        secret: out.to_path_buf(),
        public_asc: out.with_file_name(format!("{stem}.pub.asc")),
        public_gpg: out.with_file_name(format!("{stem}.pub.gpg")),
        fingerprint: String::new(),
    };
    for path in [&files.secret, &files.public_asc, &files.public_gpg] {
        if path.exists() {
            return Err(RepoError::KeyExists { path: path.clone() }.into());
        }
    }
    if !dir.is_dir() {
        // `--out keys/rocm-pin.asc` in a fresh checkout: make keys/ as `mkdir -p` would,
        // private (0700) as it holds the secret key.
        use std::os::unix::fs::DirBuilderExt;
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| {
                usage(format!(
                    "cannot create the directory {}: {e}",
                    dir.display()
                ))
            })?;
    }
    let key = signing::generate(user_id)?;
    let secret = key
        .to_armored_string(pgp::composed::ArmorOptions::default())
        .context("armoring the secret key")?;
    {
        use std::os::unix::fs::OpenOptionsExt;
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&files.secret)
            .with_context(|| format!("creating {}", files.secret.display()))?;
        f.write_all(secret.as_bytes())
            .with_context(|| format!("writing {}", files.secret.display()))?;
    }
    let (asc, gpg) = signing::public_key_bytes(&key)?;
    fs::write(&files.public_asc, asc)
        .with_context(|| format!("writing {}", files.public_asc.display()))?;
    fs::write(&files.public_gpg, gpg)
        .with_context(|| format!("writing {}", files.public_gpg.display()))?;
    Ok(KeyFiles {
        fingerprint: signing::fingerprint(&key),
        ..files
    })
}
