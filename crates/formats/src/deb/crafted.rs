//! Crafted tars for tests, this crate's and its users': entries written in order exactly as
//! given (hostile names and kinds included), so a test states a layer or a data member as a
//! table of entries. Not part of the format API.

use super::tar::{TarWriter, WriteKind};

/// One entry of a crafted tar: name, kind, contents (read for files only).
pub type Entry<'a> = (&'a str, WriteKind<'a>, &'a [u8]);

/// A tar of `entries`, in order, each with mode 0644 and one fixed mtime.
pub fn tar_of(entries: &[Entry<'_>]) -> Vec<u8> {
    let mut w = TarWriter::new(Vec::new());
    for (name, kind, data) in entries {
        w.append_header(name.as_bytes(), *kind, 0o644, 1_700_000_000)
            .expect("writing to memory");
        if let WriteKind::File(n) = kind {
            w.write_contents(&mut &data[..], *n, &mut |_| {})
                .expect("writing to memory");
        }
    }
    w.finish().expect("writing to memory")
}

/// The kind of a regular file holding `data`.
pub fn file(data: &[u8]) -> WriteKind<'static> {
    WriteKind::File(data.len() as u64)
}
