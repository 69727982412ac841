//! The dpkg database's text formats (md5sums files, the status file's `Conffiles:` field) and
//! the listing bound, without reading anything: below both dpkg readers (`dpkgdb`, the full
//! reader; `status`, verify's fast one) and `excludes`, so none of them imports another's
//! parsers.

use std::collections::BTreeMap;

use crate::host::refused;

/// The most entries read from one configuration directory (`ld.so.conf.d`, …) of a root.
pub const MAX_CONFIG_DIR_ENTRIES: usize = 10_000;

/// A conffile as recorded in the status file's `Conffiles:` field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conffile {
    pub path: String,
    /// md5 of the file as the package shipped it (`newconffile` while unpacked).
    pub md5: String,
    /// `obsolete` / `remove-on-upgrade` flags dpkg appends.
    pub flags: Vec<String>,
}

/// Parse md5sums text (`<md5>  <path without leading slash>`) into absolute path → md5.
pub fn parse_md5sums(text: &str) -> anyhow::Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let (sum, path) = line
            .split_once(' ')
            .ok_or_else(|| refused(format!("line {}: not `<md5>  <path>`", n + 1)))?;
        let path = path.trim_start_matches([' ', '*']);
        if sum.len() != 32 || !sum.bytes().all(|b| b.is_ascii_hexdigit()) || path.is_empty() {
            return Err(refused(format!(
                "line {}: not `<md5>  <path>`: {line:?}",
                n + 1
            )));
        }
        let abs = format!("/{}", path.trim_start_matches("./").trim_start_matches('/'));
        // A path from inside a root is never used before it is known to stay in it.
        if let Some(why) = crate::host::root::unclean_in_root_path(&abs) {
            return Err(refused(format!("line {}: {why}: {path:?}; refused", n + 1)));
        }
        out.insert(abs, sum.to_ascii_lowercase());
    }
    Ok(out)
}

/// Parse a status `Conffiles:` value (` /etc/x 0123… [obsolete]` per line).
pub fn parse_conffiles_field(value: &str) -> Vec<Conffile> {
    value
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let path = w.next()?.to_string();
            let md5 = w.next()?.to_string();
            Some(Conffile {
                path,
                md5,
                flags: w.map(str::to_string).collect(),
            })
        })
        .collect()
}
