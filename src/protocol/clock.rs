//! The polis timezone and the stamps written in it (SPEC §2).
//!
//! Every rule that says "now" means now in the polis timezone, so the pure core takes a
//! [`PolisTime`] rather than asking the system clock.

use chrono::{DateTime, FixedOffset, NaiveDateTime, Utc};

/// The chronicle and inbox stamp layout, `YYYY-MM-DD HH:MM`.
pub const STAMP_FORMAT: &str = "%Y-%m-%d %H:%M";

/// The fields of a stamp in the exact shape `YYYY-MM-DD HH:MM` (digits and separators only;
/// not yet checked to be a real date).
pub(crate) fn stamp_fields(text: &str) -> Option<[u32; 5]> {
    let b = text.as_bytes();
    if b.len() != 16 || b[4] != b'-' || b[7] != b'-' || b[10] != b' ' || b[13] != b':' {
        return None;
    }
    let number = |from: usize, to: usize| {
        b[from..to].iter().try_fold(0u32, |n, &c| {
            c.is_ascii_digit().then(|| n * 10 + u32::from(c - b'0'))
        })
    };
    Some([
        number(0, 4)?,
        number(5, 7)?,
        number(8, 10)?,
        number(11, 13)?,
        number(14, 16)?,
    ])
}

/// A stamp as [`STAMP_FORMAT`] reads it. The exact shape, which nearly every line has, is read
/// by hand (chrono's format interpreter was most of the time of reading a large chronicle);
/// any other text goes to chrono, whose leniency (one-digit fields, spaces) stays as it was.
pub fn parse_stamp(text: &str) -> Option<NaiveDateTime> {
    match stamp_fields(text) {
        Some(fields) => stamp_of_fields(fields),
        None => NaiveDateTime::parse_from_str(text, STAMP_FORMAT).ok(),
    }
}

/// The time [`stamp_fields`] gave the fields of; `None` when they are no real date and time.
pub(crate) fn stamp_of_fields([year, month, day, hour, minute]: [u32; 5]) -> Option<NaiveDateTime> {
    chrono::NaiveDate::from_ymd_opt(year as i32, month, day)?.and_hms_opt(hour, minute, 0)
}

/// The polis timezone: UTC or a fixed offset from `polis.yml` `timezone:`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PolisZone(pub FixedOffset);

impl Default for PolisZone {
    fn default() -> Self {
        PolisZone(FixedOffset::east_opt(0).expect("zero offset is valid"))
    }
}

impl PolisZone {
    /// Parses `UTC`, `Z`, `+02:00`, `-0530`, `UTC+2`; `None` for anything else.
    pub fn parse(text: &str) -> Option<PolisZone> {
        let t = text.trim();
        let rest = t
            .strip_prefix("UTC")
            .or_else(|| t.strip_prefix("GMT"))
            .unwrap_or(t);
        if rest.is_empty() || rest == "Z" {
            return Some(PolisZone::default());
        }
        let (sign, digits) = match rest.as_bytes()[0] {
            b'+' => (1, &rest[1..]),
            b'-' => (-1, &rest[1..]),
            _ => return None,
        };
        let (h, m) = match digits.split_once(':') {
            Some((h, m)) => (h, m),
            None if digits.len() == 4 => digits.split_at(2),
            None => (digits, "0"),
        };
        let h: i32 = h.parse().ok()?;
        let m: i32 = m.parse().ok()?;
        if h > 14 || m > 59 {
            return None;
        }
        FixedOffset::east_opt(sign * (h * 3600 + m * 60)).map(PolisZone)
    }

    /// Wall-clock time in this zone for an instant.
    pub fn local(&self, instant: DateTime<Utc>) -> NaiveDateTime {
        instant.with_timezone(&self.0).naive_local()
    }
}

/// "Now" for the pure core: a wall-clock time in the polis timezone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PolisTime {
    pub zone: PolisZone,
    pub now: NaiveDateTime,
}

impl PolisTime {
    pub fn at(zone: PolisZone, instant: DateTime<Utc>) -> Self {
        PolisTime {
            zone,
            now: zone.local(instant),
        }
    }

    pub fn system(zone: PolisZone) -> Self {
        Self::at(zone, Utc::now())
    }

    /// A wall-clock time in `zone` from a chronicle stamp (`YYYY-MM-DD HH:MM`); `None` when the
    /// text is not one. Handy wherever a rule is evaluated "as of" a given minute.
    pub fn at_stamp(zone: PolisZone, stamp: &str) -> Option<PolisTime> {
        parse_stamp(stamp).map(|now| PolisTime { zone, now })
    }

    /// `YYYY-MM-DD HH:MM`, the chronicle and inbox stamp.
    pub fn minute_stamp(&self) -> String {
        self.now.format(STAMP_FORMAT).to_string()
    }

    /// `YYYY-MM-DD HH:MM:SS`, the frontmatter stamp.
    pub fn second_stamp(&self) -> String {
        self.now.format("%Y-%m-%d %H:%M:%S").to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The hand-read exact shape gives what chrono gives for the same text, real date or
        /// not (month 13, February 30, hour 24, minute 60, year 0000).
        #[test]
        fn a_stamp_reads_as_chrono_reads_it(
            stamp in "[0-9]{4}-[0-1][0-9]-[0-3][0-9] [0-2][0-9]:[0-6][0-9]|[0-9 :-]{10,18}",
        ) {
            prop_assert_eq!(
                parse_stamp(&stamp),
                NaiveDateTime::parse_from_str(&stamp, STAMP_FORMAT).ok(),
                "{:?}", stamp
            );
        }
    }

    #[test]
    fn a_stamp_outside_the_exact_shape_is_still_read_by_chrono() {
        let read = parse_stamp("2026-3-9 7:05").expect("chrono accepts one-digit fields");
        assert_eq!(
            read,
            NaiveDateTime::parse_from_str("2026-03-09 07:05", STAMP_FORMAT).unwrap()
        );
        assert_eq!(parse_stamp("2026-02-30 10:00"), None);
        assert_eq!(parse_stamp("2026-02-28 24:00"), None);
        assert_eq!(stamp_fields("2026-3-9 7:05"), None);
    }

    #[test]
    fn zones() {
        assert_eq!(PolisZone::parse("UTC"), Some(PolisZone::default()));
        assert_eq!(
            PolisZone::parse("+02:00").unwrap().0.local_minus_utc(),
            7200
        );
        assert_eq!(
            PolisZone::parse("-0530").unwrap().0.local_minus_utc(),
            -(5 * 3600 + 30 * 60)
        );
        assert_eq!(PolisZone::parse("Europe/Paris"), None);
    }
}
