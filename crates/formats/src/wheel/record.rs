//! `RECORD` (PyPA "Recording installed projects"): one CSV row per file, `path,hash,size`,
//! the hash `sha256=` then the URL-safe base64 of the digest without `=` padding; the row of
//! RECORD itself has no hash and no size. Rows follow Python's `csv` module (default dialect):
//! a field holding a comma, a quote or a line break is quoted, quotes doubled.

use anyhow::{bail, Context};
use sha2::{Digest, Sha256};

/// The most rows a RECORD read from a wheel or a venv may have.
pub const MAX_RECORD_ROWS: usize = 200_000;

/// One row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordEntry {
    /// Relative to the directory the wheel unpacks into (`site-packages`), `/`-separated;
    /// installed files outside it (scripts) start with `../`.
    pub path: String,
    /// `sha256=<urlsafe base64, no padding>`, or empty (RECORD itself, `.pyc` files).
    pub hash: String,
    pub size: Option<u64>,
}

impl RecordEntry {
    /// The row for `data` stored at `path`.
    pub fn of(path: &str, data: &[u8]) -> RecordEntry {
        RecordEntry {
            path: path.to_string(),
            hash: hash_of(data),
            size: Some(data.len() as u64),
        }
    }

    /// Whether `data` is what this row records (false when it records no hash).
    pub fn matches(&self, data: &[u8]) -> bool {
        !self.hash.is_empty()
            && self.hash == hash_of(data)
            && self.size.is_none_or(|s| s == data.len() as u64)
    }
}

/// A whole RECORD.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Record {
    pub entries: Vec<RecordEntry>,
}

/// `sha256=<digest>` of `data`, as RECORD writes it.
pub fn hash_of(data: &[u8]) -> String {
    format!("sha256={}", urlsafe_b64_nopad(&Sha256::digest(data)))
}

/// URL-safe base64 (RFC 4648 §5) without padding.
pub fn urlsafe_b64_nopad(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..=chunk.len() {
            out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    out
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

impl Record {
    /// The RECORD text: the rows in order, then the row of RECORD itself at `record_path`.
    pub fn render(&self, record_path: &str) -> String {
        let mut out = String::new();
        for e in &self.entries {
            let size = e.size.map(|s| s.to_string()).unwrap_or_default();
            out.push_str(&format!("{},{},{}\n", csv_field(&e.path), e.hash, size));
        }
        out.push_str(&format!("{},,\n", csv_field(record_path)));
        out
    }

    /// Parse RECORD `text` (at most [`MAX_RECORD_ROWS`] rows).
    pub fn parse(text: &str) -> anyhow::Result<Record> {
        let mut entries = Vec::new();
        for (n, row) in csv_rows(text)?.into_iter().enumerate() {
            if entries.len() == MAX_RECORD_ROWS {
                bail!("RECORD has more than {MAX_RECORD_ROWS} rows; refused");
            }
            let line = n + 1;
            if row.len() != 3 {
                bail!(
                    "RECORD row {line}: {} fields, expected path,hash,size",
                    row.len()
                );
            }
            let [path, hash, size] = [&row[0], &row[1], &row[2]];
            if path.is_empty() {
                bail!("RECORD row {line}: empty path");
            }
            if !hash.is_empty() && !hash.starts_with("sha256=") {
                bail!("RECORD row {line}: hash {hash:?} is not sha256 (the only one this reader trusts)");
            }
            let size = if size.is_empty() {
                None
            } else {
                Some(
                    size.parse()
                        .with_context(|| format!("RECORD row {line}: size {size:?}"))?,
                )
            };
            entries.push(RecordEntry {
                path: path.clone(),
                hash: hash.clone(),
                size,
            });
        }
        Ok(Record { entries })
    }

    pub fn get(&self, path: &str) -> Option<&RecordEntry> {
        self.entries.iter().find(|e| e.path == path)
    }
}

/// Rows of Python-`csv`-dialect `text` (quoted fields, doubled quotes); blank lines skipped.
fn csv_rows(text: &str) -> anyhow::Result<Vec<Vec<String>>> {
    let mut rows = Vec::new();
    let mut row = Vec::new();
    let mut field = String::new();
    let mut chars = text.chars().peekable();
    let mut quoted = false;
    let mut any = false;
    while let Some(c) = chars.next() {
        if quoted {
            match c {
                '"' if chars.peek() == Some(&'"') => {
                    chars.next();
                    field.push('"');
                }
                '"' => quoted = false,
                _ => field.push(c),
            }
            continue;
        }
        match c {
            '"' if field.is_empty() => {
                quoted = true;
                any = true;
            }
            ',' => {
                row.push(std::mem::take(&mut field));
                any = true;
            }
            '\r' => {}
            '\n' => {
                if any || !field.is_empty() {
                    row.push(std::mem::take(&mut field));
                    rows.push(std::mem::take(&mut row));
                }
                any = false;
            }
            _ => {
                field.push(c);
                any = true;
            }
        }
    }
    if quoted {
        bail!("RECORD ends inside a quoted field");
    }
    if any || !field.is_empty() {
        row.push(field);
        rows.push(row);
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn hash_of_empty_is_pythons() {
        // python3 -c 'import hashlib,base64;print(base64.urlsafe_b64encode(hashlib.sha256(b"").digest()).rstrip(b"="))'
        assert_eq!(
            hash_of(b""),
            "sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU"
        );
        assert_eq!(urlsafe_b64_nopad(b"\xfb\xff"), "-_8");
        assert_eq!(urlsafe_b64_nopad(b"abc"), "YWJj");
    }

    #[test]
    fn parse_quoted_and_unquoted_rows() {
        let text = "a/b.py,sha256=x,3\n\"odd,name\"\"q\",,\nRECORD,,\n";
        let r = Record::parse(text).unwrap();
        assert_eq!(r.entries.len(), 3);
        assert_eq!(r.entries[1].path, "odd,name\"q");
        assert_eq!(r.entries[0].size, Some(3));
        assert!(Record::parse("a,md5=x,1\n").is_err());
        assert!(Record::parse("a,b\n").is_err());
        assert!(Record::parse("\"a,,\n").is_err());
    }

    proptest! {
        #[test]
        fn render_then_parse_round_trips(paths in proptest::collection::vec("[a-z,\" ._/-]{1,20}", 0..10)) {
            let entries: Vec<RecordEntry> = paths.iter().map(|p| RecordEntry::of(p, p.as_bytes())).collect();
            let text = Record { entries: entries.clone() }.render("x.dist-info/RECORD");
            let back = Record::parse(&text).unwrap();
            prop_assert_eq!(&back.entries[..entries.len()], &entries[..]);
            prop_assert_eq!(back.entries.len(), entries.len() + 1);
        }

        #[test]
        fn base64_matches_the_standard_alphabet_swapped(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let ours = urlsafe_b64_nopad(&bytes);
            prop_assert_eq!(ours.len(), (bytes.len() * 4).div_ceil(3));
            prop_assert!(ours.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'));
        }
    }
}
