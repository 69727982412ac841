//! The `shlibs` and `symbols` control members of a replacement (deb-shlibs(5),
//! deb-symbols(5)), from the stock package's: what `dpkg-shlibdeps` reads when a package is
//! built against our installed library, and what `dpkg-gensymbols` checks our library against.
//!
//! The choice (docs/flavours.md, "shlibs and symbols"): the dependency templates keep naming the
//! STOCK package (`libamdhip64-7 (>= 7.2.4)`). Ours Provides the stock name at the exact stock
//! version, so a package built against ours installs against ours and against stock alike. The
//! one exception is a symbol only ours exports (the backport symbol): a binary using it cannot
//! run on stock, so such symbols select an alternative template naming OUR package
//! (`| libhsa-runtime64-1-pinned #MINVER#`, template 1). Stock symbols our library does not
//! export are dropped, so the file never promises what the library lacks (dpkg-gensymbols
//! fails on a symbol that disappeared).

use std::collections::{BTreeMap, BTreeSet};

use super::abi::LINKER_SYMBOLS;
use super::error::refused;
use super::model::ReplacementPlan;
use super::stock::StockPackage;
use crate::ops::plan::staging::Staging;

/// DEBIAN/shlibs and DEBIAN/symbols of `p`, from the stock package's (none when it has none).
pub(super) fn carried(
    p: &ReplacementPlan,
    s: &StockPackage,
    staging: &Staging,
) -> anyhow::Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    if let Some(shlibs) = s.library_info.get("shlibs") {
        let text = utf8(shlibs, "shlibs", s)?;
        out.insert("shlibs".to_string(), text.to_string());
    }
    if let Some(symbols) = s.library_info.get("symbols") {
        let text = utf8(symbols, "symbols", s)?;
        let exports = |soname: &str| exports_of(p, staging, soname);
        out.insert(
            "symbols".to_string(),
            rewrite_symbols(text, &p.package, &symbol_version(&p.version), &exports)?,
        );
    }
    Ok(out)
}

/// The minimal version a symbol only ours exports gets: our version without its Debian
/// revision (lintian: a symbols file names upstream versions), e.g. `7.2.4+dfsg`. It only
/// selects among our own packages, all of which carry the symbol (package refuses a staging
/// without it).
fn symbol_version(v: &crate::deb::version::Version) -> String {
    if v.epoch > 0 {
        format!("{}:{}", v.epoch, v.upstream)
    } else {
        v.upstream.clone()
    }
}

fn utf8<'a>(bytes: &'a [u8], member: &str, s: &StockPackage) -> anyhow::Result<&'a str> {
    match std::str::from_utf8(bytes) {
        Ok(t) => Ok(t),
        Err(_) => Err(refused(format!(
            "stock {} ({}): its {member} control member is not UTF-8 text",
            s.name, s.origin
        ))),
    }
}

/// The exported symbols of the rebuilt library with `soname` in `p`, as `name@VERSION`
/// (`name@Base` when unversioned), plus `V@V` for each version node; None when `p` does not
/// rebuild that library (its stock copy is carried, and so is its section).
fn exports_of(p: &ReplacementPlan, staging: &Staging, soname: &str) -> Option<BTreeSet<String>> {
    p.libraries.iter().find(|l| l.soname == soname)?;
    let lib = staging
        .libraries
        .iter()
        .find(|l| l.elf.soname.as_deref() == Some(soname))?;
    let mut out = BTreeSet::new();
    for e in &lib.elf.exports {
        if LINKER_SYMBOLS.contains(&e.name.as_str()) {
            continue;
        }
        let version = e.version.clone().unwrap_or_else(|| "Base".to_string());
        out.insert(format!("{version}@{version}"));
        out.insert(format!("{}@{version}", e.name));
    }
    out.remove("Base@Base");
    Some(out)
}

/// One symbol line's symbol (`name@VERSION`), None for a tagged line (`(c++)…`, `(regex)…`):
/// those are patterns, carried as they are.
fn symbol_of(line: &str) -> Option<&str> {
    let token = line.split_whitespace().next()?;
    (!token.starts_with('(')).then_some(token)
}

