//! What `dpkg-deb` says about a .deb (the judge independent of our reader): its fields and
//! its contents, and the .debs a directory holds.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::must_stdout as stdout;

/// The `.deb` files directly in `dir`, sorted (none when `dir` does not exist).
pub fn debs_in(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.map(|e| e.unwrap().path())
                .filter(|p| p.extension().is_some_and(|e| e == "deb"))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// One control field of `deb` (`dpkg-deb -f`), without its trailing newline.
pub fn field(deb: &Path, name: &str) -> String {
    stdout(Command::new("dpkg-deb").arg("-f").arg(deb).arg(name))
        .trim_end()
        .to_string()
}

/// The .deb of `package` among `debs` (by its `Package` field); panics naming the files when
/// none is.
pub fn deb_of<'a>(debs: &'a [PathBuf], package: &str) -> &'a Path {
    debs.iter()
        .find(|d| field(d, "Package") == package)
        .unwrap_or_else(|| panic!("no .deb of {package} among {debs:?}"))
}

/// `dpkg-deb -c` as (type char, path without ./ prefix, link info).
pub fn contents(deb: &Path) -> Vec<(char, String, String)> {
    stdout(Command::new("dpkg-deb").arg("-c").arg(deb))
        .lines()
        .map(|l| {
            let kind = l.chars().next().unwrap();
            let rest: Vec<&str> = l.splitn(6, char::is_whitespace).collect();
            let tail = l.split_whitespace().skip(5).collect::<Vec<_>>().join(" ");
            let (path, link) = match tail.split_once(" -> ") {
                Some((p, t)) => (p.to_string(), t.to_string()),
                None => match tail.split_once(" link to ") {
                    Some((p, t)) => (p.to_string(), t.trim_start_matches('.').to_string()),
                    None => (tail.clone(), String::new()),
                },
            };
            let _ = rest;
            (kind, path.trim_start_matches('.').to_string(), link)
        })
        .collect()
}
