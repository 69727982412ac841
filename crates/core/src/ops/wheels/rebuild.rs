//! A wheel made again from an installed distribution: every file its RECORD lists inside
//! site-packages, each checked against its RECORD hash as it is read (through the in-root
//! model), the `.dist-info` metadata kept but for what installers add, and a fresh RECORD.
//! With a replacement, the listed runtime libraries get our bytes and the version our label;
//! without one, the result is the stock wheel again (same files, same hashes), which is what
//! rollback reinstalls offline.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;

use anyhow::{bail, Context};

use crate::host::root::{FileKind, Root};
use crate::rocm::wheels::InstalledDist;
use crate::wheel::metadata::rewrite_metadata;
use crate::wheel::{escape_name, wheel_file_name, CoreMetadata, Record, RecordEntry, ZipWriter};

/// Files installers write into `.dist-info` that are not part of a wheel.
const INSTALLER_FILES: &[&str] = &["RECORD", "INSTALLER", "REQUESTED", "direct_url.json"];

/// What changes between the stock wheel and ours.
pub struct Replacement<'a> {
    pub version: String,
    /// RECORD path (`_rocm_sdk_core/lib/libamdhip64.so.7`) → our bytes.
    pub files: BTreeMap<String, Vec<u8>>,
    /// METADATA fields to add (`X-Rocm-Pin-Commit`, …).
    pub fields: Vec<(&'a str, String)>,
}

/// A wheel in memory: its file name and bytes.
pub struct BuiltWheel {
    pub file_name: String,
    pub version: String,
    pub bytes: Vec<u8>,
}

/// The console and GUI script names `entry_points.txt` declares (installers generate them).
fn entry_point_scripts(text: &str) -> Vec<String> {
    let mut in_scripts = false;
    let mut names = Vec::new();
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            in_scripts = line == "[console_scripts]" || line == "[gui_scripts]";
        } else if in_scripts {
            if let Some((name, _)) = line.split_once('=') {
                names.push(name.trim().to_string());
            }
        }
    }
    names
}

/// Make the wheel of `dist` (installed under `root`), with `replacement` applied if given.
pub fn rebuild_wheel(
    root: &Root,
    dist: &InstalledDist,
    replacement: Option<&Replacement>,
    epoch: i64,
) -> anyhow::Result<BuiltWheel> {
    let version = replacement.map_or(dist.version.clone(), |r| r.version.clone());
    let new_dist_info = format!("{}-{version}.dist-info", escape_name(&dist.name));
    let old_prefix = format!("{}/", dist.dist_info);
    let read_dist_info = |file: &str| -> anyhow::Result<Option<String>> {
        Ok(root.read_optional(
            dist.path_of(&format!("{}/{file}", dist.dist_info)),
            FileKind::DistInfo,
        )?)
    };
    let scripts = read_dist_info("entry_points.txt")?
        .map(|t| entry_point_scripts(&t))
        .unwrap_or_default();
    let mut zip = ZipWriter::new(epoch);
    let mut record = Record::default();
    let mut replaced = 0;
    for entry in &dist.record.entries {
        if let Some(inner) = entry.path.strip_prefix(&old_prefix) {
            if INSTALLER_FILES.contains(&inner) {
                continue;
            }
            let data = if inner == "METADATA" {
                let fields = replacement.map(|r| r.fields.clone()).unwrap_or_default();
                rewrite_metadata(&dist.metadata_text, &version, &fields)?.into_bytes()
            } else {
                read_checked(root, dist, entry)?
            };
            let path = format!("{new_dist_info}/{inner}");
            record.entries.push(RecordEntry::of(&path, &data));
            zip.add(&path, data, 0o644)?;
            continue;
        }
        if let Some(rest) = entry.path.strip_prefix("../") {
            let script = rest.rsplit('/').next().unwrap_or(rest);
            if rest.contains("/bin/") && scripts.iter().any(|s| s == script) {
                continue; // the installer writes it again from entry_points.txt
            }
            bail!("{} lists {} outside site-packages, which this rebuild does not carry; reinstall {} from its wheel instead", dist.dist_info, entry.path, dist.name);
        }
        if entry.hash.is_empty() {
            continue; // byte-compiled caches and files added after install carry no hash
        }
        let ours = replacement.and_then(|r| r.files.get(&entry.path));
        let data = match ours {
            Some(bytes) => {
                read_checked(root, dist, entry)?; // the stock one is still what RECORD says
                replaced += 1;
                bytes.clone()
            }
            None => read_checked(root, dist, entry)?,
        };
        let mode = mode_of(root, &dist.path_of(&entry.path))?;
        record.entries.push(RecordEntry::of(&entry.path, &data));
        zip.add(&entry.path, data, mode)?;
    }
    if let Some(r) = replacement {
        if replaced != r.files.len() {
            bail!(
                "{} lists {replaced} of the {} runtime libraries to replace",
                dist.dist_info,
                r.files.len()
            );
        }
    }
    let record_path = format!("{new_dist_info}/RECORD");
    if !zip.names().any(|n| n == format!("{new_dist_info}/WHEEL")) {
        bail!("{}: its RECORD does not list WHEEL", dist.dist_info);
    }
    zip.add(
        &record_path,
        record.render(&record_path).into_bytes(),
        0o644,
    )?;
    let mut bytes = Vec::new();
    zip.finish(&mut bytes)?;
    Ok(BuiltWheel {
        file_name: wheel_file_name(&dist.name, &version, &dist.wheel.tags)?,
        version,
        bytes,
    })
}

