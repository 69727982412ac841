//! The word for a file's type in messages ("is a FIFO, not a regular file"): one table for
//! every module that refuses a file by its type (an output path, an entry read under a root).

use std::os::unix::fs::MetadataExt;

/// "a FIFO", "a character device", … for a `st_mode`.
pub fn describe_mode(mode: u32) -> &'static str {
    match mode & libc::S_IFMT {
        libc::S_IFREG => "a regular file",
        libc::S_IFDIR => "a directory",
        libc::S_IFIFO => "a FIFO",
        libc::S_IFCHR => "a character device",
        libc::S_IFBLK => "a block device",
        libc::S_IFSOCK => "a socket",
        libc::S_IFLNK => "a symbolic link",
        _ => "a file of an unknown type",
    }
}

/// [`describe_mode`] of what `meta` describes.
pub fn describe(meta: &std::fs::Metadata) -> &'static str {
    describe_mode(meta.mode())
}
