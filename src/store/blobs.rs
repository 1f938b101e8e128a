//! Uploaded files, kept in the database in 1 MiB chunks and addressed by
//! their SHA-256, so a job can always re-read exactly the bytes it was given
//! and every process sharing the database can read them. Each chunk is
//! stored compressed when that makes it smaller ([`Packed`]).

use std::io::Read;

use tokio::runtime::Handle;

use super::db::{Conn, Db};
use super::error::Result;
use super::sql::now;
use super::txn::{self, Lock};
use crate::ids::JobId;
use crate::on_conn;

/// Chunk size: large enough that a 256 MiB file is 256 rows, small enough
/// that a chunk in memory does not matter.
pub const CHUNK: usize = 1024 * 1024;

/// How a chunk's bytes are stored (`ig_blob_chunks.codec`).
const AS_IS: i64 = 0;
const ZSTD: i64 = 1;

/// zstd's fastest regular level: a 65 MB CSV shrinks about four times
/// in 0.17 s; the negative levels were no faster on it and shrank it less.
const LEVEL: i32 = 1;

/// A chunk as it is stored: compressed when that makes it smaller (a CSV
/// about four times), as it came otherwise (XLSX and ODS are zip files
/// already). Stored files then take a quarter of the database's space for
/// their retention and rollback window, and a quarter of the writes while
/// the upload is stored and of the reads while it is validated.
pub struct Packed {
    codec: i64,
    data: Vec<u8>,
}

impl Packed {
    /// Packs up to [`CHUNK`] bytes of a file. Blocking: 1 MiB takes about
    /// 3 ms.
    pub fn new(raw: Vec<u8>) -> Packed {
        match zstd::bulk::compress(&raw, LEVEL) {
            Ok(data) if data.len() < raw.len() => Packed { codec: ZSTD, data },
            _ => Packed::as_is(raw),
        }
    }

    /// A chunk of a file that is compressed already (a zip: XLSX, ODS),
    /// kept as it came without trying: zstd does not shrink deflated bytes
    /// and spent 12–22 ms finding that out on a 4.6 MB workbook.
    pub fn as_is(raw: Vec<u8>) -> Packed {
        Packed {
            codec: AS_IS,
            data: raw,
        }
    }

    /// How many bytes the chunk takes as stored.
    pub fn stored_len(&self) -> usize {
        self.data.len()
    }

    /// Writes the chunk as it is stored (its codec, length and bytes), for
    /// [`Packed::read_from`] to read back: an upload's chunks wait in a
    /// temporary file until the whole body is here.
    pub fn write_to(&self, w: &mut impl std::io::Write) -> std::io::Result<()> {
        w.write_all(&[self.codec as u8])?;
        w.write_all(&(self.data.len() as u64).to_le_bytes())?;
        w.write_all(&self.data)
    }

    /// The next chunk [`Packed::write_to`] wrote, or `None` at the end.
    pub fn read_from(r: &mut impl Read) -> std::io::Result<Option<Packed>> {
        let mut codec = [0u8; 1];
        if r.read(&mut codec)? == 0 {
            return Ok(None);
        }
        let mut len = [0u8; 8];
        r.read_exact(&mut len)?;
        let mut data = vec![0u8; u64::from_le_bytes(len) as usize];
        r.read_exact(&mut data)?;
        Ok(Some(Packed {
            codec: i64::from(codec[0]),
            data,
        }))
    }

    /// Whether the chunk is stored as it came, not compressed.
    #[cfg(test)]
    pub(crate) fn kept_as_is(&self) -> bool {
        self.codec == AS_IS
    }

    /// The chunk's bytes as the file had them. A chunk that would unpack
    /// to more than [`CHUNK`] bytes is refused, not unpacked.
    pub(crate) fn unpack(self) -> std::io::Result<Vec<u8>> {
        match self.codec {
            AS_IS => Ok(self.data),
            ZSTD => zstd::bulk::decompress(&self.data, CHUNK),
            other => Err(std::io::Error::other(format!(
                "a stored chunk has an unknown codec {other}"
            ))),
        }
    }
}

pub async fn put_chunk(
    conn: &mut Conn<'_>,
    upload_id: &str,
    seq: i64,
    chunk: &Packed,
) -> Result<()> {
    on_conn!(conn, c => sqlx::query(
        "INSERT INTO ig_blob_chunks (upload_id, seq, codec, data, created_at) VALUES ($1, $2, $3, $4, $5)")
        .bind(upload_id).bind(seq).bind(chunk.codec).bind(&chunk.data).bind(now()).execute(c).await.map(|r| r.rows_affected()))?;
    Ok(())
}

