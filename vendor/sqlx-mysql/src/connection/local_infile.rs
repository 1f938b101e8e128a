// importgate: `LOAD DATA LOCAL INFILE`, the server's bulk loader over the
// client's connection, with the data given in memory.
// https://dev.mysql.com/doc/dev/mysql-server/latest/page_protocol_com_query_response_local_infile_request.html

use super::stream::Waiting;
use super::MySqlConnection;
use crate::error::Error;
use crate::protocol::Capabilities;
use crate::protocol::text::{InfileData, Query};

/// Bytes of data one packet carries: well inside any `max_allowed_packet`.
const CHUNK: usize = 64 * 1024;

/// What a `LOAD DATA` did: the rows it stored and the warnings it raised
/// (with `LOCAL`, the server turns a value it could not take into a
/// warning and goes on, whatever the `sql_mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Loaded {
    pub rows: u64,
    pub warnings: u16,
}

impl MySqlConnection {
    /// Whether [`load_local_infile`](Self::load_local_infile) may run on
    /// this connection: it was opened with
    /// [`MySqlConnectOptions::local_infile`](crate::MySqlConnectOptions::local_infile)
    /// and the server took the capability.
    pub fn local_infile(&self) -> bool {
        self.inner
            .stream
            .capabilities
            .contains(Capabilities::LOCAL_FILES)
    }

    /// Runs `sql`, a `LOAD DATA LOCAL INFILE` statement, and answers the
    /// server's request for the file with `data`, whatever file it names:
    /// no file is read. The connection must have been opened with
    /// [`MySqlConnectOptions::local_infile`](crate::MySqlConnectOptions::local_infile),
    /// and the server must allow it (`local_infile`), or the server
    /// refuses the statement.
    pub async fn load_local_infile(&mut self, sql: &str, data: &[u8]) -> Result<Loaded, Error> {
        let stream = &mut self.inner.stream;
        stream.wait_until_ready().await?;
        stream.send_packet(Query(sql)).await?;
        stream.waiting.push_back(Waiting::Result);
        let first = stream.recv_packet().await?;
        let ok = match first.first() {
            Some(0xfb) => {
                for chunk in data.chunks(CHUNK) {
                    stream.write_packet(InfileData(chunk))?;
                    stream.flush().await?;
                }
                stream.write_packet(InfileData(&[]))?;
                stream.flush().await?;
                stream.recv_packet().await?.ok()?
            }
            Some(0x00) => first.ok()?,
            _ => {
                // A result set: left waiting, so that the next statement
                // reads past it first.
                return Err(err_protocol!(
                    "a LOAD DATA LOCAL INFILE statement answered with rows"
                ));
            }
        };
        stream.waiting.pop_front();
        self.inner.status_flags = ok.status;
        Ok(Loaded {
            rows: ok.affected_rows,
            warnings: ok.warnings,
        })
    }
}
