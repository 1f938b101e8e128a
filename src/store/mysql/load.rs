//! The validation's writer on MariaDB and MySQL: `store::flight`'s
//! batches, each by `LOAD DATA LOCAL INFILE` where the connection may
//! (`super::stage::load_batch`; `connect::pool` decides), else
//! multi-row `INSERT`s sized to the server's packet
//! (`super::stage::insert_batch`).

use futures::future::BoxFuture;

use super::stage::{insert_batch, load_batch};
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
        let Tx::Mysql(t) = tx else {
            return Err(StoreError::Corrupt(
                "a MySQL batch in another database".into(),
            ));
        };
        if t.local_infile() {
            load_batch(t, stage, job_id, rows).await
        } else {
            insert_batch(t, stage, job_id, rows).await
        }
    })
}
