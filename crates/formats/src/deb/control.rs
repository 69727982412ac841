//! deb822 control paragraphs (DEBIAN/control, dpkg status, Packages, Release) and
//! relationship fields (`Depends: a (>= 1), b | c`).
//!
//! Parsing rules (deb822(5), dpkg's lib/dpkg/parse.c):
//! - a field starts at column 0 with `Name:`; the name is printable US-ASCII without space or
//!   `:` and must not start with `#` or `-`; blanks after the colon are not part of the value;
//! - a line starting with space or tab continues the previous field;
//! - an empty or blank-only line ends the paragraph;
//! - a line starting with `#` at column 0 is a comment and is skipped (deb822 allows them in
//!   source control files; dpkg status and Packages files never contain them, so skipping
//!   is harmless there, but a paragraph with comments does not serialize back byte-for-byte);
//! - a field may appear once per paragraph.
//!
//! Values are stored as written (trailing blanks included) so that [`fmt::Display`] reproduces
//! well-formed input byte-for-byte; [`Paragraph::get`] trims trailing blanks as dpkg does.

use std::fmt;

pub use super::error::ControlError;
use super::error::{field_err, syntax};
use super::version::Version;

/// One deb822 paragraph. Field order is preserved; names compare case-insensitively.
/// Values are stored as dpkg presents them: the first line after `Name: `, continuation
/// lines joined with `\n` keeping their leading space (so multi-line Description and
/// md5sum lists round-trip byte-for-byte).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Paragraph {
    fields: Vec<(String, String)>,
}

fn is_blank(c: char) -> bool {
    c == ' ' || c == '\t'
}

/// Why `name` is not a valid deb822 field name, if it is not.
pub fn field_name_problem(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        return Some("field name is empty");
    }
    if !name
        .bytes()
        .all(|b| (0x21..=0x7e).contains(&b) && b != b':')
    {
        return Some(
            "field name may only contain printable US-ASCII characters other than ':' and space",
        );
    }
    if name.starts_with('#') || name.starts_with('-') {
        return Some("field name must not start with '#' or '-'");
    }
    None
}

/// Paragraphs as found by one linear scan; `parse` and `parse_many` share it.
fn scan(
    text: &str,
    mut on_paragraph: impl FnMut(Paragraph, usize) -> Result<(), ControlError>,
) -> Result<(), ControlError> {
    let mut current = Paragraph::new();
    let mut start_line = 0usize;
    // Field names already in `current`, lower-cased, for the duplicate check in O(1).
    let mut seen = std::collections::HashSet::new();
    let mut lines = text.split('\n').enumerate().peekable();
    while let Some((index, line)) = lines.next() {
        let number = index + 1;
        if line.is_empty() && lines.peek().is_none() {
            break; // the text after the final newline
        }
        if line.chars().all(is_blank) {
            if !current.fields.is_empty() {
                on_paragraph(std::mem::take(&mut current), start_line)?;
                seen.clear();
            }
            continue;
        }
        if line.starts_with(is_blank) {
            let Some((_, value)) = current.fields.last_mut() else {
                return Err(syntax(
                    number,
                    "continuation line (starting with space or tab) before any field",
                ));
            };
            value.push('\n');
            value.push_str(line);
            continue;
        }
        if line.starts_with('#') {
            continue;
        }
        let Some((name, value)) = line.split_once(':') else {
            return Err(syntax(
                number,
                format!("expected 'Name: value', found {line:?} (no colon)"),
            ));
        };
        if let Some(problem) = field_name_problem(name) {
            return Err(syntax(number, format!("{problem}: {name:?}")));
        }
        if !seen.insert(name.to_ascii_lowercase()) {
            return Err(syntax(
                number,
                format!("duplicate field {name:?} in one paragraph"),
            ));
        }
        if current.fields.is_empty() {
            start_line = number;
        }
        current.fields.push((
            name.to_string(),
            value.trim_start_matches(is_blank).to_string(),
        ));
    }
    if !current.fields.is_empty() {
        on_paragraph(current, start_line)?;
    }
    Ok(())
}

