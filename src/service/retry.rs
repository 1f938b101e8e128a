//! How long to wait before trying again after a failure: a base doubled for
//! every failure after the first, up to a cap.
//!
//! The job worker ([`super::work::attempt_failed`]) and the webhook
//! deliverer ([`super::webhooks::deliverer`]) both back off this way; one
//! function keeps them from drifting apart. The deliverer adds
//! [`jittered`], because many endpoints can fail at once (one receiver
//! down behind several endpoints, a network outage) and should not all be
//! retried at the same instant; a job's retries are one job's, so the
//! worker's wait stays exact.

use std::time::Duration;

use rand::RngExt;

/// The wait after `failed` failures in a row: `base` after the first,
/// twice as long after each one more, never longer than `cap`. Fewer than
/// one failure counts as one.
pub fn backoff(base: Duration, failed: i64, cap: Duration) -> Duration {
    // Doubling stops after 31 times, when a base of one millisecond has
    // grown to 24 days: the shift stays in range, and `saturating_mul`
    // keeps a larger base from overflowing.
    let doublings = (failed - 1).clamp(0, 31) as u32;
    base.saturating_mul(1 << doublings).min(cap)
}

/// `wait` with jitter: half of it fixed, the other half random, so that
/// waits that started together do not end together.
pub fn jittered(wait: Duration) -> Duration {
    let half = wait / 2;
    half + rand::rng().random_range(Duration::ZERO..=half)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: Duration = Duration::from_secs(1);
    const HOUR: Duration = Duration::from_secs(3600);

    #[test]
    fn the_wait_doubles_from_the_base_up_to_the_cap() {
        let waits: Vec<u64> = (1..=8)
            .map(|n| backoff(10 * SECOND, n, 5 * 60 * SECOND).as_secs())
            .collect();
        assert_eq!(waits, [10, 20, 40, 80, 160, 300, 300, 300]);
    }

    #[test]
    fn no_failure_count_is_too_small_or_too_large() {
        assert_eq!(backoff(SECOND, 0, HOUR), SECOND);
        assert_eq!(backoff(SECOND, -5, HOUR), SECOND);
        assert_eq!(backoff(SECOND, i64::MAX, HOUR), HOUR);
        assert_eq!(backoff(Duration::MAX, 40, HOUR), HOUR);
        assert_eq!(backoff(Duration::ZERO, 3, HOUR), Duration::ZERO);
    }

    #[test]
    fn jitter_keeps_at_least_half_and_at_most_the_whole() {
        let wait = 10 * SECOND;
        for _ in 0..1000 {
            let j = jittered(wait);
            assert!(j >= wait / 2 && j <= wait, "{j:?}");
        }
        assert_eq!(jittered(Duration::ZERO), Duration::ZERO);
    }
}