/// The installed file of `entry`, refused unless it is what the RECORD says.
fn read_checked(root: &Root, dist: &InstalledDist, entry: &RecordEntry) -> anyhow::Result<Vec<u8>> {
    let path = dist.path_of(&entry.path);
    let data = root
        .read_file(&path, FileKind::PackagedFile)
        .with_context(|| format!("reading {} of {} {}", entry.path, dist.name, dist.version))?;
    if !entry.hash.is_empty() && !entry.matches(&data) {
        bail!(
            "{} differs from what {} {} installed (its RECORD hash); the venv was changed after install: reinstall it (`pip install --force-reinstall --no-deps {}=={}`), then run this again",
            root.host_path(&path).display(), dist.name, dist.version, dist.name, dist.version
        );
    }
    Ok(data)
}

/// 0o755 for a file with any execute bit, else 0o644 (wheels carry no other modes).
fn mode_of(root: &Root, path: &str) -> anyhow::Result<u32> {
    let m = root.metadata(path)?;
    Ok(if m.permissions().mode() & 0o111 != 0 {
        0o755
    } else {
        0o644
    })
}

/// The name and version of the wheel in `bytes` (its `.dist-info/METADATA`), and its commit
/// field if it has one.
pub fn wheel_identity(bytes: &[u8]) -> anyhow::Result<(String, String, Option<String>)> {
    let zip = crate::wheel::ZipReader::new(bytes, crate::wheel::ZipLimits::WHEEL)?;
    let metadata: Vec<&str> = zip
        .entries()
        .iter()
        .map(|e| e.name.as_str())
        .filter(|n| n.ends_with(".dist-info/METADATA") && n.matches('/').count() == 1)
        .collect();
    let [name] = metadata.as_slice() else {
        bail!(
            "not a wheel: {} .dist-info/METADATA files at its top",
            metadata.len()
        );
    };
    let text = String::from_utf8(zip.read_named(name)?).context("METADATA is not UTF-8")?;
    let m = CoreMetadata::parse(&text)?;
    Ok((
        m.name()?.to_string(),
        m.version()?.to_string(),
        m.get(crate::rocm::wheels::WHEEL_COMMIT_FIELD)
            .map(str::to_string),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_points_name_the_generated_scripts() {
        let t = "[console_scripts]\namdclang = rocm_sdk_core._cli:amdclang\n\n[other]\nx = y\n[gui_scripts]\ng=a:b\n";
        assert_eq!(entry_point_scripts(t), ["amdclang", "g"]);
    }
}
