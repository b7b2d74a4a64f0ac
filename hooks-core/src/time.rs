//! RFC 3339 timestamps for the audit log, without a calendar crate.
//!
//! The runtime writes UTC instants only, so all it needs is the days-to-civil-date conversion
//! (H. Hinnant, "chrono-Compatible Low-Level Date Algorithms"). Hooks that need weekdays or time
//! zones use a calendar crate (jiff) themselves.

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
        let (secs, nanos): (i64, u32) = match self.0.duration_since(UNIX_EPOCH) {
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
        };
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
        if nanos != 0 {
            let mut frac = nanos;
            let mut width = 9;
            while frac % 10 == 0 {
                frac /= 10;
                width -= 1;
            }
            t.push(b'.');
            t.digits(u64::from(frac), width);
        }
        t.push(b'Z');
        t
    }
}

/// An RFC 3339 text on the stack. The longest is 44 bytes: a sign and 12 year digits (an `i64`
/// of seconds spans about ±292 billion years), `-MM-DDTHH:MM:SS`, `.` and 9 digits, `Z`.
struct Text {
    bytes: [u8; Text::CAP],
    len: usize,
}

impl Text {
    const CAP: usize = 48;

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
    fn formats_instants_before_the_epoch() {
        let t = UNIX_EPOCH - Duration::new(1, 500_000_000);
        assert_eq!(Rfc3339(t).to_string(), "1969-12-31T23:59:58.5Z");
    }
}
