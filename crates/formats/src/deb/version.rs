//! Debian version numbers: `[epoch:]upstream[-revision]`, ordered exactly as
//! `dpkg --compare-versions` orders them (including `~` sorting before everything).
//!
//! Parsing follows dpkg's `parseversion()` (lib/dpkg/parsehelp.c): surrounding blanks are
//! trimmed, the epoch is the number before the first `:` (read like strtol(), so `+4:` is epoch
//! 4), the revision is everything after the last `-`, the upstream part must start with a digit
//! and may only contain
//! alphanumerics and `.+~-:` (`-` only when a revision follows, `:` only when an epoch
//! precedes), the revision only alphanumerics and `.+~`. dpkg merely *warns* about the last two
//! rules when reading its database; we refuse, as `dpkg-deb --build` does.
//!
//! Ordering follows dpkg's `verrevcmp()`. Digit runs are compared as numbers without
//! converting them (leading zeros skipped, then length, then digits), so arbitrarily long runs
//! cannot overflow.

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

pub use super::error::VersionError;

#[derive(Debug, Clone)]
pub struct Version {
    pub epoch: u32,
    pub upstream: String,
    /// Empty when the version has no `-revision` part.
    pub revision: String,
}

/// dpkg accepts epochs up to INT_MAX.
const MAX_EPOCH: u32 = i32::MAX as u32;

impl FromStr for Version {
    type Err = VersionError;
    /// Validates as dpkg does for a binary package's Version field (parseversion()).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let fail = |reason: &str| VersionError {
            input: s.to_string(),
            reason: reason.to_string(),
        };
        let is_blank = |c: char| c == ' ' || c == '\t';
        let trimmed = s.trim_matches(is_blank);
        if trimmed.is_empty() {
            return Err(fail("version string is empty"));
        }
        if trimmed.contains(|c: char| c.is_ascii_whitespace()) {
            return Err(fail("version string has embedded spaces"));
        }
        let (epoch, rest) = match trimmed.split_once(':') {
            Some((epoch_text, rest)) => {
                // strtol(): an optional sign, then digits; no digits at all reads as "empty".
                let (negative, unsigned) = match epoch_text.as_bytes().first() {
                    Some(b'-') => (true, &epoch_text[1..]),
                    Some(b'+') => (false, &epoch_text[1..]),
                    _ => (false, epoch_text),
                };
                let digits = unsigned.bytes().take_while(u8::is_ascii_digit).count();
                if digits == 0 {
                    return Err(fail("epoch in version is empty"));
                }
                if digits != unsigned.len() {
                    return Err(fail("epoch in version is not number"));
                }
                let magnitude = unsigned.trim_start_matches('0');
                if negative && !magnitude.is_empty() {
                    return Err(fail("epoch in version is negative"));
                }
                let epoch = magnitude
                    .parse::<u64>()
                    .map_or(magnitude.is_empty().then_some(0), Some)
                    .filter(|e| *e <= u64::from(MAX_EPOCH))
                    .ok_or_else(|| fail("epoch in version is too big"))?;
                if rest.is_empty() {
                    return Err(fail("nothing after colon in version number"));
                }
                (epoch as u32, rest)
            }
            None => (0, trimmed),
        };
        let (upstream, revision) = match rest.rsplit_once('-') {
            Some((_, "")) => return Err(fail("revision number is empty")),
            Some((upstream, revision)) => (upstream, revision),
            None => (rest, ""),
        };
        let mut up = upstream.bytes();
        match up.next() {
            None => return Err(fail("version number is empty")),
            Some(b) if !b.is_ascii_digit() => {
                return Err(fail("version number does not start with digit"))
            }
            Some(_) => {}
        }
        if !up.all(|b| b.is_ascii_alphanumeric() || b".-+~:".contains(&b)) {
            return Err(fail("invalid character in version number"));
        }
        if !revision
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b".+~".contains(&b))
        {
            return Err(fail("invalid character in revision number"));
        }
        Ok(Version {
            epoch,
            upstream: upstream.to_string(),
            revision: revision.to_string(),
        })
    }
}

