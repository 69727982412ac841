//! The ABI check of `package` (issue 32): each rebuilt library must export every dynamic
//! symbol the stock library it replaces exports, in the same version node, or a program
//! linked against the stock library stops loading with "undefined symbol: …, version ROCR_1".
//! The stock side is the stock ELF itself and, where the stock package has one, Debian's
//! `symbols` control member (deb-symbols(5)).
//!
//! A version node counts: a consumer linked against `hsa_init@ROCR_1` records the node in its
//! DT_VERNEED and ld.so refuses a definition of `hsa_init` without it. An unversioned stock
//! symbol is satisfied by an unversioned one or by the default (`@@`) version: ld.so binds an
//! unversioned reference to the one default definition.

use std::collections::{BTreeMap, BTreeSet};

use super::error::refused;
use super::model::{PlanOptions, ReplacementPlan};
use super::stock::{StockKind, StockPackage};
use crate::elf::{ElfInfo, ExportedSymbol};
use crate::ops::plan::staging::Staging;
use crate::ops::verify_abi::first_few;
use crate::rocm;

/// Symbols the linker defines in every shared object; neither side's interface.
pub(super) const LINKER_SYMBOLS: &[&str] = &[
    "_init",
    "_fini",
    "_edata",
    "_end",
    "__bss_start",
    "_DYNAMIC",
    "_GLOBAL_OFFSET_TABLE_",
    "_etext",
];

/// One thing the stock library promises: a symbol (`name`, version node or None), or a
/// version node itself (a `ROCR_1@ROCR_1` line of a symbols file).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Promise {
    Symbol(String, Option<String>),
    Node(String),
}

impl Promise {
    /// `name@VERSION` as dpkg-gensymbols and ld.so print it (`@Base`: unversioned).
    fn text(&self) -> String {
        match self {
            Promise::Symbol(name, Some(v)) => format!("{name}@{v}"),
            Promise::Symbol(name, None) => format!("{name}@Base"),
            Promise::Node(v) => format!("{v}@{v}"),
        }
    }

    fn kept_by(&self, ours: &[ExportedSymbol]) -> bool {
        match self {
            Promise::Symbol(name, Some(v)) => ours
                .iter()
                .any(|e| e.name == *name && e.version.as_deref() == Some(v.as_str())),
            Promise::Symbol(name, None) => ours
                .iter()
                .any(|e| e.name == *name && (e.version.is_none() || e.default)),
            Promise::Node(v) => ours
                .iter()
                .any(|e| e.version.as_deref() == Some(v.as_str())),
        }
    }
}

/// The stock symbols each rebuilt library lacks, by SONAME (`name@VERSION`, sorted); refused
/// unless `--allow-missing-symbols`, then a warning.
pub(super) fn check(
    plans: &[ReplacementPlan],
    stock: &[(rocm::Half, StockPackage)],
    staging: &Staging,
    lib_dir: &str,
    opts: &PlanOptions,
    warnings: &mut Vec<String>,
) -> anyhow::Result<BTreeMap<String, Vec<String>>> {
    let mut missing: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut lines = Vec::new();
    for p in plans {
        let Some((_, s)) = stock.iter().find(|(_, s)| s.name == p.stock_name) else {
            continue;
        };
        for lib in &p.libraries {
            let Some(staged) = staging
                .libraries
                .iter()
                .find(|l| l.elf.soname.as_deref() == Some(lib.soname.as_str()))
            else {
                continue;
            };
            let Some(family) = staged.family else {
                continue;
            };
            let promises = stock_promises(s, family.stem, &lib.soname, lib_dir);
            let lacking: Vec<String> = promises
                .iter()
                .filter(|p| !p.kept_by(&staged.elf.exports))
                .map(Promise::text)
                .collect();
            if lacking.is_empty() {
                continue;
            }
            lines.push(format!(
                "{} ({} in {}) lacks {} of the {} symbols stock {} {} exports: {}",
                lib.soname,
                staged.file_name,
                p.package,
                lacking.len(),
                promises.len(),
                s.name,
                s.version,
                first_few(&lacking)
            ));
            missing.insert(lib.soname.clone(), lacking);
        }
    }
    if lines.is_empty() {
        return Ok(missing);
    }
    if !opts.allow_missing_symbols {
        return Err(refused(format!(
            "{}; programs linked against the stock library would stop loading ours (\"undefined symbol\"). \
             Build from a commit and configuration that export them, or pass --allow-missing-symbols to package it anyway \
             (recorded in {} and the marker; verify names every installed program that needs one)",
            lines.join("; "),
            rocm::MISSING_SYMBOLS_FIELD
        )));
    }
    for line in lines {
        warnings.push(format!("{line}: accepted by --allow-missing-symbols"));
    }
    Ok(missing)
}