/// Files the chunks of an upload under their hash. When the same bytes were
/// stored before, the new chunks are dropped and the old ones serve both.
/// The job that needs the file must be recorded in the same transaction:
/// until it ends, the retention sweep cannot drop the file (see
/// [`drop_unused`]).
pub async fn finish(conn: &mut Conn<'_>, upload_id: &str, sha256: &str, bytes: i64) -> Result<()> {
    txn::lock(conn, Lock::Blobs).await?;
    let sql = conn.dialect().insert_or_skip(
        "ig_blobs (sha256, upload_id, bytes, created_at) VALUES ($1, $2, $3, $4)",
        "sha256",
    );
    let done = on_conn!(conn, c => sqlx::query(&sql)
        .bind(sha256).bind(upload_id).bind(bytes).bind(now()).execute(c).await.map(|r| r.rows_affected()))?;
    if done == 0 {
        discard(conn, upload_id).await?;
    }
    Ok(())
}

/// Drops the chunks of an upload that did not complete.
pub async fn discard(conn: &mut Conn<'_>, upload_id: &str) -> Result<()> {
    on_conn!(conn, c => sqlx::query("DELETE FROM ig_blob_chunks WHERE upload_id = $1")
        .bind(upload_id).execute(c).await.map(|r| r.rows_affected()))?;
    Ok(())
}

/// Drops the chunks of uploads that never completed (the process died
/// while receiving the body) and have received nothing since `before`.
pub async fn purge_orphans(
    conn: &mut Conn<'_>,
    before: chrono::DateTime<chrono::Utc>,
) -> Result<u64> {
    Ok(on_conn!(conn, c => sqlx::query(
        "DELETE FROM ig_blob_chunks WHERE created_at < $1 \
         AND NOT EXISTS (SELECT 1 FROM ig_blobs b WHERE b.upload_id = ig_blob_chunks.upload_id) \
         AND upload_id NOT IN (SELECT f.upload_id FROM \
                               (SELECT DISTINCT upload_id FROM ig_blob_chunks WHERE created_at >= $2) f)")
        .bind(before).bind(before).execute(c).await.map(|r| r.rows_affected()))?)
}

/// What became of a stored file when a job that used it was purged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dropped {
    /// Dropped: no job that still needs it refers to it.
    Yes { bytes: i64 },
    /// Kept: this many other jobs not purged refer to it.
    Shared { jobs: i64 },
    /// There was none (dropped before).
    Absent,
}

/// Drops the stored file `sha256` unless a job other than `job_id` that
/// is not purged refers to it. Takes [`Lock::Blobs`] first, so an
/// upload of the same bytes either is recorded before (and keeps the
/// file) or files its own chunks after.
pub async fn drop_unused(conn: &mut Conn<'_>, sha256: &str, job_id: &JobId) -> Result<Dropped> {
    txn::lock(conn, Lock::Blobs).await?;
    let users: i64 = on_conn!(conn, c => sqlx::query_scalar(
        "SELECT COUNT(*) FROM ig_jobs WHERE file_sha256 = $1 AND id <> $2 AND purged_at IS NULL")
        .bind(sha256).bind(job_id).fetch_one(c).await)?;
    if users > 0 {
        return Ok(Dropped::Shared { jobs: users });
    }
    // Read, then dropped: MySQL's `DELETE` returns nothing. The lock
    // keeps anyone else from dropping or filing it in between.
    let found: Option<(String, i64)> = on_conn!(conn, c => sqlx::query_as(
        "SELECT upload_id, bytes FROM ig_blobs WHERE sha256 = $1")
        .bind(sha256).fetch_optional(c).await)?;
    let Some((upload_id, bytes)) = found else {
        return Ok(Dropped::Absent);
    };
    on_conn!(conn, c => sqlx::query("DELETE FROM ig_blobs WHERE sha256 = $1")
        .bind(sha256).execute(c).await.map(|r| r.rows_affected()))?;
    discard(conn, &upload_id).await?;
    Ok(Dropped::Yes { bytes })
}

/// Which stored file a reader reads: one filed under its hash, or an
/// upload's chunks before they are filed (a workbook's sheets are listed
/// before its job is recorded, in the transaction that files them).
#[derive(Debug, Clone)]
enum Stored {
    Filed(String),
    Unfiled(String),
}