impl Version {
    /// `upstream[-revision]`: the version as it appears in a .deb's file name.
    pub fn without_epoch(&self) -> String {
        Version {
            epoch: 0,
            ..self.clone()
        }
        .to_string()
    }
}

impl fmt::Display for Version {
    /// `[epoch:]upstream[-revision]`; a zero epoch is omitted (as dpkg prints it), so a parsed
    /// canonical string (no `0:` prefix, no surrounding blanks) round-trips exactly.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.epoch != 0 {
            write!(f, "{}:", self.epoch)?;
        }
        f.write_str(&self.upstream)?;
        if !self.revision.is_empty() {
            write!(f, "-{}", self.revision)?;
        }
        Ok(())
    }
}

/// dpkg's `order()`: `~` below the end of the string, letters by ASCII, everything else after
/// all letters.
fn order(c: u8) -> i32 {
    match c {
        b'~' => -1,
        0 => 0,
        c if c.is_ascii_digit() => 0,
        c if c.is_ascii_alphabetic() => i32::from(c),
        c => i32::from(c) + 256,
    }
}

/// dpkg's `verrevcmp()` over one part (upstream or revision).
pub fn verrevcmp(a: &str, b: &str) -> Ordering {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let at = |s: &[u8], i: usize| s.get(i).copied().unwrap_or(0);
    let (mut i, mut j) = (0usize, 0usize);
    while i < a.len() || j < b.len() {
        // Non-digit prefix, character by character.
        while (i < a.len() && !a[i].is_ascii_digit()) || (j < b.len() && !b[j].is_ascii_digit()) {
            let (ac, bc) = (order(at(a, i)), order(at(b, j)));
            if ac != bc {
                return ac.cmp(&bc);
            }
            i += 1;
            j += 1;
        }
        // Digit run, compared as a number.
        while at(a, i) == b'0' {
            i += 1;
        }
        while at(b, j) == b'0' {
            j += 1;
        }
        let a_end = i + a[i.min(a.len())..]
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count();
        let b_end = j + b[j.min(b.len())..]
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count();
        let (ad, bd) = (&a[i.min(a.len())..a_end], &b[j.min(b.len())..b_end]);
        let by_number = ad.len().cmp(&bd.len()).then_with(|| ad.cmp(bd));
        if by_number != Ordering::Equal {
            return by_number;
        }
        i = a_end;
        j = b_end;
    }
    Ordering::Equal
}

