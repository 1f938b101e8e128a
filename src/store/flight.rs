//! The validation's writer on a database server (PostgreSQL, MySQL): a
//! batch (with the batches queued behind it, joined up to
//! [`JOINED_ROWS`]) is written by the backend's [`WriteBatch`] (on
//! PostgreSQL one `COPY` of rows, with their warnings, and one of errors),
//! and two batches are written at once, each on its own connection: a
//! `COPY` keeps its backend busy on one core (1M `orders` rows: 7 of the
//! 10 s), and the service's side needs about half the other. Their
//! transactions commit in batch order: each renews the lease and records
//! progress only after the one before committed, so the renewal is the
//! last statement before the commit (the row lock it takes would otherwise
//! hold the second batch's whole `COPY` back).

use futures::StreamExt;
use futures::future::BoxFuture;
use futures::stream::FuturesOrdered;
use tokio::sync::{mpsc, oneshot};

use crate::ids::JobId;
use crate::ledger::Counts;
use crate::store::db::{Db, Tx};
use crate::store::error::Result;
use crate::store::jobs::{self, Lease};
use crate::store::stage::{Stage, StagedRow, breaks, insert_breaks};

/// How a backend writes one batch of staged rows and their errors in a
/// transaction of its own pool's.
pub type WriteBatch =
    for<'t> fn(&'t mut Tx, &'t Stage<'t>, &'t JobId, &'t [StagedRow]) -> BoxFuture<'t, Result<()>>;

/// Batches written at once, each on its own connection.
const IN_FLIGHT: usize = 2;

/// Rows of queued batches one transaction writes at most. Each
/// transaction costs its `COPY`'s start and a handful of round trips
/// (begin, durability, breaks, lease, commit), each a wait for a
/// backend to be scheduled on a machine whose two cores are busy: 1M
/// `orders` rows in 2,000-row transactions validated in a median of
/// 4.13 s, joined 3.70–3.76 s (`bash bench/once.sh BIN postgres`,
/// three alternated rounds). Memory holds no more rows than the queue
/// already did.
const JOINED_ROWS: usize = 8_000;

/// The batches being written, oldest first.
pub struct Writes<'a> {
    db: &'a Db,
    stage: &'a Stage<'a>,
    job_id: JobId,
    lease: Lease,
    write: WriteBatch,
    flying: FuturesOrdered<BoxFuture<'a, anyhow::Result<()>>>,
    /// Fires when the newest batch committed (or dropped when it failed).
    last: Option<oneshot::Receiver<()>>,
    /// The number of the last row pushed ([`breaks`]).
    last_row: Option<i64>,
}

impl<'a> Writes<'a> {
    /// The writer of `stage` for job `job_id`, each batch in a
    /// transaction of `db`'s, written by `write`.
    pub fn new(
        db: &'a Db,
        stage: &'a Stage<'a>,
        job_id: &JobId,
        lease: Lease,
        write: WriteBatch,
    ) -> Writes<'a> {
        Writes {
            db,
            stage,
            job_id: job_id.clone(),
            lease,
            write,
            flying: FuturesOrdered::new(),
            last: None,
            last_row: None,
        }
    }

    /// The next batch, with the batches queued behind it joined to it
    /// up to [`JOINED_ROWS`]: they wait only because the writer is
    /// behind, and one transaction and one `COPY` of them costs less
    /// than one each (see [`JOINED_ROWS`]).
    pub async fn next(
        &mut self,
        rx: &mut mpsc::Receiver<Vec<StagedRow>>,
    ) -> anyhow::Result<Option<Vec<StagedRow>>> {
        let mut rows = loop {
            tokio::select! {
                Some(written) = self.flying.next(), if !self.flying.is_empty() => written?,
                rows = rx.recv() => break rows,
            }
        };
        if let Some(rows) = &mut rows {
            join_queued(rows, rx, JOINED_ROWS);
        }
        Ok(rows)
    }

    /// Writes one batch, once fewer than [`IN_FLIGHT`] are being
    /// written, with the job's counts so far when `progress` is given.
    pub async fn push(
        &mut self,
        rows: Vec<StagedRow>,
        progress: Option<Counts>,
    ) -> anyhow::Result<()> {
        while self.flying.len() >= IN_FLIGHT {
            if let Some(written) = self.flying.next().await {
                written?;
            }
        }
        let (done, committed) = oneshot::channel();
        let after = self.last.replace(committed);
        let (db, stage) = (self.db, self.stage);
        let (job_id, lease) = (self.job_id.clone(), self.lease.clone());
        let jumps = breaks(&rows, &mut self.last_row);
        let write = self.write;
        self.flying.push_back(Box::pin(async move {
            let mut tx = db.begin().await?;
            write(&mut tx, stage, &job_id, &rows).await?;
            insert_breaks(&mut tx.conn(), stage.job, &jumps).await?;
            drop(rows);
            if let Some(after) = after {
                // An error before it ends this run anyway.
                let _ = after.await;
            }
            if let Some((owner, ms)) = &lease {
                let until = chrono::Utc::now().timestamp_millis() + ms;
                if !jobs::heartbeat(&mut tx.conn(), &job_id, owner, until).await? {
                    return Err(jobs::lease_lost(&job_id));
                }
            }
            if let Some(counts) = &progress {
                jobs::set_counts(&mut tx.conn(), &job_id, counts).await?;
            }
            tx.commit().await?;
            let _ = done.send(());
            Ok(())
        }));
        Ok(())
    }

    /// Waits for every batch to be written; the first error, if any.
    pub async fn finish(mut self) -> anyhow::Result<()> {
        while let Some(written) = self.flying.next().await {
            written?;
        }
        Ok(())
    }
}

/// Appends to `rows` the batches already waiting in `rx`, while `rows`
/// holds fewer than `up_to`; never waits for one.
fn join_queued<T>(rows: &mut Vec<T>, rx: &mut mpsc::Receiver<Vec<T>>, up_to: usize) {
    while rows.len() < up_to {
        let Ok(more) = rx.try_recv() else { break };
        rows.extend(more);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn queued_batches_join_in_order_up_to_the_bound_and_nothing_is_awaited() {
        let (tx, mut rx) = mpsc::channel(8);
        for b in 0..5u32 {
            tx.send((b * 3..b * 3 + 3).collect::<Vec<u32>>())
                .await
                .unwrap();
        }
        let mut first = rx.recv().await.unwrap();
        join_queued(&mut first, &mut rx, 8);
        // Whole batches: the third goes past the bound, none is split.
        assert_eq!(first, (0..9).collect::<Vec<_>>());
        let mut rest = rx.recv().await.unwrap();
        join_queued(&mut rest, &mut rx, 8);
        assert_eq!(rest, (9..15).collect::<Vec<_>>());
        // An empty queue with its sender still open returns at once.
        let mut last = vec![99];
        join_queued(&mut last, &mut rx, 8);
        assert_eq!(last, vec![99]);
        drop(tx);
        assert!(rx.recv().await.is_none());
    }
}