/// Everything the stock copy of family `stem` promises: its real files' exports and the
/// symbols-file lines of its SONAME(s).
fn stock_promises(
    s: &StockPackage,
    stem: &str,
    our_soname: &str,
    lib_dir: &str,
) -> BTreeSet<Promise> {
    let mut promises = BTreeSet::new();
    let mut sonames: BTreeSet<String> = BTreeSet::from([our_soname.to_string()]);
    for f in &s.files {
        if !matches!(f.kind, StockKind::File { .. })
            || rocm::families::library_in_any(lib_dir, &f.path).is_none_or(|x| x.stem != stem)
        {
            continue;
        }
        // An unreadable stock file is already a warning of the family plan (its soname).
        let Ok(info) = crate::elf::read_elf(&f.source) else {
            continue;
        };
        promises.extend(exported_promises(&info));
        sonames.extend(info.soname);
    }
    if let Some(text) = s
        .library_info
        .get("symbols")
        .and_then(|b| std::str::from_utf8(b).ok())
    {
        promises.extend(symbols_file_promises(text, &sonames));
    }
    promises
}

fn exported_promises(info: &ElfInfo) -> impl Iterator<Item = Promise> + '_ {
    info.exports
        .iter()
        .filter(|e| !LINKER_SYMBOLS.contains(&e.name.as_str()))
        .map(|e| Promise::Symbol(e.name.clone(), e.version.clone()))
}

/// The plain symbol lines (`name@VERSION minver`) of the sections of `sonames`; tagged lines
/// (`(c++)…`, `(optional)…`, `(arch=…)…`) are patterns or may vanish, and are left out.
fn symbols_file_promises(text: &str, sonames: &BTreeSet<String>) -> Vec<Promise> {
    let mut out = Vec::new();
    let mut in_section = false;
    for line in text.lines() {
        if let Some(body) = line.strip_prefix(' ') {
            let Some(token) = body.split_whitespace().next() else {
                continue;
            };
            if !in_section || token.starts_with('(') {
                continue;
            }
            let Some((name, version)) = token.rsplit_once('@') else {
                continue;
            };
            out.push(match version {
                "Base" => Promise::Symbol(name.to_string(), None),
                v if v == name => Promise::Node(v.to_string()),
                v => Promise::Symbol(name.to_string(), Some(v.to_string())),
            });
        } else if !line.starts_with(['|', '*', '#']) && !line.trim().is_empty() {
            let soname = line.split_whitespace().next().unwrap_or_default();
            in_section = sonames.contains(soname);
        }
    }
    out
}

/// The control field of `p` when some of its libraries lack stock symbols:
/// `<soname> <count>, …` (None: nothing missing, no field, the bytes of before).
pub(super) fn field_value(
    p: &ReplacementPlan,
    missing: &BTreeMap<String, Vec<String>>,
) -> Option<String> {
    let parts: Vec<String> = p
        .libraries
        .iter()
        .filter_map(|l| {
            missing
                .get(&l.soname)
                .map(|m| format!("{} {}", l.soname, m.len()))
        })
        .collect();
    (!parts.is_empty()).then(|| parts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sym(name: &str, version: Option<&str>, default: bool) -> ExportedSymbol {
        ExportedSymbol {
            name: name.into(),
            version: version.map(String::from),
            default,
            function: true,
            size: 0,
        }
    }

    #[test]
    fn a_version_node_counts_and_an_unversioned_symbol_takes_the_default() {
        let ours = [
            sym("hsa_init", Some("ROCR_1"), true),
            sym("old", Some("V0"), false),
            sym("plain", None, true),
            sym("hiprtcVersion", Some("hiprtc_4.0"), true),
        ];
        let kept = |p: Promise| p.kept_by(&ours);
        assert!(kept(Promise::Symbol(
            "hsa_init".into(),
            Some("ROCR_1".into())
        )));
        // The name alone is not enough: ld.so needs the node the consumer recorded.
        assert!(!kept(Promise::Symbol(
            "hsa_init".into(),
            Some("ROCR_2".into())
        )));
        assert!(kept(Promise::Symbol("old".into(), Some("V0".into()))));
        assert!(kept(Promise::Symbol("plain".into(), None)));
        assert!(kept(Promise::Symbol("hiprtcVersion".into(), None)));
        // A hidden (`@`) version does not satisfy an unversioned reference.
        assert!(!kept(Promise::Symbol("old".into(), None)));
        assert!(kept(Promise::Node("ROCR_1".into())));
        assert!(!kept(Promise::Node("hip_4.2".into())));
    }

    #[test]
    fn symbols_file_lines_of_the_right_section_only() {
        let text = "\
libhsa-runtime64.so.1 libhsa-runtime64-1 #MINVER#
* Build-Depends-Package: libhsa-runtime-dev
 ROCR_1@ROCR_1 5.2.3
 hsa_agent_iterate_isas@ROCR_1 5.2.3
 (c++)\"foo()@Base\" 6.0
 (optional)maybe@ROCR_1 6.0
 plain@Base 6.0
libother.so.2 libother2 #MINVER#
 other@Base 1.0
";
        let sonames = BTreeSet::from(["libhsa-runtime64.so.1".to_string()]);
        let got: Vec<String> = symbols_file_promises(text, &sonames)
            .iter()
            .map(Promise::text)
            .collect();
        assert_eq!(
            got,
            [
                "ROCR_1@ROCR_1",
                "hsa_agent_iterate_isas@ROCR_1",
                "plain@Base"
            ]
        );
    }
}
