//! `/etc/ld.so.cache` read directly, in the format glibc's ldconfig writes (glibc's
//! sysdeps/generic/dl-cache.h; `glibc-ld.so.cache1.1`, alone since glibc 2.32 or after the
//! libc5-era `ld.so-1.7.0` table before). Running `ldconfig -p` for this was 1.7 ms of verify's
//! 13 (scripts/bench-verify); reading the file is what ld.so itself does.
//!
//! Only what is certain is answered: a cache this reader does not fully understand (another
//! magic, another byte order, an entry flag word it cannot name, an entry tied to a hardware
//! capability, anything out of bounds) is `None`, and the caller asks `ldconfig -p` instead.

const OLD_MAGIC: &[u8] = b"ld.so-1.7.0";
const NEW_MAGIC: &[u8] = b"glibc-ld.so.cache1.1";
/// `cache_file_new`: magic and version (20), nlibs, len_strings, flags + 3 padding,
/// extension_offset, 3 unused words.
const NEW_HEADER: usize = 48;
/// `file_entry_new`: flags, key, value, osversion (4 bytes each), hwcap (8).
const NEW_ENTRY: usize = 24;
/// `file_entry` of the old table: flags, key, value.
const OLD_ENTRY: usize = 12;
/// `cache_file_new.flags`: the byte order the cache was written in.
const ENDIAN_LITTLE: u8 = 2;
const ENDIAN_BIG: u8 = 3;

/// One loader cache entry, as `ldconfig -p` prints it: `libfoo.so.1 (libc6,x86-64) => /usr/lib/libfoo.so.1`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheEntry {
    pub soname: String,
    pub flags: String,
    pub path: String,
}

/// The entries of a cache file, in file order (the order `ldconfig -p` prints and ld.so
/// searches), or None when the file is not one this reader fully understands.
pub fn parse(bytes: &[u8]) -> Option<Vec<CacheEntry>> {
    let new = &bytes[new_table_offset(bytes)?..];
    if new.get(..NEW_MAGIC.len())? != NEW_MAGIC {
        return None;
    }
    let native = if cfg!(target_endian = "little") {
        ENDIAN_LITTLE
    } else {
        ENDIAN_BIG
    };
    // The low two bits; 0 is "not recorded" (caches from before glibc 2.32), read as native.
    let endian = *new.get(28)? & 3;
    if endian != 0 && endian != native {
        return None;
    }
    let nlibs = u32_at(new, 20)? as usize;
    let table_end = NEW_HEADER.checked_add(nlibs.checked_mul(NEW_ENTRY)?)?;
    if table_end > new.len() {
        return None;
    }
    (0..nlibs)
        .map(|i| entry(new, NEW_HEADER + i * NEW_ENTRY))
        .collect()
}

/// Where the `glibc-ld.so.cache` table starts: at 0, or after the old table, aligned to 8
/// (`ALIGN_CACHE`: the alignment of `cache_file_new`, which holds 64-bit words).
fn new_table_offset(bytes: &[u8]) -> Option<usize> {
    if bytes.starts_with(NEW_MAGIC) {
        return Some(0);
    }
    if !bytes.starts_with(OLD_MAGIC) {
        return None;
    }
    let old_libs = u32_at(bytes, OLD_MAGIC.len())? as usize;
    let end = (OLD_MAGIC.len() + 4).checked_add(old_libs.checked_mul(OLD_ENTRY)?)?;
    let aligned = end.checked_add(7)? & !7;
    (aligned <= bytes.len()).then_some(aligned)
}

fn entry(table: &[u8], at: usize) -> Option<CacheEntry> {
    let flags = u32_at(table, at)?;
    let hwcap = u64_at(table, at + 16)?;
    if hwcap != 0 {
        // glibc-hwcaps subdirectories and legacy hwcap entries: ld.so picks among them by the
        // CPU it runs on; leave that judgement to ldconfig's own listing.
        return None;
    }
    Some(CacheEntry {
        soname: string_at(table, u32_at(table, at + 4)?)?,
        flags: flags_text(flags)?,
        path: string_at(table, u32_at(table, at + 8)?)?,
    })
}

