//! Showing untrusted text: a name, a field or a link target read from a package, an image or a
//! root, with every control character escaped so it cannot forge or hide lines on a terminal.

use std::borrow::Cow;
use std::fmt;

/// Text read from a root, an image, a .deb or a repository (a control field, a status field,
/// a tar entry name, a link target), shown in a text report or message: every control
/// character is escaped, so no such text can end a line, forge an `ok` line, move the cursor,
/// erase a `FAIL` line or set the terminal's title.
///
/// Escaped: C0 (`\n` `\r` `\t` and `\xNN` for the others), DEL (`\x7f`), C1 (`\u{9b}`, …)
/// and the Unicode format controls that reorder or hide text (bidi embeddings, overrides and
/// isolates, zero-width characters, line and paragraph separators, BOM: `\u{202e}`, …).
/// Everything else, backslashes included, is shown as it is. JSON output never goes through
/// this: serde escapes what JSON needs, and the values there stay the exact bytes read.
#[derive(Clone, Copy)]
pub struct Untrusted<'a>(pub &'a str);

impl fmt::Display for Untrusted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut rest = self.0;
        while let Some(at) = rest.find(needs_escape) {
            f.write_str(&rest[..at])?;
            let c = rest[at..].chars().next().unwrap_or_default();
            write_escaped(f, c)?;
            rest = &rest[at + c.len_utf8()..];
        }
        // Width and alignment (`{:<16}`) apply to plain text only: padding an escaped value
        // would count the escapes, and a hostile value is not worth aligning.
        if rest.len() == self.0.len() {
            f.pad(rest)
        } else {
            f.write_str(rest)
        }
    }
}

impl fmt::Debug for Untrusted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "\"{self}\"")
    }
}

/// [`Untrusted`] as a value to interpolate: `format!("{}", shown(&entry.version))`.
pub fn shown(text: &str) -> Untrusted<'_> {
    Untrusted(text)
}

/// `text` with control characters escaped as [`Untrusted`] does, borrowed when nothing is.
pub fn escaped(text: &str) -> Cow<'_, str> {
    if text.contains(needs_escape) {
        Cow::Owned(Untrusted(text).to_string())
    } else {
        Cow::Borrowed(text)
    }
}

/// The safety net of a whole rendered text (a report, an error message): control
/// characters escaped as [`Untrusted`] does, except the newlines and tabs that lay the
/// text out. The fields of a report are escaped one by one where it is rendered (that is
/// what stops a newline in a field); this catches an escape sequence in a field that was
/// missed there.
pub fn escaped_keeping_lines(text: &str) -> Cow<'_, str> {
    let bad = |c: char| c != '\n' && c != '\t' && needs_escape(c);
    if !text.contains(bad) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if bad(c) {
            let mut buf = [0; 4];
            out.push_str(&Untrusted(c.encode_utf8(&mut buf)).to_string());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// True for a character a terminal acts on or that hides or reorders text around it.
fn needs_escape(c: char) -> bool {
    c.is_control() // C0, DEL, C1
        || matches!(
            c,
            '\u{061c}' // Arabic letter mark
                | '\u{180e}' // Mongolian vowel separator
                | '\u{200b}'..='\u{200f}' // zero-width space/joiners, LRM, RLM
                | '\u{2028}'..='\u{202e}' // line/paragraph separators, bidi embeddings, overrides
                | '\u{2060}'..='\u{206f}' // word joiner, invisible operators, bidi isolates
                | '\u{feff}' // zero-width no-break space (BOM)
                | '\u{fff9}'..='\u{fffb}' // interlinear annotation
        )
}

fn write_escaped(f: &mut fmt::Formatter<'_>, c: char) -> fmt::Result {
    match c {
        '\n' => f.write_str("\\n"),
        '\r' => f.write_str("\\r"),
        '\t' => f.write_str("\\t"),
        c if (c as u32) < 0x80 => write!(f, "\\x{:02x}", c as u32),
        c => write!(f, "\\u{{{:x}}}", c as u32),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped_and_plain_text_is_kept() {
        assert_eq!(
            shown("libfoo 1.2~rc3 ä/b\\c").to_string(),
            "libfoo 1.2~rc3 ä/b\\c"
        );
        assert_eq!(
            shown("a\nok  marker\x1b]0;title\x07\x1b[2K\r\t\x7f").to_string(),
            "a\\nok  marker\\x1b]0;title\\x07\\x1b[2K\\r\\t\\x7f"
        );
        assert_eq!(
            shown("\u{9b}31m\u{202e}x\u{2066}\u{feff}").to_string(),
            "\\u{9b}31m\\u{202e}x\\u{2066}\\u{feff}"
        );
        assert!(matches!(escaped("plain"), Cow::Borrowed("plain")));
        assert_eq!(escaped("a\x1bb"), "a\\x1bb");
    }

    #[test]
    fn alignment_pads_plain_text_only() {
        assert_eq!(format!("{:<6}|", shown("ab")), "ab    |");
        assert_eq!(format!("{:<6}|", shown("a\nb")), "a\\nb|");
    }

    #[test]
    fn the_safety_net_keeps_the_layout() {
        assert_eq!(
            escaped_keeping_lines("ok  a\tb\nFAIL \x1b[2K\u{202e}x\n"),
            "ok  a\tb\nFAIL \\x1b[2K\\u{202e}x\n"
        );
    }
}