impl Paragraph {
    pub fn new() -> Self {
        Self::default()
    }
    /// Parse exactly one paragraph (leading/trailing blank lines allowed, `#` comment lines ignored
    /// only where deb822 allows them). More than one paragraph is an error.
    pub fn parse(text: &str) -> Result<Self, ControlError> {
        let mut found: Option<Paragraph> = None;
        scan(text, |p, line| {
            if found.is_some() {
                return Err(syntax(
                    line,
                    "a second paragraph starts here; expected exactly one",
                ));
            }
            found = Some(p);
            Ok(())
        })?;
        found.ok_or_else(|| syntax(1, "no paragraph found (the text is empty)"))
    }
    /// Parse a file of paragraphs separated by blank lines (dpkg status, Packages).
    pub fn parse_many(text: &str) -> Result<Vec<Self>, ControlError> {
        let mut all = Vec::new();
        scan(text, |p, _| {
            all.push(p);
            Ok(())
        })?;
        Ok(all)
    }
    pub fn get(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.trim_end_matches(is_blank))
    }
    /// Set or replace a field, keeping its position when it already exists. Refuses a name
    /// that is not a valid field name and a value that would inject a new field or paragraph
    /// (an empty line, or a continuation line not starting with space/tab).
    pub fn set(&mut self, name: &str, value: &str) -> Result<(), ControlError> {
        if let Some(problem) = field_name_problem(name) {
            return Err(field_err(name, problem));
        }
        check_value(name, value)?;
        match self
            .fields
            .iter_mut()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
        {
            Some((_, v)) => *v = value.to_string(),
            None => self.fields.push((name.to_string(), value.to_string())),
        }
        Ok(())
    }
    pub fn remove(&mut self, name: &str) -> Option<String> {
        let at = self
            .fields
            .iter()
            .position(|(k, _)| k.eq_ignore_ascii_case(name))?;
        let (_, mut value) = self.fields.remove(at);
        value.truncate(value.trim_end_matches(is_blank).len());
        Some(value)
    }
    pub fn fields(&self) -> impl Iterator<Item = (&str, &str)> {
        self.fields
            .iter()
            .map(|(k, v)| (k.as_str(), v.trim_end_matches(is_blank)))
    }
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }
    /// Check a binary package's control file the way `dpkg-deb --build` does: Package,
    /// Version, Architecture, Maintainer, Description present; package name and version valid.
    pub fn validate_binary(&self) -> Result<(), ControlError> {
        for required in [
            "Package",
            "Version",
            "Architecture",
            "Maintainer",
            "Description",
        ] {
            match self.get(required) {
                None => return Err(ControlError::Missing(required.to_string())),
                Some(v) if v.trim().is_empty() => {
                    return Err(field_err(required, "value is empty"))
                }
                Some(_) => {}
            }
        }
        let package = self.get("Package").unwrap_or_default();
        if let Some(problem) = package_name_problem(package) {
            return Err(field_err("Package", format!("{package:?}: {problem}")));
        }
        let version = self.get("Version").unwrap_or_default();
        version
            .parse::<Version>()
            .map_err(|e| field_err("Version", e.to_string()))?;
        let arch = self.get("Architecture").unwrap_or_default();
        if arch.contains(char::is_whitespace) {
            return Err(field_err(
                "Architecture",
                format!("{arch:?}: a binary package has exactly one architecture"),
            ));
        }
        Ok(())
    }
}

/// Why `name` is not a valid Debian package name (`[a-z0-9][a-z0-9+.-]+`), if it is not.
pub fn package_name_problem(name: &str) -> Option<&'static str> {
    let bytes = name.as_bytes();
    if bytes.len() < 2 {
        return Some("package name must be at least two characters long");
    }
    if !(bytes[0].is_ascii_lowercase() || bytes[0].is_ascii_digit()) {
        return Some("package name must start with a lower-case letter or digit");
    }
    if !bytes
        .iter()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"+.-".contains(b))
    {
        return Some("package name may only contain a-z, 0-9, '+', '-' and '.'");
    }
    None
}

