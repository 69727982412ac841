//! Checks on the .debs a test built, as rows of a table: one [`DebCheck`] per fact (a control
//! field, an entry of data.tar, a control member's text), judged by dpkg-deb (never by our own
//! reader). Adding a check is one row. Every failing row is reported, not just the first.
//!
//! Texts may hold `{name}` placeholders, filled from the test's `vars`; a placeholder with no
//! var is a failure of that row (a typo in a table must not pass).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use crate::debs::{contents, field};
use crate::must;

/// One check on the .deb named by its first column (a key the test binds to a file; `"*"` in
/// [`DebCheck::NoPathWith`] means every .deb).
#[derive(Debug, Clone, Copy)]
pub enum DebCheck<'a> {
    /// (deb, field, value): the control field is exactly the value.
    FieldIs(&'a str, &'a str, &'a str),
    /// (deb, field, text): the control field contains the text.
    FieldHas(&'a str, &'a str, &'a str),
    /// (deb, field, text): the control field does not contain the text.
    FieldLacks(&'a str, &'a str, &'a str),
    /// (deb, kind, path, link): `dpkg-deb -c` lists `path` as `kind` ('-' file, 'h' hard link,
    /// 'l' symlink, 'd' directory), and when `link` is given, pointing there.
    Entry(&'a str, char, &'a str, Option<&'a str>),
    /// (deb, path): `dpkg-deb -c` lists no entry at `path`.
    NoEntry(&'a str, &'a str),
    /// (deb or "*", text): no entry's path contains `text`.
    NoPathWith(&'a str, &'a str),
    /// (deb or "*", path): some entry of this .deb (of any bound .deb), of any kind, is at `path`.
    Ships(&'a str, &'a str),
    /// (deb, deb): no path other than a directory is in both.
    Disjoint(&'a str, &'a str),
    /// (deb, member, text): the control member (`dpkg-deb -e`: conffiles, triggers, preinst …)
    /// contains the text.
    ControlHas(&'a str, &'a str, &'a str),
    /// (deb, path, text): the file at `path` in data.tar (`dpkg-deb -x`) contains the text.
    DataHas(&'a str, &'a str, &'a str),
}

/// What dpkg-deb says about one .deb, read once per table.
struct Seen<'p> {
    deb: &'p Path,
    entries: Vec<(char, String, String)>,
    control: Option<tempfile::TempDir>,
    data: Option<tempfile::TempDir>,
}

impl Seen<'_> {
    fn unpacked(&mut self, action: &str) -> &Path {
        let slot = if action == "-e" {
            &mut self.control
        } else {
            &mut self.data
        };
        slot.get_or_insert_with(|| {
            let d = tempfile::tempdir().unwrap();
            must(
                Command::new("dpkg-deb")
                    .arg(action)
                    .arg(self.deb)
                    .arg(d.path()),
            );
            d
        })
        .path()
    }
}

/// `text` with each `{name}` replaced by its var (a shell's `${name}` is left as it is); `Err`
/// names a placeholder with no var.
pub fn fill(text: &str, vars: &[(&str, String)]) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}') else {
            break;
        };
        let (before, name) = (&rest[..open], &rest[open + 1..open + close]);
        out.push_str(before);
        if before.ends_with('$') {
            out.push_str(&rest[open..=open + close]);
        } else {
            let value = vars
                .iter()
                .find(|(n, _)| *n == name)
                .ok_or_else(|| format!("no var {{{name}}} for {text:?}"))?;
            out.push_str(&value.1);
        }
        rest = &rest[open + close + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The rows of `table` that do not hold for `debs` (key -> file), one line each; empty when
/// every row holds.
pub fn deb_table_failures(
    debs: &[(&str, &Path)],
    vars: &[(&str, String)],
    table: &[DebCheck],
) -> Vec<String> {
    let mut seen: BTreeMap<&str, Seen> = debs
        .iter()
        .map(|(k, d)| {
            (
                *k,
                Seen {
                    deb: d,
                    entries: contents(d),
                    control: None,
                    data: None,
                },
            )
        })
        .collect();
    let mut failures = Vec::new();
    for row in table {
        if let Err(why) = judge(row, &mut seen, vars) {
            failures.push(format!("{row:?}: {why}"));
        }
    }
    failures
}

/// Panics listing every row of `table` that does not hold for `debs`.
pub fn assert_deb_table(debs: &[(&str, &Path)], vars: &[(&str, String)], table: &[DebCheck]) {
    let failures = deb_table_failures(debs, vars, table);
    assert!(
        failures.is_empty(),
        "{} row(s) failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The .deb bound to `key`.
fn view<'s, 'p>(
    seen: &'s mut BTreeMap<&str, Seen<'p>>,
    key: &str,
) -> Result<&'s mut Seen<'p>, String> {
    let keys: Vec<String> = seen.keys().map(|k| k.to_string()).collect();
    seen.get_mut(key)
        .ok_or_else(|| format!("no .deb bound to {key:?} (bound: {keys:?})"))
}

fn judge(
    row: &DebCheck,
    seen: &mut BTreeMap<&str, Seen>,
    vars: &[(&str, String)],
) -> Result<(), String> {
    let entry_at = |s: &Seen, path: &str| s.entries.iter().find(|(_, p, _)| p == path).cloned();
    match *row {
        DebCheck::FieldIs(deb, name, want)
        | DebCheck::FieldHas(deb, name, want)
        | DebCheck::FieldLacks(deb, name, want) => {
            let want = fill(want, vars)?;
            let got = field(view(seen, deb)?.deb, name);
            let holds = match row {
                DebCheck::FieldIs(..) => got == want,
                DebCheck::FieldHas(..) => got.contains(&want),
                _ => !got.contains(&want),
            };
            if holds {
                Ok(())
            } else {
                Err(format!("{name} is {got:?} (want {want:?})"))
            }
        }
        DebCheck::Entry(deb, kind, path, link) => {
            let path = fill(path, vars)?;
            let s = view(seen, deb)?;
            match entry_at(s, &path) {
                Some((k, _, l)) if k == kind => match link.map(|l| fill(l, vars)).transpose()? {
                    Some(want) if want != l => Err(format!("{path} links to {l:?}, not {want:?}")),
                    _ => Ok(()),
                },
                Some((k, _, _)) => Err(format!("{path} is a {k:?}, not a {kind:?}")),
                None => Err(format!("{path} is not in {}", s.deb.display())),
            }
        }
        DebCheck::Ships("*", path) => {
            let path = fill(path, vars)?;
            if seen.values().any(|s| entry_at(s, &path).is_some()) {
                Ok(())
            } else {
                Err(format!("{path} is in none"))
            }
        }
        DebCheck::NoEntry(deb, path) | DebCheck::Ships(deb, path) => {
            let path = fill(path, vars)?;
            let s = view(seen, deb)?;
            match (
                entry_at(s, &path).is_some(),
                matches!(row, DebCheck::Ships(..)),
            ) {
                (true, false) => Err(format!("{path} is in {}", s.deb.display())),
                (false, true) => Err(format!("{path} is not in {}", s.deb.display())),
                _ => Ok(()),
            }
        }
        DebCheck::NoPathWith(deb, text) => {
            let text = fill(text, vars)?;
            let found: Vec<String> = seen
                .iter()
                .filter(|(k, _)| deb == "*" || **k == deb)
                .flat_map(|(_, s)| s.entries.iter().map(|(_, p, _)| p.clone()))
                .filter(|p| p.contains(&text))
                .collect();
            if found.is_empty() {
                Ok(())
            } else {
                Err(format!("shipped with {text:?}: {found:?}"))
            }
        }
        DebCheck::Disjoint(a, b) => {
            let files = |s: &Seen| -> Vec<String> {
                s.entries
                    .iter()
                    .filter(|(k, _, _)| *k != 'd')
                    .map(|(_, p, _)| p.clone())
                    .collect()
            };
            let in_a = files(view(seen, a)?);
            let in_b = files(view(seen, b)?);
            let both: Vec<&String> = in_a.iter().filter(|p| in_b.contains(p)).collect();
            if both.is_empty() {
                Ok(())
            } else {
                Err(format!("in both: {both:?}"))
            }
        }
        DebCheck::ControlHas(deb, member, text) | DebCheck::DataHas(deb, member, text) => {
            let (member, text) = (fill(member, vars)?, fill(text, vars)?);
            let action = if matches!(row, DebCheck::ControlHas(..)) {
                "-e"
            } else {
                "-x"
            };
            let file = view(seen, deb)?
                .unpacked(action)
                .join(member.trim_start_matches('/'));
            let got =
                std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
            if got.contains(&text) {
                Ok(())
            } else {
                Err(format!("{member} lacks {text:?}:\n{got}"))
            }
        }
    }
}
