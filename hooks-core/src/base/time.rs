//! RFC 3339 timestamps for the audit log, without a calendar crate.
//!
//! The runtime writes UTC instants only, so all it needs is the days-to-civil-date conversion
//! and back (H. Hinnant, "chrono-Compatible Low-Level Date Algorithms"); reading an audit line
//! back ([`Rfc3339::parse`]) accepts the form it writes. Hooks that need weekdays or time zones
//! use a calendar crate (jiff) themselves.

use std::fmt;
use std::time::{SystemTime, UNIX_EPOCH};

/// Displays an instant as RFC 3339 in UTC: `2026-11-24T10:15:00Z`, with a fraction of a second
/// only when it is not zero, trailing zeros dropped (`…:00.25Z`). Instants before 1970 are
/// written exactly too (`1969-12-31T23:59:58.5Z`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Rfc3339(pub SystemTime);

impl Rfc3339 {
    /// Writes the timestamp into a stack buffer: no allocation, no `fmt` machinery (the audit
    /// log writes one per line).
    fn text(self) -> Text {
        let (secs, nanos) = self.seconds();
        let mut t = Text::second(secs);
        t.fraction_and_zone(nanos);
        t
    }

    /// Whole seconds since the epoch (negative before it) and the nanoseconds after them.
    fn seconds(self) -> (i64, u32) {
        match self.0.duration_since(UNIX_EPOCH) {
            Ok(d) => (d.as_secs() as i64, d.subsec_nanos()),
            Err(e) => {
                let d = e.duration();
                let mut secs = -(d.as_secs() as i64);
                let mut nanos = d.subsec_nanos();
                if nanos > 0 {
                    secs -= 1;
                    nanos = 1_000_000_000 - nanos;
                }
                (secs, nanos)
            }
        }
    }

    /// Appends the same text as [`Display`](fmt::Display) to `out`, reusing `cache`'s text of
    /// the second when the instant falls in the same second as the last one written with it
    /// (the audit line's `ts`: the calendar arithmetic runs once a second, not once a line).
    pub(crate) fn write_cached(self, cache: &mut SecondText, out: &mut Vec<u8>) {
        let (secs, nanos) = self.seconds();
        if cache.secs != Some(secs) {
            cache.text = Text::second(secs);
            cache.secs = Some(secs);
        }
        let mut t = cache.text;
        t.fraction_and_zone(nanos);
        out.extend_from_slice(t.as_bytes());
    }
}

/// The text of one second (`2026-11-24T10:15:00`), kept by [`Rfc3339::write_cached`] for the
/// next instant of the same second.
#[derive(Clone, Copy)]
pub(crate) struct SecondText {
    secs: Option<i64>,
    text: Text,
}

impl SecondText {
    /// Empty: the first instant computes its second.
    pub(crate) const fn new() -> SecondText {
        SecondText {
            secs: None,
            text: Text {
                bytes: [0; Text::CAP],
                len: 0,
            },
        }
    }
}