impl Ord for Version {
    fn cmp(&self, other: &Self) -> Ordering {
        self.epoch
            .cmp(&other.epoch)
            .then_with(|| verrevcmp(&self.upstream, &other.upstream))
            .then_with(|| verrevcmp(&self.revision, &other.revision))
    }
}
impl PartialOrd for Version {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl PartialEq for Version {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Version {}

/// Compare two version strings; errors if either is invalid.
pub fn compare(a: &str, b: &str) -> Result<Ordering, VersionError> {
    Ok(a.parse::<Version>()?.cmp(&b.parse::<Version>()?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn v(s: &str) -> Version {
        s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn parses_parts() {
        let x = v("2:1.18.0.70204-93~24.04");
        assert_eq!(x.epoch, 2);
        assert_eq!(x.upstream, "1.18.0.70204");
        assert_eq!(x.revision, "93~24.04");
        let y = v("1.0-2-3");
        assert_eq!((y.upstream.as_str(), y.revision.as_str()), ("1.0-2", "3"));
        let z = v("1:2:3");
        assert_eq!((z.epoch, z.upstream.as_str()), (1, "2:3"));
        assert_eq!(v("  1.0\t").upstream, "1.0");
    }

    #[test]
    fn refuses_what_dpkg_refuses() {
        for (bad, why) in [
            ("", "empty"),
            ("   ", "empty"),
            ("1 0", "embedded spaces"),
            (":1.0", "epoch in version is empty"),
            ("a:1.0", "epoch in version is empty"),
            ("1a:1.0", "not number"),
            ("-1:1.0", "negative"),
            ("2147483648:1", "too big"),
            ("99999999999999999999:1", "too big"),
            ("1:", "nothing after colon"),
            ("1.0-", "revision number is empty"),
            ("-1", "version number is empty"),
            ("a1.0", "does not start with digit"),
            ("1.0_2", "invalid character in version"),
            ("1:2.0-a:b", "invalid character in revision"),
            ("1.0-a_b", "invalid character in revision"),
            ("1.0\n", "embedded spaces"),
            ("1.0é", "invalid character"),
        ] {
            let err = bad.parse::<Version>().expect_err(bad);
            assert!(err.reason.contains(why), "{bad:?}: {err}");
        }
        assert!("2147483647:1".parse::<Version>().is_ok());
        // strtol() accepts a sign: dpkg reads "+4:1" as epoch 4 and "-0:1" as epoch 0.
        assert_eq!(v("+4:1").epoch, 4);
        assert_eq!(v("-0:1").epoch, 0);
    }

    #[test]
    fn display_round_trips() {
        for s in [
            "1.0",
            "1:1.0-1",
            "7.2.53211.70204-93~24.04",
            "1.0+pin1700000000.gabc1234",
            "0.1~rc1",
        ] {
            assert_eq!(v(s).to_string(), s);
        }
        assert_eq!(v("0:1.0").to_string(), "1.0");
    }

    #[test]
    fn orders_like_dpkg() {
        use Ordering::*;
        for (a, b, want) in [
            ("1.0", "1.0", Equal),
            ("1.0", "1.00", Equal),
            ("1.0-0", "1.0", Equal),
            ("0:1.0", "1.0", Equal),
            ("1.0~rc1", "1.0", Less),
            ("1.0~~", "1.0~", Less),
            ("1.0~", "1.0", Less),
            ("1.0", "1.0a", Less),
            ("1.0a", "1.0+", Less),
            ("1.0+", "1.0.", Less),
            ("1.0", "1.0.0", Less),
            ("1:0.1", "2.0", Greater),
            ("1.9", "1.10", Less),
            ("1.0-1", "1.0-1.1", Less),
            ("1.0-9", "1.0-10", Less),
            (
                "99999999999999999999999999",
                "100000000000000000000000000",
                Less,
            ),
            ("0001", "1", Equal),
            ("1.18.0.70204-93~24.04", "1.18.0.70204-93", Less),
            (
                "1.18.0.70204-93~24.04+pin1",
                "1.18.0.70204-93~24.04",
                Greater,
            ),
        ] {
            assert_eq!(compare(a, b).unwrap(), want, "{a} vs {b}");
            assert_eq!(compare(b, a).unwrap(), want.reverse(), "{b} vs {a}");
        }
    }

    fn version_strategy() -> impl Strategy<Value = String> {
        (
            prop::option::of(0u32..=MAX_EPOCH),
            "[0-9][0-9A-Za-z.+~]{0,12}",
            prop::option::of("[0-9A-Za-z.+~]{1,8}"),
        )
            .prop_map(|(epoch, up, rev)| {
                let mut s = String::new();
                if let Some(e) = epoch.filter(|e| *e != 0) {
                    s.push_str(&format!("{e}:"));
                }
                s.push_str(&up);
                if let Some(r) = rev {
                    s.push('-');
                    s.push_str(&r);
                }
                s
            })
    }

    proptest! {
        #[test]
        fn prop_round_trip(s in version_strategy()) {
            let parsed: Version = s.parse().unwrap();
            prop_assert_eq!(parsed.to_string(), s.clone());
            let again: Version = parsed.to_string().parse().unwrap();
            prop_assert_eq!(again.cmp(&parsed), Ordering::Equal);
        }

        #[test]
        fn prop_order_is_antisymmetric_and_total(a in version_strategy(), b in version_strategy()) {
            let (va, vb): (Version, Version) = (a.parse().unwrap(), b.parse().unwrap());
            prop_assert_eq!(va.cmp(&vb), vb.cmp(&va).reverse());
        }

        #[test]
        fn prop_never_panics(s in "\\PC{0,20}") {
            let _ = s.parse::<Version>();
        }
    }
}
