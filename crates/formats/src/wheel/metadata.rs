//! The `.dist-info` header files (`METADATA`, PyPA "Core metadata"; `WHEEL`, "Binary
//! distribution format"): `Key: value` lines, a line starting with whitespace continuing the
//! one before, a blank line ending the headers (METADATA's body, the description, follows).
//! And the names: PEP 503 normalisation, the wheel file name's escaping and tag set.

use anyhow::{bail, Context};

/// The most bytes a METADATA or WHEEL file read from a wheel or a venv may have.
pub const MAX_METADATA_BYTES: u64 = 4 << 20;

/// Parsed header fields of METADATA or WHEEL, in order, and the body.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CoreMetadata {
    pub fields: Vec<(String, String)>,
    pub body: String,
}

impl CoreMetadata {
    pub fn parse(text: &str) -> anyhow::Result<CoreMetadata> {
        if text.len() as u64 > MAX_METADATA_BYTES {
            bail!("metadata file over {MAX_METADATA_BYTES} bytes; refused");
        }
        let mut fields: Vec<(String, String)> = Vec::new();
        let mut rest = text;
        while !rest.is_empty() {
            let (line, after) = rest.split_once('\n').unwrap_or((rest, ""));
            rest = after;
            let line = line.strip_suffix('\r').unwrap_or(line);
            if line.is_empty() {
                break;
            }
            if line.starts_with([' ', '\t']) {
                let (_, value) = fields
                    .last_mut()
                    .context("metadata starts with a continuation line")?;
                value.push('\n');
                value.push_str(line.trim_start());
                continue;
            }
            let (key, value) = line
                .split_once(':')
                .with_context(|| format!("metadata line {line:?} is not `Key: value`"))?;
            if key.is_empty()
                || !key
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            {
                bail!("metadata field name {key:?} is not a header name");
            }
            fields.push((key.to_string(), value.trim().to_string()));
        }
        Ok(CoreMetadata {
            fields,
            body: rest.to_string(),
        })
    }

    /// The first value of `key` (case-insensitive, as email headers are).
    pub fn get(&self, key: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, v)| v.as_str())
    }

    pub fn get_all<'a>(&'a self, key: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.fields
            .iter()
            .filter(move |(k, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, v)| v.as_str())
    }

    /// `Name`, required.
    pub fn name(&self) -> anyhow::Result<&str> {
        self.get("Name").context("metadata has no Name field")
    }

    /// `Version`, required.
    pub fn version(&self) -> anyhow::Result<&str> {
        self.get("Version").context("metadata has no Version field")
    }
}

/// `text` (a METADATA) with its `Version:` line set to `version` and `extra` fields appended
/// to the headers; every other byte kept as it was.
pub fn rewrite_metadata(
    text: &str,
    version: &str,
    extra: &[(&str, String)],
) -> anyhow::Result<String> {
    let (head, body) = match text.find("\n\n") {
        Some(i) => (&text[..i + 1], &text[i + 1..]),
        None => (text, ""),
    };
    let mut out = String::with_capacity(text.len() + 256);
    let mut replaced = false;
    for line in head.lines() {
        if !replaced && line.to_ascii_lowercase().starts_with("version:") {
            out.push_str(&format!("Version: {version}\n"));
            replaced = true;
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    if !replaced {
        bail!("metadata has no Version field");
    }
    for (k, v) in extra {
        if v.contains(['\n', '\r']) {
            bail!("metadata field {k} would span lines");
        }
        out.push_str(&format!("{k}: {v}\n"));
    }
    out.push_str(body);
    Ok(out)
}

/// A parsed `WHEEL` file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WheelFile {
    pub wheel_version: String,
    pub root_is_purelib: bool,
    /// `py3-none-linux_x86_64`, …: one per `Tag:` line.
    pub tags: Vec<String>,
}

impl WheelFile {
    pub fn parse(text: &str) -> anyhow::Result<WheelFile> {
        let m = CoreMetadata::parse(text)?;
        let wheel_version = m
            .get("Wheel-Version")
            .context("WHEEL has no Wheel-Version")?;
        if !wheel_version.starts_with("1.") {
            bail!("WHEEL says Wheel-Version {wheel_version}; only 1.x is understood");
        }
        let tags: Vec<String> = m.get_all("Tag").map(str::to_string).collect();
        if tags.is_empty() || tags.iter().any(|t| t.split('-').count() != 3) {
            bail!("WHEEL has no Tag, or a Tag that is not python-abi-platform");
        }
        Ok(WheelFile {
            wheel_version: wheel_version.to_string(),
            root_is_purelib: m
                .get("Root-Is-Purelib")
                .is_some_and(|v| v.eq_ignore_ascii_case("true")),
            tags,
        })
    }
}

/// PEP 503's normalised project name: lower case, each run of `-`, `_`, `.` one `-`.
pub fn normalize_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        if matches!(c, '-' | '_' | '.') {
            if !out.ends_with('-') {
                out.push('-');
            }
        } else {
            out.push(c.to_ascii_lowercase());
        }
    }
    out
}