async fn chunk(db: &Db, stored: &Stored, seq: i64) -> Result<Option<Packed>> {
    let mut pooled = db.acquire().await?;
    let mut conn = pooled.conn();
    let (sql, key) = match stored {
        Stored::Filed(sha256) => (
            "SELECT k.codec, k.data FROM ig_blobs b JOIN ig_blob_chunks k ON k.upload_id = b.upload_id \
             WHERE b.sha256 = $1 AND k.seq = $2",
            sha256,
        ),
        Stored::Unfiled(upload_id) => (
            "SELECT codec, data FROM ig_blob_chunks WHERE upload_id = $1 AND seq = $2",
            upload_id,
        ),
    };
    let found: Option<(i64, Vec<u8>)> = on_conn!(&mut conn, c => sqlx::query_as(sql)
        .bind(key).bind(seq).fetch_optional(c).await)?;
    Ok(found.map(|(codec, data)| Packed { codec, data }))
}

/// How many chunks a [`BlobReader`]'s fetcher unpacks ahead of the parser.
const AHEAD: usize = 2;

/// What the fetcher hands on: a chunk's bytes, the end, or why it stopped.
type Fetched = std::io::Result<Option<Vec<u8>>>;

/// A blocking reader over a stored file, for parsers that want
/// `std::io::Read`. It must run on a blocking thread (`spawn_blocking`).
///
/// Read `ahead`, a thread of its own fetches the chunks in order through
/// the runtime and unpacks them, [`AHEAD`] at most ahead of the parser, so
/// the parser does not wait on a round trip to the database and zstd for
/// each chunk. That is for readers that must cross much of the file before
/// any row goes on (JSON's header, a workbook's spool): CSV streams its
/// rows to the stage as it reads, where the thread bought nothing
/// measurable (100k orders, both backends) and is one more thread on two
/// cores beside SQLite's stage writer. The fetcher stops when the reader
/// is dropped, at the end, or at an error, which the reader returns in its
/// turn.
pub struct BlobReader {
    chunks: Chunks,
    buf: Vec<u8>,
    pos: usize,
    done: bool,
}

/// Where a [`BlobReader`]'s chunks come from.
enum Chunks {
    /// Fetched when the parser needs the next one.
    Direct {
        db: Db,
        runtime: Handle,
        stored: Stored,
        next_seq: i64,
    },
    /// From the fetcher's thread.
    Ahead(std::sync::mpsc::Receiver<Fetched>),
}

impl BlobReader {
    pub fn new(db: Db, runtime: Handle, sha256: &str, ahead: bool) -> BlobReader {
        BlobReader::of(db, runtime, Stored::Filed(sha256.to_string()), ahead)
    }

    /// A reader of an upload's chunks not filed yet ([`finish`]).
    pub fn unfiled(db: Db, runtime: Handle, upload_id: &str) -> BlobReader {
        BlobReader::of(db, runtime, Stored::Unfiled(upload_id.to_string()), true)
    }

    fn of(db: Db, runtime: Handle, stored: Stored, ahead: bool) -> BlobReader {
        let chunks = if ahead {
            Chunks::Ahead(fetcher(db, runtime, stored))
        } else {
            Chunks::Direct {
                db,
                runtime,
                stored,
                next_seq: 0,
            }
        };
        BlobReader {
            chunks,
            buf: Vec::new(),
            pos: 0,
            done: false,
        }
    }

    /// The next chunk's bytes, or `None` at the end.
    fn next_chunk(&mut self) -> Fetched {
        match &mut self.chunks {
            Chunks::Direct {
                db,
                runtime,
                stored,
                next_seq,
            } => {
                *next_seq += 1;
                fetch(db, runtime, stored, *next_seq - 1)
            }
            Chunks::Ahead(fetched) => fetched.recv().unwrap_or_else(|_| {
                Err(std::io::Error::other(
                    "the stored file's fetcher stopped before its end",
                ))
            }),
        }
    }
}

/// Chunk `seq` of a stored file, unpacked.
fn fetch(db: &Db, runtime: &Handle, stored: &Stored, seq: i64) -> Fetched {
    runtime
        .block_on(chunk(db, stored, seq))
        .map_err(std::io::Error::other)
        .and_then(|found| found.map(|packed| packed.unpack()).transpose())
}

/// Starts the thread that fetches a stored file's chunks ahead.
fn fetcher(db: Db, runtime: Handle, stored: Stored) -> std::sync::mpsc::Receiver<Fetched> {
    let (tx, chunks) = std::sync::mpsc::sync_channel::<Fetched>(AHEAD);
    // A thread that cannot start drops `tx`: the first read says so.
    let _ = std::thread::Builder::new()
        .name("blob-fetch".into())
        .spawn(move || {
            for seq in 0.. {
                let fetched = fetch(&db, &runtime, &stored, seq);
                let last = !matches!(fetched, Ok(Some(_)));
                if tx.send(fetched).is_err() || last {
                    return;
                }
            }
        });
    chunks
}

