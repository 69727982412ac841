//! Dates in the two forms Debian files carry, from seconds since the epoch (a commit time or
//! `SOURCE_DATE_EPOCH`, so the output is reproducible). Calendar arithmetic is the `time`
//! crate's; only the layouts are ours.

use time::format_description::well_known::Rfc2822;
use time::macros::format_description;
use time::OffsetDateTime;

pub use super::error::DateError;

fn utc(secs: i64) -> Result<OffsetDateTime, DateError> {
    OffsetDateTime::from_unix_timestamp(secs).map_err(|_| DateError::OutOfRange(secs))
}

/// RFC 2822 with a numeric zone, as `debian/changelog` trailers carry it (`date -R`):
/// `Thu, 15 Jan 2026 12:00:00 +0000`.
pub fn changelog_date(secs: i64) -> Result<String, DateError> {
    utc(secs)?
        .format(&Rfc2822)
        .map_err(|_| DateError::OutOfRange(secs))
}

/// The `Date:` of a repository's Release file, as the archive writes it:
/// `Thu, 03 Dec 2026 02:08:07 UTC`.
pub fn release_date(secs: i64) -> Result<String, DateError> {
    let layout = format_description!(
        "[weekday repr:short], [day] [month repr:short] [year] [hour]:[minute]:[second] UTC"
    );
    utc(secs)?
        .format(&layout)
        .map_err(|_| DateError::OutOfRange(secs))
}

/// The calendar year (UTC) of a timestamp, for copyright lines.
pub fn year(secs: i64) -> Result<i32, DateError> {
    Ok(utc(secs)?.year())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Expected strings are `date -u -R -d @SECS` (changelog) and the archive's layout.
    #[test]
    fn dates_match_date_r_and_the_archive() {
        type Layout = fn(i64) -> Result<String, DateError>;
        const CASES: &[(Layout, i64, &str)] = &[
            (changelog_date, 0, "Thu, 01 Jan 1970 00:00:00 +0000"),
            (
                changelog_date,
                951_782_400,
                "Tue, 29 Feb 2000 00:00:00 +0000",
            ),
            (release_date, 1_764_727_687, "Wed, 03 Dec 2025 02:08:07 UTC"),
            (release_date, 4_102_444_799, "Thu, 31 Dec 2099 23:59:59 UTC"),
        ];
        for (layout, secs, expected) in CASES {
            assert_eq!(layout(*secs).unwrap(), *expected, "{secs}");
        }
        assert_eq!(year(1_764_720_000).unwrap(), 2025);
    }

    #[test]
    fn agrees_with_date_on_many_timestamps() {
        // Spread over 1970..2100, leap days and year ends included.
        let mut stamps: Vec<i64> = (0..40).map(|i| i * 103_680_013).collect();
        stamps.extend([951_868_799, 1_078_012_800, 4_107_542_400 - 1]);
        let args: Vec<String> = stamps.iter().map(|s| format!("@{s}")).collect();
        for (secs, arg) in stamps.iter().zip(&args) {
            let out = std::process::Command::new("date")
                .args(["-u", "-R", "-d", arg])
                .env("LC_ALL", "C")
                .output()
                .expect("date runs");
            let expected = String::from_utf8(out.stdout).unwrap();
            assert_eq!(changelog_date(*secs).unwrap(), expected.trim(), "{secs}");
        }
    }

    #[test]
    fn out_of_range_is_an_error_not_a_panic() {
        assert!(changelog_date(i64::MAX).is_err());
        assert!(release_date(i64::MIN).is_err());
    }
}
