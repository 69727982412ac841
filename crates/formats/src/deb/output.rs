//! Where `deb build` may write: a regular file (replaced) or a new path, as dpkg-deb writes
//! packages. Anything else — a device, a FIFO, a socket, a symlink to one, a dangling symlink —
//! is refused before a byte is written: the finished package is renamed into place, which would
//! silently replace a device node such as `/dev/null` with a regular file.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::deb::DebError;

/// The path the finished package is renamed onto for the output `out`: `out` itself when it is
/// a regular file or does not exist, the file a symlink points to when `out` is a symlink to a
/// regular file (dpkg-deb writes through the symlink and leaves it in place). A directory is
/// left to the caller, which names it.
pub(crate) fn package_output_path(out: &Path) -> anyhow::Result<PathBuf> {
    let meta = match fs::symlink_metadata(out) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(out.to_path_buf()),
        Err(e) => return Err(e).with_context(|| format!("{}: cannot inspect", out.display())),
    };
    if meta.is_file() || meta.is_dir() {
        return Ok(out.to_path_buf());
    }
    if !meta.file_type().is_symlink() {
        return Err(not_regular(out, file_kind(&meta)));
    }
    match fs::metadata(out) {
        Ok(target) if target.is_file() => fs::canonicalize(out)
            .with_context(|| format!("{}: cannot resolve the symlink", out.display())),
        Ok(target) => Err(not_regular(
            out,
            format!("a symlink to {}", file_kind(&target)),
        )),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            Err(not_regular(out, "a dangling symlink".to_string()))
        }
        Err(e) => Err(e).with_context(|| format!("{}: cannot follow the symlink", out.display())),
    }
}

fn not_regular(path: &Path, kind: String) -> anyhow::Error {
    DebError::DebOutputNotRegular {
        path: path.to_path_buf(),
        kind,
    }
    .into()
}

/// "a character device", "a FIFO", … for the error message.
fn file_kind(meta: &fs::Metadata) -> String {
    crate::filetype::describe(meta).to_string()
}