/// A value `set` may store: serializing it must give back exactly one field with this value.
fn check_value(name: &str, value: &str) -> Result<(), ControlError> {
    if let Some(c) = value
        .chars()
        .find(|c| c.is_control() && *c != '\n' && *c != '\t')
    {
        return Err(field_err(
            name,
            format!("value contains control character {c:?}"),
        ));
    }
    let mut lines = value.split('\n');
    let first = lines.next().unwrap_or_default();
    if first.starts_with(is_blank) {
        return Err(field_err(
            name,
            "value starts with a blank (it would be dropped when read back)",
        ));
    }
    for (i, line) in lines.enumerate() {
        if !line.starts_with(is_blank) {
            return Err(field_err(
                name,
                format!("continuation line {} does not start with a space or tab: it would start a new field or paragraph", i + 2),
            ));
        }
        if line.chars().all(is_blank) {
            return Err(field_err(
                name,
                format!("continuation line {} is empty: it would end the paragraph (use \" .\" for an empty Description line)", i + 2),
            ));
        }
    }
    if value.ends_with(is_blank) {
        return Err(field_err(
            name,
            "value ends with a blank (it would be dropped when read back)",
        ));
    }
    Ok(())
}

impl fmt::Display for Paragraph {
    /// Serialize as `Name: value\n` lines, continuation lines as stored; no trailing blank line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (name, value) in &self.fields {
            if value.is_empty() || value.starts_with('\n') {
                writeln!(f, "{name}:{value}")?;
            } else {
                writeln!(f, "{name}: {value}")?;
            }
        }
        Ok(())
    }
}

/// Serialize paragraphs separated by one blank line, as dpkg writes status and Packages files.
pub fn format_many(paragraphs: &[Paragraph]) -> String {
    let mut out = String::new();
    for (i, p) in paragraphs.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&p.to_string());
    }
    out
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RelationOp {
    Lt,
    Le,
    Eq,
    Ge,
    Gt,
}

impl RelationOp {
    /// The operator as written in control files: `<<`, `<=`, `=`, `>=`, `>>`.
    pub fn as_str(self) -> &'static str {
        match self {
            RelationOp::Lt => "<<",
            RelationOp::Le => "<=",
            RelationOp::Eq => "=",
            RelationOp::Ge => ">=",
            RelationOp::Gt => ">>",
        }
    }
    /// Whether `candidate` satisfies `candidate <op> constraint`.
    pub fn admits(self, candidate: &Version, constraint: &Version) -> bool {
        let ord = candidate.cmp(constraint);
        match self {
            RelationOp::Lt => ord.is_lt(),
            RelationOp::Le => ord.is_le(),
            RelationOp::Eq => ord.is_eq(),
            RelationOp::Ge => ord.is_ge(),
            RelationOp::Gt => ord.is_gt(),
        }
    }
}

