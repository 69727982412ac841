//! The build cache: a staging directory is reused when it was built from the same commit, source,
//! options and toolchain (the key), its manifest is present (it is written last, so present
//! means the build succeeded), and the install still validates and hashes exactly as the
//! manifest says. Anything else is a miss, with the reason.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context;
use sha2::{Digest, Sha256};

use super::manifest::{BuildManifest, MANIFEST_FILE};

/// Bumped when the meaning of a staging changes (layout, recipe): old stagings then miss.
pub(crate) const CACHE_FORMAT: u32 = 2;
/// Relative to the work directory.
pub(crate) const CACHE_FILE: &str = "cache-key.json";

/// Everything a staging depends on. Jobs are not in it: they change speed, not output.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct CacheKey {
    pub format: u32,
    pub tool_version: String,
    pub commit: String,
    pub source: String,
    pub rocm_path: String,
    pub rocm_version: Option<String>,
    pub generator: String,
    pub tools: BTreeMap<String, String>,
    pub rocm_patch_version: Option<String>,
    pub rocr_cmake_args: Vec<String>,
    pub clr_cmake_args: Vec<String>,
    /// `--llvm-dir`.
    pub llvm_dir: Option<String>,
    /// The patch series (names and sha256), in order.
    pub patches: Vec<crate::rocm::PatchRecord>,
    /// False with `--no-backport-check` (recorded in the manifest, so part of the output).
    pub backport_check: bool,
}

impl CacheKey {
    pub(crate) fn digest(&self) -> String {
        // Serialising a struct of strings and maps cannot fail; fall back to Debug regardless.
        let bytes = serde_json::to_vec(self).unwrap_or_else(|_| format!("{self:?}").into_bytes());
        hex::encode(Sha256::digest(bytes))
    }
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct CacheRecord {
    digest: String,
    key: CacheKey,
}

/// The outcome of a lookup.
#[derive(Debug)]
pub(crate) enum Lookup {
    /// The key matches and a manifest is present; the caller still revalidates the install.
    Candidate(Box<BuildManifest>),
    Miss(String),
}

fn cache_path(work: &Path) -> PathBuf {
    work.join(CACHE_FILE)
}

/// Compare `key` with what the last successful build in `staging` recorded.
pub(crate) fn lookup(staging: &Path, work: &Path, key: &CacheKey) -> Lookup {
    let manifest_path = staging.join(MANIFEST_FILE);
    let Ok(manifest_text) = std::fs::read_to_string(&manifest_path) else {
        return Lookup::Miss(format!("no finished build in {}", staging.display()));
    };
    let Ok(record_text) = std::fs::read_to_string(cache_path(work)) else {
        return Lookup::Miss(format!("{} has no cache key", staging.display()));
    };
    let Ok(record) = serde_json::from_str::<CacheRecord>(&record_text) else {
        return Lookup::Miss("the cache key file is unreadable".into());
    };
    if record.digest != key.digest() || &record.key != key {
        return Lookup::Miss(describe_change(&record.key, key));
    }
    match serde_json::from_str::<BuildManifest>(&manifest_text) {
        Ok(m) if m.commit == key.commit => Lookup::Candidate(Box::new(m)),
        Ok(_) => Lookup::Miss("the manifest names another commit".into()),
        Err(e) => Lookup::Miss(format!("{} is unreadable: {e}", manifest_path.display())),
    }
}

/// Which parts of the key changed, for the "rebuilding because …" line.
fn describe_change(old: &CacheKey, new: &CacheKey) -> String {
    let mut changed = vec![];
    if old.format != new.format || old.tool_version != new.tool_version {
        changed.push("rocm-pin version".to_string());
    }
    if old.commit != new.commit {
        changed.push(format!("commit {} → {}", old.commit, new.commit));
    }
    if old.source != new.source {
        changed.push("source".into());
    }
    if old.rocm_path != new.rocm_path || old.rocm_version != new.rocm_version {
        changed.push("ROCm path or version".into());
    }
    if old.generator != new.generator || old.tools != new.tools || old.llvm_dir != new.llvm_dir {
        changed.push("toolchain".into());
    }
    if old.patches != new.patches {
        changed.push("patch series".into());
    }
    if old.backport_check != new.backport_check {
        changed.push("backport check".into());
    }
    if old.rocm_patch_version != new.rocm_patch_version
        || old.rocr_cmake_args != new.rocr_cmake_args
        || old.clr_cmake_args != new.clr_cmake_args
    {
        changed.push("build options".into());
    }
    if changed.is_empty() {
        "the cache key changed".into()
    } else {
        format!("changed since the last build: {}", changed.join(", "))
    }
}

/// Record `key` for the build just finished (before the manifest is written).
pub(crate) fn store(work: &Path, key: &CacheKey) -> anyhow::Result<()> {
    std::fs::create_dir_all(work).with_context(|| format!("creating {}", work.display()))?;
    let record = CacheRecord {
        digest: key.digest(),
        key: key.clone(),
    };
    let path = cache_path(work);
    std::fs::write(&path, serde_json::to_vec_pretty(&record)?)
        .with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> CacheKey {
        CacheKey {
            format: CACHE_FORMAT,
            tool_version: "0.1.0".into(),
            commit: crate::rocm::PIN_COMMIT.into(),
            source: "/src".into(),
            rocm_path: "/opt/rocm-7.2.4".into(),
            rocm_version: Some("7.2.4".into()),
            generator: "Ninja".into(),
            tools: BTreeMap::from([("cmake".into(), "cmake version 3.25.1".into())]),
            rocm_patch_version: None,
            rocr_cmake_args: vec![],
            clr_cmake_args: vec![],
            llvm_dir: None,
            patches: vec![],
            backport_check: true,
        }
    }

    #[test]
    fn digest_changes_with_toolchain_and_options() {
        let a = key();
        let mut b = key();
        b.tools
            .insert("cmake".into(), "cmake version 3.28.0".into());
        assert_ne!(a.digest(), b.digest());
        assert!(describe_change(&a, &b).contains("toolchain"));
        let mut c = key();
        c.clr_cmake_args.push("-DX=1".into());
        assert_ne!(a.digest(), c.digest());
        assert_eq!(a.digest(), key().digest());
        let mut d = key();
        d.patches.push(crate::rocm::PatchRecord {
            name: "0001-x.patch".into(),
            sha256: "00".repeat(32),
        });
        assert_ne!(a.digest(), d.digest());
        assert!(describe_change(&a, &d).contains("patch series"));
    }

    #[test]
    fn miss_without_manifest() {
        let d = tempfile::tempdir().unwrap();
        store(&d.path().join(".work"), &key()).unwrap();
        assert!(matches!(
            lookup(d.path(), &d.path().join(".work"), &key()),
            Lookup::Miss(_)
        ));
    }
}
