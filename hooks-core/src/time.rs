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

impl fmt::Display for Rfc3339 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
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
        let rem = secs.rem_euclid(86_400);
        let (y, m, d) = civil_from_days(days);
        write!(
            f,
            "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}",
            rem / 3600,
            rem % 3600 / 60,
            rem % 60
        )?;
        if nanos != 0 {
            let mut frac = format!("{nanos:09}");
            while frac.ends_with('0') {
                frac.pop();
            }
            write!(f, ".{frac}")?;
        }
        f.write_str("Z")
    }
}

impl fmt::Debug for Rfc3339 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl serde::Serialize for Rfc3339 {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
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
    fn formats_instants_before_the_epoch() {
        let t = UNIX_EPOCH - Duration::new(1, 500_000_000);
        assert_eq!(Rfc3339(t).to_string(), "1969-12-31T23:59:58.5Z");
    }
}