impl fmt::Display for RelationOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One alternative of a relationship field: `name[:arch] [(op version)]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Relation {
    pub name: String,
    /// `:any`, `:amd64`, … when present.
    pub arch_qualifier: Option<String>,
    pub constraint: Option<(RelationOp, String)>,
}

impl fmt::Display for Relation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)?;
        if let Some(arch) = &self.arch_qualifier {
            write!(f, ":{arch}")?;
        }
        if let Some((op, version)) = &self.constraint {
            write!(f, " ({op} {version})")?;
        }
        Ok(())
    }
}

/// A relationship field: AND over groups, each group an OR of alternatives.
pub type Relations = Vec<Vec<Relation>>;

fn relation_err(text: &str, reason: impl Into<String>) -> ControlError {
    field_err("relationship", format!("{text:?}: {}", reason.into()))
}

/// Parse a binary package's relationship field (Depends, Provides, Conflicts, …) as dpkg does.
///
/// - whitespace (including the newlines of continuation lines) is allowed anywhere between
///   tokens, `a(>=1)` equals `a (>= 1)`;
/// - the obsolete operators `<` and `>` are read as `<=` and `>=`, exactly as dpkg reads them
///   (dpkg warns; [`format_relations`] writes the modern spelling);
/// - architecture restrictions `[amd64]` and build profiles `<!nocheck>` belong to source
///   packages: dpkg refuses them in binary control files, and so do we;
/// - an empty value is an empty list; an empty group or alternative (`a, , b`, `a |`) is refused;
/// - package and architecture names must follow Debian policy (lower case, names at least two
///   characters): stricter than dpkg-deb, which lets `AA`, `a` and `aa:Amd64` through.
///
/// tests/formats/control_relations.rs checks these verdicts against `dpkg-deb --build`.
pub fn parse_relations(value: &str) -> Result<Relations, ControlError> {
    if value.trim().is_empty() {
        return Ok(Vec::new());
    }
    let mut groups = Vec::new();
    for group_text in value.split(',') {
        let mut group = Vec::new();
        for alt_text in group_text.split('|') {
            let alt = alt_text.trim();
            if alt.is_empty() {
                return Err(relation_err(value, "empty relation (a stray ',' or '|')"));
            }
            group.push(parse_relation(alt)?);
        }
        groups.push(group);
    }
    Ok(groups)
}

fn parse_relation(text: &str) -> Result<Relation, ControlError> {
    let name_end = text
        .find(|c: char| c.is_whitespace() || "(:[<".contains(c))
        .unwrap_or(text.len());
    let name = &text[..name_end];
    if let Some(problem) = package_name_problem(name) {
        return Err(relation_err(
            text,
            format!("package name {name:?}: {problem}"),
        ));
    }
    let mut rest = &text[name_end..];
    let mut arch_qualifier = None;
    if let Some(after) = rest.strip_prefix(':') {
        let end = after
            .find(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'))
            .unwrap_or(after.len());
        if end == 0 {
            return Err(relation_err(text, "empty architecture qualifier after ':'"));
        }
        arch_qualifier = Some(after[..end].to_string());
        rest = &after[end..];
    }
    rest = rest.trim_start();
    let mut constraint = None;
    if let Some(after) = rest.strip_prefix('(') {
        let Some(close) = after.find(')') else {
            return Err(relation_err(
                text,
                "missing ')' after the version constraint",
            ));
        };
        let inner = after[..close].trim_start();
        let (op, version_text) = if let Some(v) = inner.strip_prefix("<<") {
            (RelationOp::Lt, v)
        } else if let Some(v) = inner.strip_prefix("<=") {
            (RelationOp::Le, v)
        } else if let Some(v) = inner.strip_prefix(">=") {
            (RelationOp::Ge, v)
        } else if let Some(v) = inner.strip_prefix(">>") {
            (RelationOp::Gt, v)
        } else if let Some(v) = inner.strip_prefix('=') {
            (RelationOp::Eq, v)
        } else if let Some(v) = inner.strip_prefix('<') {
            (RelationOp::Le, v) // obsolete spelling, dpkg reads it as <=
        } else if let Some(v) = inner.strip_prefix('>') {
            (RelationOp::Ge, v) // obsolete spelling, dpkg reads it as >=
        } else {
            return Err(relation_err(
                text,
                "version constraint needs one of <<, <=, =, >=, >>",
            ));
        };
        let version_text = version_text.trim();
        let version: Version = version_text
            .parse()
            .map_err(|e: super::version::VersionError| relation_err(text, e.to_string()))?;
        let _ = version;
        constraint = Some((op, version_text.to_string()));
        rest = after[close + 1..].trim_start();
    }
    if rest.starts_with('[') {
        return Err(relation_err(
            text,
            "architecture restrictions [...] are only allowed in source package control files",
        ));
    }
    if rest.starts_with('<') {
        return Err(relation_err(
            text,
            "build profiles <...> are only allowed in source package control files",
        ));
    }
    if !rest.is_empty() {
        return Err(relation_err(
            text,
            format!("unexpected {rest:?} after the relation"),
        ));
    }
    Ok(Relation {
        name: name.to_string(),
        arch_qualifier,
        constraint,
    })
}

/// Canonical form: `a (>= 1), b | c`.
pub fn format_relations(rels: &Relations) -> String {
    rels.iter()
        .map(|group| {
            group
                .iter()
                .map(Relation::to_string)
                .collect::<Vec<_>>()
                .join(" | ")
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONTROL: &str = "Package: hello\nVersion: 2.10-3\nArchitecture: amd64\nMaintainer: A <a@b.c>\nDepends: libc6 (>= 2.34)\nDescription: example package\n long text\n .\n more text\n";

    #[test]
    fn parses_and_round_trips() {
        let p = Paragraph::parse(CONTROL).unwrap();
        assert_eq!(p.get("package"), Some("hello"));
        assert_eq!(
            p.get("DESCRIPTION"),
            Some("example package\n long text\n .\n more text")
        );
        assert_eq!(p.to_string(), CONTROL);
        p.validate_binary().unwrap();
    }

    #[test]
    fn keeps_empty_first_line_and_trailing_blanks() {
        let text = "Package: x\nConffiles:\n /etc/x 0123 obsolete\nDescription: short \n long\n";
        let p = Paragraph::parse(text).unwrap();
        assert_eq!(p.get("Conffiles"), Some("\n /etc/x 0123 obsolete"));
        assert_eq!(p.to_string(), text);
        let q = Paragraph::parse("A: b \n").unwrap();
        assert_eq!(q.get("a"), Some("b"));
        assert_eq!(q.to_string(), "A: b \n");
    }

    #[test]
    fn syntax_errors_carry_line_numbers() {
        let cases = [
            (" leading continuation\n", 1, "continuation"),
            ("A: b\nno colon here\n", 2, "no colon"),
            ("A: b\nA: c\n", 2, "duplicate"),
            ("A: b\na: c\n", 2, "duplicate"),
            ("A: b\n-B: c\n", 2, "must not start"),
            ("A: b\nB C: d\n", 2, "printable"),
            ("A: b\n: d\n", 2, "empty"),
            ("A: b\n\n\nB: c\n", 4, "second paragraph"),
            ("", 1, "no paragraph"),
        ];
        for (text, line, why) in cases {
            match Paragraph::parse(text) {
                Err(ControlError::Syntax { line: l, reason }) => {
                    assert_eq!(l, line, "{text:?}: {reason}");
                    assert!(reason.contains(why), "{text:?}: {reason}");
                }
                other => panic!("{text:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn parse_many_handles_blank_lines_and_comments() {
        let text = "\n\n# comment\nA: 1\n \t\nB: 2\n X\n\n\n";
        let ps = Paragraph::parse_many(text).unwrap();
        assert_eq!(ps.len(), 2);
        assert_eq!(ps[1].get("b"), Some("2\n X"));
        assert_eq!(format_many(&ps), "A: 1\n\nB: 2\n X\n");
        assert!(Paragraph::parse_many("").unwrap().is_empty());
    }

    #[test]
    fn set_get_remove_keep_order() {
        let mut p = Paragraph::parse(CONTROL).unwrap();
        p.set("version", "2.10-4").unwrap();
        p.set("Protected", "yes").unwrap();
        let names: Vec<_> = p.fields().map(|(k, _)| k).collect();
        assert_eq!(names[1], "Version");
        assert_eq!(names.last(), Some(&"Protected"));
        assert_eq!(p.get("Version"), Some("2.10-4"));
        assert_eq!(p.remove("DEPENDS").as_deref(), Some("libc6 (>= 2.34)"));
        assert_eq!(p.get("Depends"), None);
        assert_eq!(p.remove("Depends"), None);
    }

    #[test]
    fn set_refuses_injection() {
        let mut p = Paragraph::parse(CONTROL).unwrap();
        let before = p.clone();
        for (name, value) in [
            ("Description", "x\nPackage: evil"),
            ("Description", "x\n\nPackage: evil"),
            ("Description", "x\n \nPackage: evil"),
            ("Description", "x\n\t"),
            ("Description", "x\n"),
            ("Description", " x"),
            ("Description", "x "),
            ("Description", "x\r\nPackage: evil"),
            ("Description", "x\0"),
            ("Bad Name", "x"),
            ("Bad:Name", "x"),
            ("", "x"),
            ("#c", "x"),
            ("-c", "x"),
            ("Ünï", "x"),
        ] {
            assert!(p.set(name, value).is_err(), "{name:?} = {value:?} accepted");
        }
        assert_eq!(p, before, "refused set changed nothing");
        p.set("Description", "short\n long\n .\n\tmore").unwrap();
        p.set("Conffiles", "\n /etc/a 00").unwrap();
        p.set("Empty", "").unwrap();
        let again = Paragraph::parse(&p.to_string()).unwrap();
        assert_eq!(again, p);
    }

    #[test]
    fn validate_binary_checks_like_dpkg_deb() {
        let good = Paragraph::parse(CONTROL).unwrap();
        good.validate_binary().unwrap();
        for missing in [
            "Package",
            "Version",
            "Architecture",
            "Maintainer",
            "Description",
        ] {
            let mut p = good.clone();
            p.remove(missing);
            assert_eq!(
                p.validate_binary(),
                Err(ControlError::Missing(missing.to_string()))
            );
        }
        for (field, value) in [
            ("Package", "Hello"),
            ("Package", "h"),
            ("Package", "-hello"),
            ("Package", "hel_lo"),
            ("Version", "abc"),
            ("Version", "1.0-"),
            ("Architecture", "amd64 i386"),
        ] {
            let mut p = good.clone();
            p.set(field, value).unwrap();
            assert!(p.validate_binary().is_err(), "{field}: {value}");
        }
    }

    #[test]
    fn relations_parse_and_format() {
        let rels = parse_relations("aa (>= 1.0), bb:any | cc (= 2)").unwrap();
        assert_eq!(rels.len(), 2);
        assert_eq!(rels[1][0].arch_qualifier.as_deref(), Some("any"));
        assert_eq!(
            rels[1][1].constraint,
            Some((RelationOp::Eq, "2".to_string()))
        );
        assert_eq!(format_relations(&rels), "aa (>= 1.0), bb:any | cc (= 2)");
        let messy = parse_relations(
            "  aa(>=1.0) ,\n bb:amd64|cc( =2 ),dd (<< 1:3~x-1), ee (<= 1), ff (>> 0)",
        )
        .unwrap();
        assert_eq!(
            format_relations(&messy),
            "aa (>= 1.0), bb:amd64 | cc (= 2), dd (<< 1:3~x-1), ee (<= 1), ff (>> 0)"
        );
        // dpkg reads the obsolete `<` and `>` as `<=` and `>=`.
        let old = parse_relations("aa (< 1), bb (> 2)").unwrap();
        assert_eq!(format_relations(&old), "aa (<= 1), bb (>= 2)");
        assert!(parse_relations("").unwrap().is_empty());
    }

    #[test]
    fn relations_refuse_garbage() {
        for (bad, why) in [
            ("aa, , bb", "empty relation"),
            ("aa |", "empty relation"),
            ("aa,", "empty relation"),
            ("aa (>= 1", "missing ')'"),
            ("aa (~ 1)", "<<, <=, =, >=, >>"),
            ("aa (>= x1)", "does not start with digit"),
            ("aa (>= )", "empty"),
            ("aa [amd64]", "architecture restrictions"),
            ("aa <!nocheck>", "build profiles"),
            ("A", "package name"),
            ("aa:", "architecture qualifier"),
            ("aa bb", "unexpected"),
        ] {
            let err = parse_relations(bad).expect_err(bad).to_string();
            assert!(err.contains(why), "{bad:?}: {err}");
        }
    }

    #[test]
    fn relation_op_admits() {
        let v = |s: &str| s.parse::<Version>().unwrap();
        assert!(RelationOp::Eq.admits(&v("1.0"), &v("1.0-0")));
        assert!(RelationOp::Lt.admits(&v("1.0~rc1"), &v("1.0")));
        assert!(!RelationOp::Gt.admits(&v("1.0"), &v("1.0")));
        assert!(RelationOp::Ge.admits(&v("1.0"), &v("1.0")));
    }
}