/// The stock symbols file with, per library section we rebuild: the stock symbols our library
/// exports kept, the others dropped, and the symbols only ours exports added at our version
/// with an alternative template naming our package.
pub(super) fn rewrite_symbols(
    stock: &str,
    package: &str,
    version: &str,
    exports: &dyn Fn(&str) -> Option<BTreeSet<String>>,
) -> anyhow::Result<String> {
    let mut out = String::new();
    let mut section: Option<(BTreeSet<String>, BTreeSet<String>)> = None;
    let flush = |out: &mut String, section: &mut Option<(BTreeSet<String>, BTreeSet<String>)>| {
        if let Some((ours, seen)) = section.take() {
            for sym in ours.difference(&seen) {
                out.push_str(&format!(" {sym} {version} 1\n"));
            }
        }
    };
    for line in stock.lines() {
        if line.starts_with(' ') {
            match (&mut section, symbol_of(line)) {
                (Some((ours, seen)), Some(sym)) => {
                    if ours.contains(sym) {
                        seen.insert(sym.to_string());
                        out.push_str(line);
                        out.push('\n');
                    }
                }
                _ => {
                    out.push_str(line);
                    out.push('\n');
                }
            }
            continue;
        }
        if line.starts_with('|') || line.starts_with('*') || line.starts_with('#') {
            out.push_str(line);
            out.push('\n');
            continue;
        }
        // A section header: `<soname> <dependency template>`.
        flush(&mut out, &mut section);
        out.push_str(line);
        out.push('\n');
        let soname = line.split_whitespace().next().unwrap_or_default();
        if let Some(ours) = exports(soname) {
            if stock_alternatives(stock, soname) > 0 {
                return Err(refused(format!("the stock symbols file has alternative dependency templates for {soname}; rocm-pin cannot number its own after them")));
            }
            out.push_str(&format!("| {package} #MINVER#\n"));
            section = Some((ours, BTreeSet::new()));
        }
    }
    flush(&mut out, &mut section);
    Ok(out)
}

/// How many `|` alternative templates the section of `soname` has in `stock`.
fn stock_alternatives(stock: &str, soname: &str) -> usize {
    stock
        .lines()
        .skip_while(|l| l.split_whitespace().next() != Some(soname) || l.starts_with(' '))
        .skip(1)
        .take_while(|l| l.starts_with('|') || l.starts_with('*') || l.starts_with(' '))
        .filter(|l| l.starts_with('|'))
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    const STOCK: &str = "\
libhsa-runtime64.so.1 libhsa-runtime64-1 #MINVER#
* Build-Depends-Package: libhsa-runtime-dev
 ROCR_1@ROCR_1 5.2.3
 hsa_init@ROCR_1 5.2.3
 hsa_shut_down@ROCR_1 5.2.3
 (c++)\"foo()@Base\" 6.0
libother.so.2 libother2 #MINVER#
 other@Base 1.0
";

    #[test]
    fn symbols_keep_what_ours_exports_drop_the_rest_and_add_ours() {
        let exports = |soname: &str| {
            (soname == "libhsa-runtime64.so.1").then(|| {
                [
                    "ROCR_1@ROCR_1",
                    "hsa_init@ROCR_1",
                    "hsa_amd_signal_create_v2@ROCR_1",
                ]
                .into_iter()
                .map(String::from)
                .collect()
            })
        };
        let out =
            rewrite_symbols(STOCK, "libhsa-runtime64-1-pinned", "5.2.3-3+pin1", &exports).unwrap();
        assert_eq!(
            out,
            "\
libhsa-runtime64.so.1 libhsa-runtime64-1 #MINVER#
| libhsa-runtime64-1-pinned #MINVER#
* Build-Depends-Package: libhsa-runtime-dev
 ROCR_1@ROCR_1 5.2.3
 hsa_init@ROCR_1 5.2.3
 (c++)\"foo()@Base\" 6.0
 hsa_amd_signal_create_v2@ROCR_1 5.2.3-3+pin1 1
libother.so.2 libother2 #MINVER#
 other@Base 1.0
"
        );
    }
}
