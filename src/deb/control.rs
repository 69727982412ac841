//! deb822 control paragraphs (DEBIAN/control, dpkg status, Packages, Release) and
//! relationship fields (`Depends: a (>= 1), b | c`).

use std::fmt;

/// One deb822 paragraph. Field order is preserved; names compare case-insensitively.
/// Values are stored as dpkg presents them: the first line after `Name: `, continuation
/// lines joined with `\n` keeping their leading space (so multi-line Description and
/// md5sum lists round-trip byte-for-byte).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Paragraph {
    fields: Vec<(String, String)>,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ControlError {
    #[error("line {line}: {reason}")]
    Syntax { line: usize, reason: String },
    #[error("field {field:?}: {reason}")]
    Field { field: String, reason: String },
    #[error("missing required field {0}")]
    Missing(String),
}

impl Paragraph {
    pub fn new() -> Self {
        Self::default()
    }
    /// Parse exactly one paragraph (leading/trailing blank lines allowed, `#` comment lines ignored
    /// only where deb822 allows them). More than one paragraph is an error.
    pub fn parse(_text: &str) -> Result<Self, ControlError> {
        todo!("deb::control: parse one paragraph")
    }
    /// Parse a file of paragraphs separated by blank lines (dpkg status, Packages).
    pub fn parse_many(_text: &str) -> Result<Vec<Self>, ControlError> {
        todo!("deb::control: parse many")
    }
    pub fn get(&self, _name: &str) -> Option<&str> {
        todo!("deb::control: get (case-insensitive)")
    }
    /// Set or replace a field, keeping its position when it already exists. Refuses a name
    /// that is not a valid field name and a value that would inject a new field or paragraph
    /// (an empty line, or a continuation line not starting with space/tab).
    pub fn set(&mut self, _name: &str, _value: &str) -> Result<(), ControlError> {
        todo!("deb::control: set with injection checks")
    }
    pub fn remove(&mut self, _name: &str) -> Option<String> {
        todo!("deb::control: remove")
    }
    pub fn fields(&self) -> impl Iterator<Item = (&str, &str)> {
        self.fields.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }
    /// Check a binary package's control file the way `dpkg-deb --build` does: Package,
    /// Version, Architecture, Maintainer, Description present; package name and version valid.
    pub fn validate_binary(&self) -> Result<(), ControlError> {
        todo!("deb::control: validate binary control")
    }
}

impl fmt::Display for Paragraph {
    /// Serialize as `Name: value\n` lines, continuation lines as stored; no trailing blank line.
    fn fmt(&self, _f: &mut fmt::Formatter<'_>) -> fmt::Result {
        todo!("deb::control: serialize")
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RelationOp {
    Lt,
    Le,
    Eq,
    Ge,
    Gt,
}

/// One alternative of a relationship field: `name[:arch] [(op version)]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Relation {
    pub name: String,
    /// `:any`, `:amd64`, … when present.
    pub arch_qualifier: Option<String>,
    pub constraint: Option<(RelationOp, String)>,
}

/// A relationship field: AND over groups, each group an OR of alternatives.
pub type Relations = Vec<Vec<Relation>>;

pub fn parse_relations(_value: &str) -> Result<Relations, ControlError> {
    todo!("deb::control: parse relations")
}

/// Canonical form: `a (>= 1), b | c`.
pub fn format_relations(_rels: &Relations) -> String {
    todo!("deb::control: format relations")
}