/// The name as a wheel file name or `.dist-info` directory writes it: normalised, `_` for `-`.
pub fn escape_name(name: &str) -> String {
    normalize_name(name).replace('-', "_")
}

/// `{name}-{version}-{python}-{abi}-{platform}.whl`, the tag set compressed as the binary
/// distribution format says (`py2.py3-none-any`).
pub fn wheel_file_name(name: &str, version: &str, tags: &[String]) -> anyhow::Result<String> {
    let mut parts: [Vec<&str>; 3] = Default::default();
    for tag in tags {
        let fields: Vec<&str> = tag.split('-').collect();
        if fields.len() != 3 {
            bail!("wheel tag {tag:?} is not python-abi-platform");
        }
        for (set, field) in parts.iter_mut().zip(fields) {
            if !set.contains(&field) {
                set.push(field);
            }
        }
    }
    if parts[0].is_empty() {
        bail!("a wheel needs at least one tag");
    }
    let [py, abi, plat] = parts.map(|p| p.join("."));
    Ok(format!(
        "{}-{}-{py}-{abi}-{plat}.whl",
        escape_name(name),
        version.replace('-', "_")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const METADATA: &str = "Metadata-Version: 2.1\nName: example-sdk-core\nVersion: 10.0.0\nSummary: x\nRequires-Dist: a\nRequires-Dist: b ; extra == \"c\"\nDescription: one\n        | two\n\nBody text\n";

    #[test]
    fn parses_fields_continuations_and_body() {
        let m = CoreMetadata::parse(METADATA).unwrap();
        assert_eq!(m.name().unwrap(), "example-sdk-core");
        assert_eq!(m.version().unwrap(), "10.0.0");
        assert_eq!(m.get_all("requires-dist").count(), 2);
        assert_eq!(m.get("Description"), Some("one\n| two"));
        assert_eq!(m.body, "Body text\n");
        assert!(CoreMetadata::parse(" starts continued\n").is_err());
        assert!(CoreMetadata::parse("no colon\n").is_err());
    }

    #[test]
    fn rewrite_sets_version_and_appends_fields_keeping_the_rest() {
        let out =
            rewrite_metadata(METADATA, "10.0.0+local.abc", &[("X-Test", "v".into())]).unwrap();
        let m = CoreMetadata::parse(&out).unwrap();
        assert_eq!(m.version().unwrap(), "10.0.0+local.abc");
        assert_eq!(m.get("X-Test"), Some("v"));
        assert_eq!(m.body, "Body text\n");
        assert_eq!(
            out.replace("10.0.0+local.abc", "10.0.0")
                .replace("X-Test: v\n", ""),
            METADATA
        );
        assert!(rewrite_metadata("Name: x\n", "1", &[]).is_err());
        assert!(rewrite_metadata(METADATA, "1", &[("X", "a\nb".into())]).is_err());
    }

    proptest::proptest! {
        #[test]
        fn any_text_parses_or_fails_without_panicking(text in "[ -~\n\t]{0,200}") {
            let _ = CoreMetadata::parse(&text);
            let _ = WheelFile::parse(&text);
            let _ = rewrite_metadata(&text, "1+local.x", &[]);
        }

        #[test]
        fn rewrite_keeps_every_other_field(version in "[0-9]{1,3}(\\.[0-9]{1,3}){0,2}", summary in "[a-zA-Z ]{0,30}") {
            let text = format!("Metadata-Version: 2.1\nName: x\nVersion: 0\nSummary: {summary}\n\nbody\n");
            let m = CoreMetadata::parse(&rewrite_metadata(&text, &version, &[]).unwrap()).unwrap();
            proptest::prop_assert_eq!(m.version().unwrap(), version.as_str());
            proptest::prop_assert_eq!(m.get("Summary").unwrap(), summary.trim());
            proptest::prop_assert_eq!(m.body.as_str(), "body\n");
        }
    }

    #[test]
    fn names_and_file_names() {
        assert_eq!(normalize_name("Example_SDK..core"), "example-sdk-core");
        assert_eq!(escape_name("example-sdk-core"), "example_sdk_core");
        let tags = vec!["py3-none-linux_x86_64".to_string()];
        assert_eq!(
            wheel_file_name("example-sdk-core", "10.0.0+local.abc", &tags).unwrap(),
            "example_sdk_core-10.0.0+local.abc-py3-none-linux_x86_64.whl"
        );
        let two = vec!["py2-none-any".to_string(), "py3-none-any".to_string()];
        assert_eq!(
            wheel_file_name("a", "1", &two).unwrap(),
            "a-1-py2.py3-none-any.whl"
        );
        let w = WheelFile::parse("Wheel-Version: 1.0\nGenerator: x\nRoot-Is-Purelib: false\nTag: py3-none-linux_x86_64\n").unwrap();
        assert_eq!(w.tags, tags);
        assert!(!w.root_is_purelib);
        assert!(WheelFile::parse("Wheel-Version: 2.0\nTag: a-b-c\n").is_err());
    }
}
