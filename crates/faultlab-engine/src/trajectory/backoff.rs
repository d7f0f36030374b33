//! What backing off between retries is, for every reader of a trajectory that judges a client's retries: eval's
//! grader (a run of identical calls past `max_attempts` that backs off and ends in success is no loop) and the
//! trace clinic (a retry storm needs harm, and no backoff is one).

/// The shortest wait before a retry (ms, from the failure's answer to the retry) that counts as backing off: a
/// client that waits less is hammering whatever failed. Exponential backoff commonly starts at 100 ms or more.
pub const MIN_WAIT_MS: f64 = 100.0;

/// A wait before a retry counts as growing when it is at least this many times the wait before the previous retry.
/// Exponential backoff doubles its wait (×2), and ±25 % jitter on it still leaves ×1.2 at worst (150 ms after
/// 125 ms); a fixed pause measured with a few milliseconds of scheduling noise does not reach it.
pub const GROWTH: f64 = 1.2;

/// How a client waited before its retries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Waits {
    /// Every wait at least the shortest, and each at least [`GROWTH`] times the one before.
    Backoff,
    /// A wait under the shortest (`min_ms`).
    TooShort,
    /// Long enough, but a wait less than [`GROWTH`] times the one before it.
    NotGrowing,
}

/// Judges the waits before each retry of one call, in order (ms); `min_ms` is the shortest wait that counts
/// ([`MIN_WAIT_MS`] unless the user set another).
pub fn judge(waits: &[f64], min_ms: f64) -> Waits {
    if waits.iter().any(|w| *w < min_ms) {
        Waits::TooShort
    } else if waits.windows(2).any(|w| w[1] < w[0] * GROWTH) {
        Waits::NotGrowing
    } else {
        Waits::Backoff
    }
}

/// Most waits a verdict lists one by one; a longer run shows its first and last ones and how many there were.
pub const MOST_SHOWN: usize = 10;

/// The waits as a verdict says them (each already in words, in ms), at most [`MOST_SHOWN`]: a loop of thousands of
/// calls would otherwise put thousands of numbers in one sentence.
pub fn shown(waits: &[String]) -> String {
    match waits.len() {
        n if n <= MOST_SHOWN => waits.join(", "),
        n => format!("{}, …, {} ({n} waits)", waits[..MOST_SHOWN - 2].join(", "), waits[n - 1]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_run_of_waits_is_shown_by_its_ends_and_its_count() {
        let waits = |n: usize| (1..=n).map(|w| w.to_string()).collect::<Vec<_>>();
        assert_eq!(shown(&waits(3)), "1, 2, 3");
        assert_eq!(shown(&waits(10)), "1, 2, 3, 4, 5, 6, 7, 8, 9, 10");
        assert_eq!(shown(&waits(2767)), "1, 2, 3, 4, 5, 6, 7, 8, …, 2767 (2767 waits)");
    }

    #[test]
    fn doubling_with_jitter_backs_off_and_a_fixed_or_short_wait_does_not() {
        assert_eq!(judge(&[100.0, 200.0, 400.0], MIN_WAIT_MS), Waits::Backoff);
        // ±25 % jitter on doubling: 125 ms then 150 ms is still growth.
        assert_eq!(judge(&[125.0, 150.0], MIN_WAIT_MS), Waits::Backoff);
        assert_eq!(judge(&[300.0, 303.0, 298.0], MIN_WAIT_MS), Waits::NotGrowing);
        assert_eq!(judge(&[5.0, 10.0, 20.0], MIN_WAIT_MS), Waits::TooShort);
        assert_eq!(judge(&[5.0, 10.0], 4.0), Waits::Backoff);
        assert_eq!(judge(&[], MIN_WAIT_MS), Waits::Backoff);
    }
}
