//! Our replacement .debs as given on the command line: their control facts and the
//! provenance marker one of them ships, read with our own streaming .deb reader. Shared by
//! install and the local repository (which would otherwise reach into each other).

use std::path::{Path, PathBuf};

use anyhow::Context;

use super::status;
use crate::deb::{EntryKind, ReadLimits};
use crate::error::usage;
use crate::rocm::{self, Marker};

/// Facts of one replacement .deb given on the command line.
#[derive(Debug, Clone, serde::Serialize)]
pub struct DebFacts {
    pub path: PathBuf,
    pub package: String,
    pub version: String,
    pub architecture: String,
    pub commit: String,
    pub protected: bool,
    /// The stock package it replaces and the exact version its Provides carries.
    pub stock_name: String,
    pub stock_version: String,
}

/// The provenance marker inside one of our .debs, if it ships one (`(member, bytes)`), read
/// with our own streaming reader: no `dpkg-deb -c` listing to split into columns (a name with
/// a space in it broke that), no tar process.
fn marker_member(deb: &Path) -> anyhow::Result<Option<(String, Vec<u8>)>> {
    let suffix = format!("/{}", rocm::MARKER_RELPATH);
    let mut found = None;
    crate::deb::reader::for_each_data_entry(deb, &ReadLimits::default(), &mut |entry, body| {
        if found.is_none() && entry.kind == EntryKind::File && entry.path.ends_with(&suffix) {
            let mut bytes = Vec::new();
            body.read_to_end(&mut bytes)?;
            found = Some((entry.path.clone(), bytes));
        }
        Ok(())
    })?;
    Ok(found)
}

/// Read our .debs: control fields, and the marker from the one that ships it.
pub fn read_debs(debs: &[PathBuf]) -> anyhow::Result<(Vec<DebFacts>, Marker)> {
    let mut facts = Vec::new();
    let mut marker: Option<Marker> = None;
    for deb in debs {
        let abs = std::fs::canonicalize(deb)
            .with_context(|| format!("{}: no such .deb", deb.display()))?;
        let (_, control_files) = crate::deb::reader::read_control(&abs, &ReadLimits::default())
            .with_context(|| format!("{} is not a readable .deb", deb.display()))?;
        let ctl = control_files
            .iter()
            .find(|(name, _)| name == "control")
            .map(|(_, bytes)| String::from_utf8_lossy(bytes).into_owned())
            .with_context(|| format!("{}: no control file", deb.display()))?;
        let e = status::parse_status(&ctl, &[rocm::COMMIT_FIELD])
            .with_context(|| format!("{}: bad control file", deb.display()))?;
        let e = e
            .into_iter()
            .next()
            .with_context(|| format!("{}: empty control file", deb.display()))?;
        let Some(commit) = e.extra.get(rocm::COMMIT_FIELD).cloned() else {
            return Err(usage(format!(
                "{} ({}) is not a rocm-pin replacement package (no {} field); make it with `rocm-pin package`",
                deb.display(),
                e.package,
                rocm::COMMIT_FIELD
            )));
        };
        if let Some((member, bytes)) = marker_member(&abs)? {
            let m: Marker = serde_json::from_slice(&bytes)
                .with_context(|| format!("{}: bad marker {member}", deb.display()))?;
            marker = Some(m);
        }
        facts.push(DebFacts {
            path: abs,
            package: e.package.clone(),
            version: e.version.clone(),
            architecture: e.architecture.clone(),
            commit,
            protected: e.protected,
            stock_name: String::new(),
            stock_version: String::new(),
        });
    }
    let marker = marker.ok_or_else(|| {
        usage(format!(
            "none of the given .debs ships the provenance marker */{}: give both replacement packages (the HSA one carries it)",
            rocm::MARKER_RELPATH
        ))
    })?;
    for f in &mut facts {
        let Some(r) = marker.replaced.iter().find(|r| r.package == f.package) else {
            return Err(usage(format!(
                "{} ({}) is not named in the marker of commit {}: the .debs come from different `rocm-pin package` runs",
                f.path.display(),
                f.package,
                marker.commit
            )));
        };
        if r.version != f.version || f.commit != marker.commit {
            return Err(usage(format!(
                "{}: version {} / commit {} do not match the marker ({} / {})",
                f.path.display(),
                f.version,
                f.commit,
                r.version,
                marker.commit
            )));
        }
        f.stock_name = r.stock_name.clone();
        f.stock_version = r.stock_version.clone();
    }
    for r in &marker.replaced {
        if !facts.iter().any(|f| f.package == r.package) {
            return Err(usage(format!(
                "the marker names {} {} but it was not given: install both replacement packages in one run",
                r.package, r.version
            )));
        }
    }
    Ok((facts, marker))
}
