//! The polis timezone and the stamps written in it (SPEC §2).
//!
//! Every rule that says "now" means now in the polis timezone, so the pure core takes a
//! [`PolisTime`] rather than asking the system clock.

use chrono::{DateTime, FixedOffset, NaiveDateTime, Utc};

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
        NaiveDateTime::parse_from_str(stamp, "%Y-%m-%d %H:%M")
            .ok()
            .map(|now| PolisTime { zone, now })
    }

    /// `YYYY-MM-DD HH:MM`, the chronicle and inbox stamp.
    pub fn minute_stamp(&self) -> String {
        self.now.format("%Y-%m-%d %H:%M").to_string()
    }

    /// `YYYY-MM-DD HH:MM:SS`, the frontmatter stamp.
    pub fn second_stamp(&self) -> String {
        self.now.format("%Y-%m-%d %H:%M:%S").to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
