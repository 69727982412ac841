//! A file's digest as lowercase hex, streamed: md5 as dpkg's md5sums hold it, sha256 as our
//! manifests, markers and apt's Release files do. One copy for every caller (there were four).

use std::path::Path;

use anyhow::Context;
use md5::Digest;

fn file_hex<D: Digest + std::io::Write>(path: &Path) -> anyhow::Result<String> {
    let read = || -> std::io::Result<String> {
        let mut file = std::fs::File::open(path)?;
        let mut hasher = D::new();
        std::io::copy(&mut file, &mut hasher)?;
        Ok(hex::encode(hasher.finalize()))
    };
    read().with_context(|| format!("cannot read {}", path.display()))
}

/// The md5 of everything `reader` gives (a file opened inside a root by `Root::open_regular`).
pub(crate) fn md5_reader(mut reader: impl std::io::Read) -> anyhow::Result<String> {
    let mut hasher = md5::Md5::new();
    std::io::copy(&mut reader, &mut hasher).context("cannot read the file to hash")?;
    Ok(hex::encode(hasher.finalize()))
}

pub(crate) fn md5_file(path: &Path) -> anyhow::Result<String> {
    file_hex::<md5::Md5>(path)
}

pub(crate) fn sha256_file(path: &Path) -> anyhow::Result<String> {
    file_hex::<sha2::Sha256>(path)
}

/// md5, sha256 (when asked for) and the size of everything `reader` gives, in one pass: verify
/// checks dpkg's md5sums and our marker's sha256 from one read of each file, the repository
/// writes both into its index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Digests {
    pub md5: String,
    pub sha256: Option<String>,
    pub size: u64,
}

/// [`Digests`] of `reader`, streamed through one 256 KiB buffer (verify is benchmarked against
/// `dpkg --verify`: one read per file, large reads).
pub(crate) fn digests_reader(
    mut reader: impl std::io::Read,
    want_sha256: bool,
) -> std::io::Result<Digests> {
    let mut md5 = md5::Md5::new();
    let mut sha = want_sha256.then(sha2::Sha256::new);
    let mut buf = vec![0u8; 1 << 18];
    let mut size = 0u64;
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        size += n as u64;
        md5.update(&buf[..n]);
        if let Some(s) = sha.as_mut() {
            s.update(&buf[..n]);
        }
    }
    Ok(Digests {
        md5: hex::encode(md5.finalize()),
        sha256: sha.map(|s| hex::encode(s.finalize())),
        size,
    })
}

/// The md5 of `bytes` as lowercase hex.
pub(crate) fn md5_hex(bytes: &[u8]) -> String {
    hex::encode(md5::Md5::digest(bytes))
}

/// The sha256 of `bytes` as lowercase hex.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(sha2::Sha256::digest(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Against coreutils' md5sum and sha256sum on the same bytes.
    #[test]
    fn agrees_with_coreutils_and_names_a_missing_file() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("f");
        std::fs::write(&f, vec![7u8; 200_000]).unwrap();
        for (tool, ours) in [("md5sum", md5_file(&f)), ("sha256sum", sha256_file(&f))] {
            let out = std::process::Command::new(tool).arg(&f).output().unwrap();
            let theirs = String::from_utf8(out.stdout).unwrap();
            assert_eq!(ours.unwrap(), theirs.split_whitespace().next().unwrap());
        }
        let bytes = std::fs::read(&f).unwrap();
        let d = digests_reader(bytes.as_slice(), true).unwrap();
        assert_eq!(
            (Some(d.md5.clone()), d.sha256.clone(), d.size),
            (md5_file(&f).ok(), sha256_file(&f).ok(), 200_000)
        );
        assert_eq!(
            (md5_hex(&bytes), Some(sha256_hex(&bytes))),
            (d.md5, d.sha256)
        );
        assert_eq!(
            digests_reader(bytes.as_slice(), false).unwrap().sha256,
            None
        );
        let e = md5_file(&dir.path().join("missing")).unwrap_err();
        assert!(format!("{e:#}").contains("cannot read"), "{e:#}");
    }
}
