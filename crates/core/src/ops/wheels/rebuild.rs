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
        if let Some(why) = crate::wheel::zip_read::unclean_entry_name(&entry.path) {
            bail!("{} lists {:?} ({why}); refused", dist.dist_info, entry.path);
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

    use crate::host::root::Root;
    use crate::rocm::wheels::{discover_venv, CORE_LIB_DIR};
    use crate::wheel::{Record, RecordEntry, ZipLimits, ZipReader};
    use std::path::Path;

    const SITE: &str = "lib/python3.11/site-packages";
    const HIP: &str = "_rocm_sdk_core/lib/libamdhip64.so.7";

    /// A venv with a stand-in stock rocm-sdk-core 10.0.0 installed the way pip leaves it.
    fn stock_venv() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        let site = d.path().join(SITE);
        let di = "rocm_sdk_core-10.0.0.dist-info";
        let files: Vec<(String, Vec<u8>)> = vec![
            (HIP.into(), b"stock hip".to_vec()),
            ("_rocm_sdk_core/lib/libhsa-runtime64.so.1".into(), b"stock hsa".to_vec()),
            ("rocm_sdk_core/__init__.py".into(), b"".to_vec()),
            (format!("{di}/METADATA"), b"Metadata-Version: 2.1\nName: rocm-sdk-core\nVersion: 10.0.0\n\n".to_vec()),
            (format!("{di}/WHEEL"), b"Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: py3-none-manylinux_2_28_x86_64\n".to_vec()),
            (format!("{di}/INSTALLER"), b"pip\n".to_vec()),
        ];
        let mut record = Record::default();
        for (path, data) in &files {
            let p = site.join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, data).unwrap();
            record.entries.push(RecordEntry::of(path, data));
        }
        record.entries.push(RecordEntry {
            path: "rocm_sdk_core/__pycache__/__init__.cpython-311.pyc".into(),
            hash: String::new(),
            size: None,
        });
        std::fs::write(
            site.join(di).join("RECORD"),
            record.render(&format!("{di}/RECORD")),
        )
        .unwrap();
        d
    }

    fn unzip(bytes: &[u8]) -> BTreeMap<String, Vec<u8>> {
        let z = ZipReader::new(bytes, ZipLimits::WHEEL).unwrap();
        z.entries()
            .iter()
            .map(|e| (e.name.clone(), z.read(e).unwrap()))
            .collect()
    }

    #[test]
    fn the_stock_wheel_rebuilt_carries_the_installed_files_and_a_record_that_matches() {
        let venv = stock_venv();
        let root = Root::new(venv.path());
        let core = discover_venv(&root, Path::new("/")).unwrap().core.unwrap();
        assert_eq!(
            (core.name.as_str(), core.version.as_str()),
            ("rocm-sdk-core", "10.0.0")
        );
        assert_eq!(core.runtime_libraries(CORE_LIB_DIR).len(), 2);
        let w = rebuild_wheel(&root, &core, None, 0).unwrap();
        assert_eq!(
            w.file_name,
            "rocm_sdk_core-10.0.0-py3-none-manylinux_2_28_x86_64.whl"
        );
        let files = unzip(&w.bytes);
        assert_eq!(files[HIP], b"stock hip");
        assert!(!files.contains_key("rocm_sdk_core-10.0.0.dist-info/INSTALLER"));
        let record = Record::parse(
            std::str::from_utf8(&files["rocm_sdk_core-10.0.0.dist-info/RECORD"]).unwrap(),
        )
        .unwrap();
        for (name, data) in &files {
            let row = record
                .get(name)
                .unwrap_or_else(|| panic!("RECORD lacks {name}"));
            assert!(name.ends_with("/RECORD") || row.matches(data), "{name}");
        }
        assert_eq!(record.entries.len(), files.len());
    }

    #[test]
    fn the_replacement_carries_ours_our_version_and_the_commit_field() {
        let venv = stock_venv();
        let root = Root::new(venv.path());
        let core = discover_venv(&root, Path::new("/")).unwrap().core.unwrap();
        let r = Replacement {
            version: "10.0.0+pin.b539bf7eebfd".into(),
            files: [(HIP.to_string(), b"ours".to_vec())].into(),
            fields: vec![("X-Rocm-Pin-Commit", "b539bf7eebfd99ad".into())],
        };
        let w = rebuild_wheel(&root, &core, Some(&r), 0).unwrap();
        let files = unzip(&w.bytes);
        let di = "rocm_sdk_core-10.0.0+pin.b539bf7eebfd.dist-info";
        assert_eq!(files[HIP], b"ours");
        let meta = std::str::from_utf8(&files[&format!("{di}/METADATA")]).unwrap();
        assert!(
            meta.contains("Version: 10.0.0+pin.b539bf7eebfd\n")
                && meta.contains("X-Rocm-Pin-Commit: b539bf7eebfd99ad\n"),
            "{meta}"
        );
        let record =
            Record::parse(std::str::from_utf8(&files[&format!("{di}/RECORD")]).unwrap()).unwrap();
        assert!(record.get(HIP).unwrap().matches(b"ours"));
        assert_eq!(
            wheel_identity(&w.bytes).unwrap().2.as_deref(),
            Some("b539bf7eebfd99ad")
        );
        // Same inputs, same bytes.
        assert_eq!(
            rebuild_wheel(&root, &core, Some(&r), 0).unwrap().bytes,
            w.bytes
        );
    }

    #[test]
    fn an_installed_file_changed_after_install_is_refused() {
        let venv = stock_venv();
        std::fs::write(venv.path().join(SITE).join(HIP), b"copied over by hand").unwrap();
        let root = Root::new(venv.path());
        let core = discover_venv(&root, Path::new("/")).unwrap().core.unwrap();
        let err = format!("{:#}", rebuild_wheel(&root, &core, None, 0).err().unwrap());
        assert!(
            err.contains("differs from what rocm-sdk-core 10.0.0 installed")
                && err.contains("pip install --force-reinstall"),
            "{err}"
        );
    }

    #[test]
    fn a_record_path_leaving_site_packages_is_refused() {
        let venv = stock_venv();
        let record = venv
            .path()
            .join(SITE)
            .join("rocm_sdk_core-10.0.0.dist-info/RECORD");
        let text = std::fs::read_to_string(&record).unwrap();
        std::fs::create_dir_all(venv.path().join("etc")).unwrap();
        std::fs::write(venv.path().join("etc/secret"), b"s").unwrap();
        let root = Root::new(venv.path());
        for (hostile, said) in [
            ("../../../../etc/secret", "outside site-packages"),
            (
                "_rocm_sdk_core/../../../../../etc/secret",
                "`..` path component",
            ),
        ] {
            let row = format!("{hostile},{},1\n", crate::wheel::record::hash_of(b"s"));
            std::fs::write(&record, format!("{text}{row}")).unwrap();
            let core = discover_venv(&root, Path::new("/")).unwrap().core.unwrap();
            let err = format!("{:#}", rebuild_wheel(&root, &core, None, 0).err().unwrap());
            assert!(err.contains(said), "{hostile}: {err}");
        }
    }

    #[test]
    fn entry_points_name_the_generated_scripts() {
        let t = "[console_scripts]\namdclang = rocm_sdk_core._cli:amdclang\n\n[other]\nx = y\n[gui_scripts]\ng=a:b\n";
        assert_eq!(entry_point_scripts(t), ["amdclang", "g"]);
    }
}
