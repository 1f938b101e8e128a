//! How many requests this process is answering, so that background work can
//! yield to people and scripts waiting for an answer.
//!
//! The webhook worker asks [`Traffic::busy`] before each round: while the
//! service answers requests at a high rate it keeps only a few deliveries
//! in flight, and catches up at full speed once the rate falls. On a
//! saturated machine every delivery (an HTTP exchange, a lease and a
//! record) takes CPU from the uploads; a webhook is asynchronous by nature,
//! an upload's client is waiting.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Requests a second above which the service counts as busy: a console
/// user or a polling script makes a few a second, a batch of integrations
/// uploading at once hundreds.
pub const BUSY_RATE: u64 = 50;

/// The span requests are counted over.
const SPAN: Duration = Duration::from_secs(1);

/// Requests counted in the current span and in the one before.
pub struct Traffic {
    counts: Mutex<Counts>,
}

struct Counts {
    opened: Instant,
    now: u64,
    before: u64,
}

impl Default for Traffic {
    fn default() -> Self {
        Traffic {
            counts: Mutex::new(Counts {
                opened: Instant::now(),
                now: 0,
                before: 0,
            }),
        }
    }
}

impl Traffic {
    /// Counts one request.
    pub fn request(&self) {
        let mut c = self.lock();
        c.roll(Instant::now());
        c.now += 1;
    }

    /// Whether the last full span, or the current one so far, saw more
    /// than [`BUSY_RATE`] requests.
    pub fn busy(&self) -> bool {
        let mut c = self.lock();
        c.roll(Instant::now());
        c.now.max(c.before) > BUSY_RATE
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Counts> {
        // A counter poisoned by a panic elsewhere still counts.
        self.counts.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Counts {
    /// Moves the spans on to `at`: a span that ended becomes the one
    /// before; after two quiet spans both are empty.
    fn roll(&mut self, at: Instant) {
        let gone = at.duration_since(self.opened);
        if gone < SPAN {
            return;
        }
        self.before = if gone < 2 * SPAN { self.now } else { 0 };
        self.now = 0;
        self.opened = at;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_above_the_rate_and_quiet_again_two_spans_later() {
        let t = Traffic::default();
        for _ in 0..BUSY_RATE {
            t.request();
        }
        assert!(!t.busy(), "at the rate is not above it");
        t.request();
        assert!(t.busy());
        let mut c = t.lock();
        let later = c.opened + SPAN;
        c.roll(later);
        assert!(c.now.max(c.before) > BUSY_RATE, "the span before counts");
        let quiet = later + 2 * SPAN;
        c.roll(quiet);
        assert_eq!((c.now, c.before), (0, 0));
    }
}
