//! The validation's writer on PostgreSQL: `store::flight`'s batches, each
//! one `COPY` of rows and one of errors (`super::stage::insert_batch`),
//! with durability relaxed.

use futures::future::BoxFuture;

use super::stage::insert_batch;
use super::txn::relax_durability;
use crate::ids::JobId;
use crate::store::db::Tx;
use crate::store::error::{Result, StoreError};
use crate::store::stage::{Stage, StagedRow};

/// One batch, in transaction `tx` (`store::flight::WriteBatch`).
pub fn write_batch<'t>(
    tx: &'t mut Tx,
    stage: &'t Stage<'t>,
    job_id: &'t JobId,
    rows: &'t [StagedRow],
) -> BoxFuture<'t, Result<()>> {
    Box::pin(async move {
        let Tx::Postgres(t) = tx else {
            return Err(StoreError::Corrupt(
                "a PostgreSQL batch in another database".into(),
            ));
        };
        relax_durability(t).await?;
        insert_batch(t, stage, job_id, rows).await
    })
}