impl Read for BlobReader {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        while self.pos == self.buf.len() {
            if self.done {
                return Ok(0);
            }
            match self.next_chunk()? {
                Some(bytes) => {
                    self.buf = bytes;
                    self.pos = 0;
                }
                None => self.done = true,
            }
        }
        let n = out.len().min(self.buf.len() - self.pos);
        out[..n].copy_from_slice(&self.buf[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

/// `len` bytes that do not compress (xorshift), as a zip's would not.
#[cfg(test)]
pub(crate) fn noise(len: usize) -> Vec<u8> {
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chunk_unpacks_to_the_bytes_it_was_packed_from() {
        let csv: Vec<u8> = (0..40_000)
            .flat_map(|i| format!("Pelanggan {i},0812{i:08},Bandung\n").into_bytes())
            .take(CHUNK)
            .collect();
        let packed = Packed::new(csv.clone());
        assert_eq!(packed.codec, ZSTD);
        assert!(packed.data.len() < csv.len() / 3, "{}", packed.data.len());
        assert_eq!(packed.unpack().unwrap(), csv);
        // Bytes that do not compress (a zip's) are kept as they came.
        let noise = noise(CHUNK);
        let packed = Packed::new(noise.clone());
        assert_eq!(packed.codec, AS_IS);
        assert_eq!(packed.unpack().unwrap(), noise);
        assert_eq!(Packed::new(Vec::new()).unpack().unwrap(), b"");
    }

    #[test]
    fn a_chunk_that_would_unpack_past_its_size_or_has_no_known_codec_is_refused() {
        let big = Packed::new(vec![b'a'; CHUNK + 1]);
        assert_eq!(big.codec, ZSTD);
        assert!(big.unpack().is_err());
        let garbage = Packed {
            codec: ZSTD,
            data: b"not a zstd frame".to_vec(),
        };
        assert!(garbage.unpack().is_err());
        let unknown = Packed {
            codec: 7,
            data: b"x".to_vec(),
        };
        assert!(unknown.unpack().is_err());
    }

    /// Files `chunks` as the stored file `sha256`.
    async fn store(db: &Db, sha256: &str, chunks: &[Packed]) {
        let mut pooled = db.acquire().await.unwrap();
        let upload = format!("upload-{sha256}");
        for (seq, chunk) in chunks.iter().enumerate() {
            put_chunk(&mut pooled.conn(), &upload, seq as i64, chunk)
                .await
                .unwrap();
        }
        let bytes = chunks.iter().map(|c| c.data.len() as i64).sum();
        finish(&mut pooled.conn(), &upload, sha256, bytes)
            .await
            .unwrap();
    }

    /// A stored file of several chunks, packed and not, reads back whole
    /// from a real SQLite file, fetched as needed or ahead; a reader may stop
    /// after its first bytes; a file never stored reads as empty, and a
    /// chunk that cannot be unpacked is the reader's error, after the
    /// chunks before it.
    #[test]
    fn a_stored_file_reads_back_whole_fetched_as_needed_or_ahead() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("blobs.db").display());
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        // Five chunks and a half: text that packs, then noise kept as is.
        let file: Vec<u8> = (0..CHUNK * 11 / 2)
            .map(|i| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                if i < CHUNK * 3 {
                    b"abc,123\n"[i % 8]
                } else {
                    state as u8
                }
            })
            .collect();
        let db = runtime.block_on(async {
            let db = Db::connect(&url).await.unwrap();
            db.migrate(&crate::catalog::Catalog::builtin())
                .await
                .unwrap();
            let packed: Vec<Packed> = file
                .chunks(CHUNK)
                .map(|c| Packed::new(c.to_vec()))
                .collect();
            store(&db, "f1", &packed).await;
            let bad = Packed {
                codec: 7,
                data: b"?".to_vec(),
            };
            store(&db, "f2", &[Packed::new(b"ok,".to_vec()), bad]).await;
            db
        });
        let handle = runtime.handle().clone();
        for ahead in [false, true] {
            let open = |sha256: &str| BlobReader::new(db.clone(), handle.clone(), sha256, ahead);
            let mut back = Vec::new();
            open("f1").read_to_end(&mut back).unwrap();
            assert!(back == file, "{} bytes read of {}", back.len(), file.len());
            let mut first = [0u8; 8];
            let mut reader = open("f1");
            reader.read_exact(&mut first).unwrap();
            assert_eq!(&first, b"abc,123\n");
            drop(reader);
            let mut none = Vec::new();
            open("absent").read_to_end(&mut none).unwrap();
            assert!(none.is_empty());
            let mut reader = open("f2");
            let mut start = [0u8; 3];
            reader.read_exact(&mut start).unwrap();
            assert_eq!(&start, b"ok,");
            assert!(reader.read(&mut start).is_err(), "ahead: {ahead}");
        }
    }
}