impl Rfc3339 {
    /// Reads the form [`Display`](fmt::Display) writes back into an instant: `YYYY-MM-DD`, `T`,
    /// `HH:MM:SS`, an optional fraction of 1 to 9 digits, `Z` (UTC only, as every audit line's
    /// `ts`; a year of more than four digits or with a `-` sign too). `None` for anything else:
    /// another offset, a lowercase `t` or `z`, a day the month does not have, a leap second
    /// (`:60`), an instant `SystemTime` cannot hold.
    ///
    /// ```
    /// use std::time::{Duration, SystemTime};
    /// use toolgate_core::audit::Rfc3339;
    ///
    /// let at = SystemTime::UNIX_EPOCH + Duration::new(1_795_515_300, 250_000_000);
    /// assert_eq!(Rfc3339::parse("2026-11-24T10:15:00.25Z"), Some(at));
    /// assert_eq!(Rfc3339::parse("2026-11-24T10:15:00+01:00"), None);
    /// ```
    pub fn parse(text: &str) -> Option<SystemTime> {
        let b = text.as_bytes();
        let (negative, b) = match b.split_first() {
            Some((b'-', rest)) => (true, rest),
            _ => (false, b),
        };
        // The year: every digit before the first `-` (at least four, the sign included).
        let year_len = b.iter().position(|&c| c == b'-')?;
        if year_len + usize::from(negative) < 4 || year_len > 12 {
            return None;
        }
        let year = number(&b[..year_len])? as i64;
        let year = if negative { -year } else { year };
        let rest = &b[year_len..];
        // `-MM-DDTHH:MM:SS`, then an optional fraction, then `Z`.
        if rest.len() < 16
            || rest[0] != b'-'
            || rest[3] != b'-'
            || rest[6] != b'T'
            || rest[9] != b':'
            || rest[12] != b':'
        {
            return None;
        }
        let month = number(&rest[1..3])? as u32;
        let day = number(&rest[4..6])? as u32;
        let (hour, minute, second) = (
            number(&rest[7..9])?,
            number(&rest[10..12])?,
            number(&rest[13..15])?,
        );
        let mut nanos = 0u32;
        let tail = &rest[15..];
        let zone = match tail.split_first()? {
            (b'.', frac) => {
                let digits = frac.iter().take_while(|c| c.is_ascii_digit()).count();
                if digits == 0 || digits > 9 {
                    return None;
                }
                nanos = number(&frac[..digits])? as u32 * 10u32.pow(9 - digits as u32);
                &frac[digits..]
            }
            _ => tail,
        };
        if zone != b"Z"
            || !(1..=12).contains(&month)
            || day == 0
            || day > days_in_month(year, month)
            || hour > 23
            || minute > 59
            || second > 59
        {
            return None;
        }
        let secs = days_from_civil(year, month, day)
            .checked_mul(86_400)?
            .checked_add((hour * 3600 + minute * 60 + second) as i64)?;
        if secs >= 0 {
            UNIX_EPOCH.checked_add(std::time::Duration::new(secs as u64, nanos))
        } else {
            UNIX_EPOCH
                .checked_sub(std::time::Duration::from_secs(secs.unsigned_abs()))?
                .checked_add(std::time::Duration::new(0, nanos))
        }
    }
}

/// The value of a run of ASCII digits (`None` for anything else or an empty run).
fn number(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    digits.iter().try_fold(0u64, |n, &d| {
        n.checked_mul(10)?.checked_add(u64::from(d - b'0'))
    })
}

/// An RFC 3339 text on the stack. The longest is 44 bytes: a sign and 12 year digits (an `i64`
/// of seconds spans about ±292 billion years), `-MM-DDTHH:MM:SS`, `.` and 9 digits, `Z`.
#[derive(Clone, Copy)]
struct Text {
    bytes: [u8; Text::CAP],
    len: usize,
}

impl Text {
    const CAP: usize = 48;

    /// `YYYY-MM-DDTHH:MM:SS` of `secs` since the epoch (UTC).
    fn second(secs: i64) -> Text {
        let days = secs.div_euclid(86_400);
        let rem = secs.rem_euclid(86_400) as u64;
        let (y, m, d) = civil_from_days(days);
        let mut t = Text {
            bytes: [0; Text::CAP],
            len: 0,
        };
        // As `{y:04}`: the sign counts toward the width.
        if y < 0 {
            t.push(b'-');
            t.digits(y.unsigned_abs(), 3);
        } else {
            t.digits(y as u64, 4);
        }
        t.push(b'-');
        t.digits(u64::from(m), 2);
        t.push(b'-');
        t.digits(u64::from(d), 2);
        t.push(b'T');
        t.digits(rem / 3600, 2);
        t.push(b':');
        t.digits(rem % 3600 / 60, 2);
        t.push(b':');
        t.digits(rem % 60, 2);
        t
    }

    /// `.` and the fraction without trailing zeros (nothing when `nanos` is 0), then `Z`.
    fn fraction_and_zone(&mut self, nanos: u32) {
        if nanos != 0 {
            let mut frac = nanos;
            let mut width = 9;
            while frac.is_multiple_of(10) {
                frac /= 10;
                width -= 1;
            }
            self.push(b'.');
            self.digits(u64::from(frac), width);
        }
        self.push(b'Z');
    }

    fn push(&mut self, b: u8) {
        if let Some(slot) = self.bytes.get_mut(self.len) {
            *slot = b;
            self.len += 1;
        }
    }

