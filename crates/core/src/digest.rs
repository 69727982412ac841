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
pub fn md5_reader(mut reader: impl std::io::Read) -> anyhow::Result<String> {
    let mut hasher = md5::Md5::new();
    std::io::copy(&mut reader, &mut hasher).context("cannot read the file to hash")?;
    Ok(hex::encode(hasher.finalize()))
}

pub fn md5_file(path: &Path) -> anyhow::Result<String> {
    file_hex::<md5::Md5>(path)
}

pub fn sha256_file(path: &Path) -> anyhow::Result<String> {
    file_hex::<sha2::Sha256>(path)
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
        let e = md5_file(&dir.path().join("missing")).unwrap_err();
        assert!(format!("{e:#}").contains("cannot read"), "{e:#}");
    }
}
