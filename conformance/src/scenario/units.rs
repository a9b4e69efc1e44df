//! Durations as every profile's steps write them: `1d`, `6d23h59m`, `90s`, `250ms`, and where a
//! profile lets the clock jump back, `-10d`. One reader, so the language means one thing by a
//! duration whichever profile's file it is in (scenarios/README.md).

use tidemark_sim::clip::{clip, MAX_SCENARIO_SPAN_MS};

const DAY_MS: i64 = 86_400_000;

/// Whether a duration may be negative where it is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sign {
    /// A length of time (`keep … for 5d`, a knob, the scratchpad's `advance`): 0 or more.
    NotNegative,
    /// A clock step that may jump back (`advance -10d` in the scoped and rows profiles).
    Either,
}

/// The duration `w` in milliseconds, at most [`MAX_SCENARIO_SPAN_MS`] either way; an error
/// says which forms are accepted.
pub fn duration_ms(w: &str, sign: Sign) -> Result<i64, String> {
    let forms = match sign {
        Sign::NotNegative => "7d, 6d23h, 59m59s or 250ms",
        Sign::Either => "7d, 6d23h, 59m59s, 250ms or -10d (a clock jumping back)",
    };
    let bad = || format!("expected a duration like {forms}, found {:?}", clip(w));
    let too_long = || {
        format!(
            "the duration {:?} is longer than {} days, the most a scenario may span",
            clip(w),
            MAX_SCENARIO_SPAN_MS / DAY_MS
        )
    };
    let (negative, mut rest) = match w.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, w),
    };
    if negative && sign == Sign::NotNegative {
        return Err(format!(
            "a duration here is a length of time, 0 or more, not {:?}",
            clip(w)
        ));
    }
    if rest.is_empty() {
        return Err(bad());
    }
    let mut total: i64 = 0;
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return Err(bad());
        }
        // Digits that do not fit an i64 are a duration too long, not a malformed one.
        let n: i64 = rest[..digits].parse().map_err(|_| too_long())?;
        rest = &rest[digits..];
        let (unit_ms, len) = if rest.starts_with("ms") {
            (1, 2)
        } else if rest.starts_with('d') {
            (DAY_MS, 1)
        } else if rest.starts_with('h') {
            (3_600_000, 1)
        } else if rest.starts_with('m') {
            (60_000, 1)
        } else if rest.starts_with('s') {
            (1_000, 1)
        } else {
            return Err(bad());
        };
        total = n
            .checked_mul(unit_ms)
            .and_then(|ms| total.checked_add(ms))
            .filter(|t| *t <= MAX_SCENARIO_SPAN_MS)
            .ok_or_else(too_long)?;
        rest = &rest[len..];
    }
    Ok(if negative { -total } else { total })
}

/// Where a scenario's (or a saved failure's) clock stands, from the epoch, checked at every
/// step: it may jump back where a profile allows, but never before 1970 nor past the span a
/// scenario may cover. One rule for the loaders and for replays.
#[derive(Clone, Copy, Debug, Default)]
pub struct Clock {
    offset_ms: i64,
}

impl Clock {
    /// Moves the clock by `ms`; an error (a sentence) when that leaves the span.
    pub fn advance(&mut self, ms: i64) -> Result<(), String> {
        self.offset_ms = self
            .offset_ms
            .checked_add(ms)
            .filter(|o| (-tidemark_sim::clock::EPOCH.as_millis()..=MAX_SCENARIO_SPAN_MS).contains(o))
            .ok_or_else(|| {
                format!(
                    "this advance ({ms} ms) takes the clock before 1970 or past {} days after the epoch, the most a scenario may span",
                    MAX_SCENARIO_SPAN_MS / DAY_MS
                )
            })?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_unit_the_language_lists_reads_alike_and_a_sign_only_where_allowed() {
        assert_eq!(duration_ms("250ms", Sign::NotNegative), Ok(250));
        assert_eq!(
            duration_ms("1d2h3m4s5ms", Sign::Either),
            Ok(DAY_MS + 2 * 3_600_000 + 3 * 60_000 + 4_000 + 5)
        );
        assert_eq!(duration_ms("-10d", Sign::Either), Ok(-10 * DAY_MS));
        assert!(duration_ms("-5d", Sign::NotNegative)
            .unwrap_err()
            .contains("0 or more"));
        for bad in ["", "-", "5", "5x", "d", "7days", "1.5d", "--1d"] {
            assert!(duration_ms(bad, Sign::Either).is_err(), "{bad:?}");
        }
        assert!(duration_ms("99999999999999999999d", Sign::Either)
            .unwrap_err()
            .contains("longer than"));
        assert!(duration_ms(&format!("{}ms", MAX_SCENARIO_SPAN_MS + 1), Sign::Either).is_err());
    }

    #[test]
    fn the_clock_stays_between_1970_and_the_span() {
        let mut c = Clock::default();
        assert!(c.advance(-tidemark_sim::clock::EPOCH.as_millis()).is_ok());
        assert!(c.advance(-1).is_err());
        let mut c = Clock::default();
        assert!(c.advance(i64::MIN).is_err());
        assert!(c.advance(i64::MAX).is_err());
        assert!(c.advance(MAX_SCENARIO_SPAN_MS).is_ok());
        assert!(c.advance(1).is_err());
    }
}