    /// `v` in decimal, zero-padded to `width` digits.
    fn digits(&mut self, mut v: u64, width: usize) {
        let mut tmp = [b'0'; 20];
        let mut n = 0;
        while v > 0 || n < width.max(1) {
            tmp[19 - n] = b'0' + (v % 10) as u8;
            v /= 10;
            n += 1;
        }
        for &b in &tmp[20 - n..] {
            self.push(b);
        }
    }

    fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }

    fn as_str(&self) -> &str {
        // Only ASCII digits and `-T:.Z` are ever pushed.
        std::str::from_utf8(&self.bytes[..self.len]).unwrap_or_default()
    }
}

impl fmt::Display for Rfc3339 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.text().as_str())
    }
}

impl fmt::Debug for Rfc3339 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl serde::Serialize for Rfc3339 {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.text().as_str())
    }
}

impl<'de> serde::Deserialize<'de> for Rfc3339 {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = Rfc3339;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an RFC 3339 UTC timestamp such as \"2026-11-24T10:15:00Z\"")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Rfc3339, E> {
                Rfc3339::parse(v)
                    .map(Rfc3339)
                    .ok_or_else(|| E::invalid_value(serde::de::Unexpected::Str(v), &self))
            }
        }
        d.deserialize_str(Visitor)
    }
}

/// `#[serde(with = "crate::base::time::as_rfc3339")]` for a `SystemTime` field written as RFC 3339.
pub(crate) mod as_rfc3339 {
    use std::time::SystemTime;

    use serde::{Deserialize, Serialize};

    use super::Rfc3339;

    pub(crate) fn serialize<S: serde::Serializer>(t: &SystemTime, s: S) -> Result<S::Ok, S::Error> {
        Rfc3339(*t).serialize(s)
    }

    pub(crate) fn deserialize<'de, D: serde::Deserializer<'de>>(
        d: D,
    ) -> Result<SystemTime, D::Error> {
        Rfc3339::deserialize(d).map(|t| t.0)
    }
}

fn is_leap(y: i64) -> bool {
    y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)
}

