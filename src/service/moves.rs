//! Telling waiters that a job moved. A client waiting on one job
//! (`Prefer: wait`) is woken by that job's moves only: waking every waiter
//! on every move made each of them read its job again, fifty readers times
//! every move under load, which cost the database and the service more than
//! the moves themselves. The event streams and the webhook worker still
//! want every move and listen to [`Moves::any`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

use crate::ids::JobId;

#[derive(Default)]
pub struct Moves {
    /// Woken (all waiters) by every committed append to the ledger.
    any: Notify,
    /// One wake-up per job somebody is waiting on, dropped with its last
    /// waiter.
    jobs: Mutex<HashMap<JobId, Arc<Notify>>>,
    /// Counts the wake-ups, so that a reader woken by one can tell whether
    /// what it read before is from before it ([`super::tail::Tail`]).
    generation: std::sync::atomic::AtomicU64,
}

impl Moves {
    /// Every append to the ledger, whatever it is about.
    pub fn any(&self) -> &Notify {
        &self.any
    }

    /// A job moved (its transaction committed): its waiters and every
    /// listener to [`Moves::any`] are woken.
    pub fn job(&self, id: &JobId) {
        self.bump();
        let one = self.lock().get(id).cloned();
        if let Some(n) = one {
            n.notify_waiters();
        }
        self.any.notify_waiters();
    }

    /// Something else was appended (a key's event, a batch of jobs).
    pub fn other(&self) {
        self.bump();
        self.any.notify_waiters();
    }

    /// How many wake-ups there were: it changes before each one.
    pub fn generation(&self) -> u64 {
        self.generation.load(std::sync::atomic::Ordering::Acquire)
    }

    fn bump(&self) {
        self.generation
            .fetch_add(1, std::sync::atomic::Ordering::Release);
    }

    /// A watch on one job's moves, for as long as it is held.
    pub fn watch(&self, id: &JobId) -> Watch<'_> {
        let notify = self
            .lock()
            .entry(id.clone())
            .or_insert_with(|| Arc::new(Notify::new()))
            .clone();
        Watch {
            moves: self,
            id: id.clone(),
            notify,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<JobId, Arc<Notify>>> {
        // A panic elsewhere while holding the map leaves it usable.
        self.jobs.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A waiter's hold on one job's wake-up.
pub struct Watch<'a> {
    moves: &'a Moves,
    id: JobId,
    notify: Arc<Notify>,
}

impl Watch<'_> {
    pub fn notify(&self) -> &Notify {
        &self.notify
    }
}

impl Drop for Watch<'_> {
    fn drop(&mut self) {
        let mut jobs = self.moves.lock();
        // Counts change only under the map's lock: two left (the map's and
        // this one) means this was the last waiter.
        if Arc::strong_count(&self.notify) == 2 {
            jobs.remove(&self.id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn a_waiter_is_woken_by_its_own_job_only() {
        let moves = Moves::default();
        let watch = moves.watch(&JobId::from_stored("job_a"));
        let woken = watch.notify().notified();
        tokio::pin!(woken);
        woken.as_mut().enable();
        moves.job(&JobId::from_stored("job_b"));
        let other = tokio::time::timeout(Duration::from_millis(20), woken.as_mut()).await;
        assert!(other.is_err(), "another job's move woke the waiter");
        moves.job(&JobId::from_stored("job_a"));
        tokio::time::timeout(Duration::from_millis(20), woken)
            .await
            .expect("its own job's move wakes the waiter");
    }

    #[test]
    fn the_last_waiter_takes_the_wake_up_with_it() {
        let moves = Moves::default();
        let first = moves.watch(&JobId::from_stored("job_a"));
        let second = moves.watch(&JobId::from_stored("job_a"));
        drop(first);
        assert_eq!(moves.lock().len(), 1);
        drop(second);
        assert!(moves.lock().is_empty());
    }
}