/// The flags word as `ldconfig -p` prints it (glibc elf/cache.c, print_entry), for the types
/// and ABIs of the architectures Debian builds glibc for; None for any other word.
fn flags_text(flags: u32) -> Option<String> {
    let kind = match flags & 0xff {
        1 => "ELF",
        2 => "libc5",
        3 => "libc6",
        _ => return None,
    };
    let abi = match flags & 0xff00 {
        0 => "",
        0x0300 => ",x86-64",
        0x0500 => ",64bit",
        0x0800 => ",x32",
        0x0900 => ",hard-float",
        0x0a00 => ",AArch64",
        0x1000 => ",double-float",
        _ => return None,
    };
    if flags & !0xffff != 0 {
        return None;
    }
    Some(format!("{kind}{abi}"))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// A NUL-terminated string at `offset` from the start of the new table.
fn string_at(table: &[u8], offset: u32) -> Option<String> {
    let rest = table.get(offset as usize..)?;
    let len = rest.iter().position(|&c| c == 0)?;
    String::from_utf8(rest[..len].to_vec()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::loader::parse_ldconfig_p;
    use std::path::Path;
    use std::process::Command;

    fn ldconfig() -> &'static str {
        ["/sbin/ldconfig", "/usr/sbin/ldconfig"]
            .into_iter()
            .find(|p| Path::new(p).exists())
            .expect("ldconfig (libc-bin) on this Debian machine")
    }

    /// What `ldconfig -p` lists for a cache file.
    fn listed(cache: &Path) -> Vec<CacheEntry> {
        let out = Command::new(ldconfig())
            .arg("-C")
            .arg(cache)
            .arg("-p")
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        parse_ldconfig_p(&String::from_utf8_lossy(&out.stdout))
    }

    /// A cache written by this machine's ldconfig over a directory of real libraries (copies
    /// of libc's and libz's), one of them under two sonames' worth of links.
    fn made_cache(dir: &Path) -> std::path::PathBuf {
        let libs = dir.join("libs");
        std::fs::create_dir_all(&libs).unwrap();
        let mut copied = 0;
        for lib in ["libz.so.1", "libc.so.6", "libm.so.6", "libgcc_s.so.1"] {
            let from = crate::host::loader::default_dirs()
                .into_iter()
                .map(|d| Path::new(&d).join(lib))
                .find(|p| p.exists());
            if let Some(from) = from {
                std::fs::copy(std::fs::canonicalize(from).unwrap(), libs.join(lib)).unwrap();
                copied += 1;
            }
        }
        assert!(
            copied >= 2,
            "too few system libraries to build a cache from"
        );
        let conf = dir.join("ld.so.conf");
        std::fs::write(&conf, format!("{}\n", libs.display())).unwrap();
        let cache = dir.join("ld.so.cache");
        let out = Command::new(ldconfig())
            .arg("-X")
            .arg("-f")
            .arg(&conf)
            .arg("-C")
            .arg(&cache)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        cache
    }

    #[test]
    fn reads_what_ldconfig_lists_for_a_cache_it_wrote() {
        let dir = tempfile::tempdir().unwrap();
        let cache = made_cache(dir.path());
        let ours = parse(&std::fs::read(&cache).unwrap()).expect("a cache this reader knows");
        assert!(ours.iter().any(|e| e.soname == "libc.so.6"), "{ours:?}");
        assert_eq!(ours, listed(&cache));
    }

    #[test]
    fn reads_what_ldconfig_lists_for_this_machines_cache() {
        let cache = Path::new("/etc/ld.so.cache");
        let Ok(bytes) = std::fs::read(cache) else {
            // A machine without a cache has nothing to compare; the made cache above is.
            return;
        };
        match parse(&bytes) {
            Some(ours) => assert_eq!(ours, listed(cache)),
            // Entries tied to hardware capabilities are left to ldconfig: say so, not pass.
            None => assert!(
                listed(cache).iter().any(|e| e.flags.contains("hwcap")),
                "this machine's cache is not understood, and has no hwcap entries"
            ),
        }
    }

    #[test]
    fn what_it_does_not_fully_understand_is_none() {
        let dir = tempfile::tempdir().unwrap();
        let good = std::fs::read(made_cache(dir.path())).unwrap();
        assert!(
            good.starts_with(NEW_MAGIC),
            "ldconfig writes the new format alone"
        );
        let full = parse(&good).unwrap();
        // Truncated anywhere: None, or (when only the trailing extension is cut) the whole
        // list, never a short or wrong one.
        for len in [0, 10, 20, 47, 48, 60, good.len() / 2, good.len() - 1] {
            let got = parse(&good[..len]);
            assert!(got.is_none() || got.as_ref() == Some(&full), "len {len}");
        }
        let mut wrong_magic = good.clone();
        wrong_magic[0] = b'X';
        assert!(parse(&wrong_magic).is_none());
        let mut hwcap = good.clone();
        hwcap[NEW_HEADER + 16] = 1;
        assert!(parse(&hwcap).is_none());
        let mut unknown_abi = good.clone();
        unknown_abi[NEW_HEADER + 1] = 0x7f;
        assert!(parse(&unknown_abi).is_none());
        let mut bad_offset = good;
        bad_offset[NEW_HEADER + 4..NEW_HEADER + 8].copy_from_slice(&u32::MAX.to_ne_bytes());
        assert!(parse(&bad_offset).is_none());
    }
}