fn days_in_month(y: i64, m: u32) -> u32 {
    match m {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// (year, month, day) in the proleptic Gregorian calendar to days since 1970-01-01.
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = i64::from((m + 9) % 12);
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Days since 1970-01-01 to (year, month, day) in the proleptic Gregorian calendar.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn at(secs: u64, nanos: u32) -> String {
        Rfc3339(UNIX_EPOCH + Duration::new(secs, nanos)).to_string()
    }

    #[test]
    fn formats_utc_instants() {
        assert_eq!(at(0, 0), "1970-01-01T00:00:00Z");
        // 2026-11-24T10:15:00Z, the clock of the first support transcript.
        assert_eq!(at(1_763_979_300, 0), "2025-11-24T10:15:00Z");
        assert_eq!(at(1_795_515_300, 0), "2026-11-24T10:15:00Z");
        assert_eq!(at(951_782_400, 0), "2000-02-29T00:00:00Z");
        assert_eq!(at(1_795_515_300, 250_000_000), "2026-11-24T10:15:00.25Z");
        assert_eq!(at(1_795_515_300, 1_000), "2026-11-24T10:15:00.000001Z");
    }

    #[test]
    fn formats_like_the_fmt_version_at_the_edges() {
        // Year 10000 and later: more than four digits.
        assert_eq!(at(253_402_300_800, 0), "10000-01-01T00:00:00Z");
        assert_eq!(
            at(253_402_300_799, 999_999_999),
            "9999-12-31T23:59:59.999999999Z"
        );
        assert_eq!(at(59, 100), "1970-01-01T00:00:59.0000001Z");
        // Year -1 (2 BC): the sign counts toward the width of four, as `{:04}` writes it.
        let t = UNIX_EPOCH - Duration::from_secs(62_198_755_200);
        assert_eq!(Rfc3339(t).to_string(), "-001-01-01T00:00:00Z");
        assert_eq!(
            serde_json::to_string(&Rfc3339(UNIX_EPOCH + Duration::new(1, 5))).unwrap(),
            "\"1970-01-01T00:00:01.000000005Z\""
        );
    }

    #[test]
    fn the_cached_second_writes_what_display_writes() {
        // Same second with other fractions, the next second, a jump back, before the epoch.
        let instants = [
            UNIX_EPOCH + Duration::new(1_795_515_300, 250_000_000),
            UNIX_EPOCH + Duration::new(1_795_515_300, 0),
            UNIX_EPOCH + Duration::new(1_795_515_300, 999_999_999),
            UNIX_EPOCH + Duration::new(1_795_515_301, 1),
            UNIX_EPOCH + Duration::new(1_795_515_300, 5),
            UNIX_EPOCH + Duration::new(951_782_400, 0),
            UNIX_EPOCH - Duration::new(1, 500_000_000),
            UNIX_EPOCH - Duration::new(1, 0),
            UNIX_EPOCH - Duration::new(0, 1),
            UNIX_EPOCH + Duration::new(253_402_300_800, 0),
        ];
        let mut cache = SecondText::new();
        let mut out = Vec::new();
        let mut expected = String::new();
        for at in instants.into_iter().chain(instants.into_iter().rev()) {
            Rfc3339(at).write_cached(&mut cache, &mut out);
            out.push(b' ');
            expected.push_str(&Rfc3339(at).to_string());
            expected.push(' ');
        }
        assert_eq!(String::from_utf8(out).unwrap(), expected);
        assert!(expected.starts_with(
            "2026-11-24T10:15:00.25Z 2026-11-24T10:15:00Z 2026-11-24T10:15:00.999999999Z \
             2026-11-24T10:15:01.000000001Z 2026-11-24T10:15:00.000000005Z \
             2000-02-29T00:00:00Z 1969-12-31T23:59:58.5Z 1969-12-31T23:59:59Z \
             1969-12-31T23:59:59.999999999Z 10000-01-01T00:00:00Z "
        ));
    }

    #[test]
    fn parses_what_it_writes() {
        let instants = [
            (0, 0),
            (1_795_515_300, 0),
            (1_795_515_300, 250_000_000),
            (1_795_515_300, 1_000),
            (951_782_400, 0),
            (253_402_300_800, 0),
            (253_402_300_799, 999_999_999),
            (59, 100),
        ];
        for (secs, nanos) in instants {
            let t = UNIX_EPOCH + Duration::new(secs, nanos);
            let text = Rfc3339(t).to_string();
            assert_eq!(Rfc3339::parse(&text), Some(t), "{text}");
        }
        for t in [
            UNIX_EPOCH - Duration::new(1, 500_000_000),
            UNIX_EPOCH - Duration::from_secs(62_198_755_200),
        ] {
            let text = Rfc3339(t).to_string();
            assert_eq!(Rfc3339::parse(&text), Some(t), "{text}");
        }
        let back: Rfc3339 = serde_json::from_str("\"2026-11-24T10:15:00Z\"").unwrap();
        assert_eq!(back.0, UNIX_EPOCH + Duration::from_secs(1_795_515_300));
    }

    #[test]
    fn refuses_every_other_form() {
        for text in [
            "",
            "2026-11-24",
            "2026-11-24T10:15:00",
            "2026-11-24T10:15:00+00:00",
            "2026-11-24t10:15:00Z",
            "2026-11-24T10:15:00z",
            "2026-11-24 10:15:00Z",
            "2026-02-29T10:15:00Z",
            "2026-13-01T10:15:00Z",
            "2026-00-01T10:15:00Z",
            "2026-11-00T10:15:00Z",
            "2026-11-24T24:00:00Z",
            "2026-11-24T10:60:00Z",
            "2026-11-24T10:15:60Z",
            "2026-11-24T10:15:00.Z",
            "2026-11-24T10:15:00.1234567890Z",
            "226-11-24T10:15:00Z",
            "+2026-11-24T10:15:00Z",
            "2026-1-24T10:15:00Z",
            "2026-11-24T10:15:00ZZ",
            "2026-11-24T1a:15:00Z",
        ] {
            assert_eq!(Rfc3339::parse(text), None, "{text:?}");
        }
        assert_eq!(
            serde_json::from_str::<Rfc3339>("\"yesterday\"")
                .unwrap_err()
                .to_string(),
            "invalid value: string \"yesterday\", expected an RFC 3339 UTC timestamp such as \
             \"2026-11-24T10:15:00Z\" at line 1 column 11"
        );
    }

    #[test]
    fn formats_instants_before_the_epoch() {
        let t = UNIX_EPOCH - Duration::new(1, 500_000_000);
        assert_eq!(Rfc3339(t).to_string(), "1969-12-31T23:59:58.5Z");
    }
}
