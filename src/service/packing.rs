//! An upload's body packed into its stored chunks while it arrives.
//!
//! The receiving task gathers the body into [`blobs::CHUNK`]s and hands
//! each to a blocking task, which packs it ([`blobs::Packed`]) and keeps
//! it while the next chunk arrives: in memory up to [`MEMORY`] packed
//! bytes, then in an unnamed temporary file the system removes when it is
//! closed. When the body has ended, the kept chunks go to the store as
//! they are.
//!
//! Packed only once whole, as it is written to the store, the body's
//! packing (22 ms for a 17 MB JSON file) would wait for the last byte,
//! though the receiving task leaves a core free. Nothing reaches the
//! database until the body is whole (API.md section 10).

use std::io::{BufReader, BufWriter, Seek};

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::{Error, Result};
use crate::store::{self, blobs};

/// How many packed bytes are kept in memory; past it, the chunks go to a
/// temporary file. A CSV packs about four times, JSON about eight, so a
/// 16 MiB body usually stays in memory.
const MEMORY: usize = 4 * blobs::CHUNK;

/// The receiving side: each chunk, once full, is packed on a blocking
/// thread while the next one arrives. No thread waits on the client: a
/// task packs one chunk and ends, so a stalled upload holds a chunk of
/// memory and its kept chunks, never one of the runtime's threads.
#[derive(Default)]
pub struct Packer {
    chunk: Vec<u8>,
    /// The chunks packed so far, while no task has them.
    idle: Kept,
    /// The task packing the last full chunk, with the chunks before it.
    packing: Option<JoinHandle<std::io::Result<Kept>>>,
}

impl Packer {
    /// Takes the next piece of the body.
    pub async fn push(&mut self, mut piece: &[u8]) -> Result<()> {
        while !piece.is_empty() {
            if self.chunk.capacity() == 0 {
                self.chunk.reserve_exact(blobs::CHUNK);
            }
            let take = (blobs::CHUNK - self.chunk.len()).min(piece.len());
            self.chunk.extend_from_slice(&piece[..take]);
            piece = &piece[take..];
            if self.chunk.len() == blobs::CHUNK {
                self.send().await?;
            }
        }
        Ok(())
    }

    /// Hands the full chunk to a task of its own, once the one before has
    /// packed its chunk.
    async fn send(&mut self) -> Result<()> {
        let full = std::mem::take(&mut self.chunk);
        let mut kept = self.settle().await?;
        self.packing = Some(tokio::task::spawn_blocking(move || {
            kept.keep(full)?;
            Ok(kept)
        }));
        Ok(())
    }

    /// The chunks packed so far, once the last task has packed its own.
    async fn settle(&mut self) -> Result<Kept> {
        match self.packing.take() {
            Some(task) => task
                .await
                .map_err(Error::internal)?
                .map_err(Error::internal),
            None => Ok(std::mem::take(&mut self.idle)),
        }
    }

    /// The body has ended: every chunk, packed.
    pub async fn finish(mut self) -> Result<Kept> {
        if !self.chunk.is_empty() {
            self.send().await?;
        }
        self.settle().await
    }
}

/// An upload's chunks, packed, in order: the first in memory, the rest
/// (past [`MEMORY`]) in a temporary file.
#[derive(Default)]
pub struct Kept {
    memory: Vec<blobs::Packed>,
    held: usize,
    file: Option<BufWriter<std::fs::File>>,
    /// Whether the body is a zip (XLSX, ODS), from its first chunk: its
    /// chunks are kept as they came ([`blobs::Packed::as_is`]).
    zipped: Option<bool>,
}

impl Kept {
    fn keep(&mut self, raw: Vec<u8>) -> std::io::Result<()> {
        let zipped = *self
            .zipped
            .get_or_insert_with(|| crate::ingest::is_zip(&raw));
        let packed = if zipped {
            blobs::Packed::as_is(raw)
        } else {
            blobs::Packed::new(raw)
        };
        if self.file.is_none() && self.held + packed.stored_len() <= MEMORY {
            self.held += packed.stored_len();
            self.memory.push(packed);
            return Ok(());
        }
        let file = match &mut self.file {
            Some(file) => file,
            None => self
                .file
                .insert(BufWriter::with_capacity(1 << 16, tempfile::tempfile()?)),
        };
        packed.write_to(file)
    }

    /// Each chunk in order, to `each`, until it refuses one.
    fn each(self, mut each: impl FnMut(blobs::Packed) -> bool) -> std::io::Result<()> {
        for packed in self.memory {
            if !each(packed) {
                return Ok(());
            }
        }
        let Some(file) = self.file else {
            return Ok(());
        };
        // Every chunk's bytes written before the file is read again.
        let mut file = file.into_inner().map_err(|e| e.into_error())?;
        file.rewind()?;
        let mut file = BufReader::with_capacity(1 << 16, file);
        while let Some(packed) = blobs::Packed::read_from(&mut file)? {
            if !each(packed) {
                return Ok(());
            }
        }
        Ok(())
    }

    /// Stores the chunks under `upload_id`, read from the temporary file
    /// on a blocking thread while the one before is written.
    pub async fn store(self, conn: &mut store::Conn<'_>, upload_id: &str) -> Result<()> {
        let (tx, mut rx) = mpsc::channel(1);
        let reader = tokio::task::spawn_blocking(move || {
            let each = |packed| tx.blocking_send(Ok(packed)).is_ok();
            if let Err(e) = self.each(each) {
                let _ = tx.blocking_send(Err(e));
            }
        });
        let mut seq = 0i64;
        while let Some(chunk) = rx.recv().await {
            let chunk: blobs::Packed = chunk.map_err(Error::internal)?;
            blobs::put_chunk(conn, upload_id, seq, &chunk).await?;
            seq += 1;
        }
        // A reader that panicked closed the channel early: not a whole file.
        reader.await.map_err(Error::internal)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Packs `body` in pieces of `piece` bytes and gives its chunks back.
    fn packed(body: &[u8], piece: usize) -> Vec<blobs::Packed> {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let kept = runtime.block_on(async {
            let mut packer = Packer::default();
            for part in body.chunks(piece) {
                packer.push(part).await.unwrap();
            }
            packer.finish().await.unwrap()
        });
        let mut chunks = Vec::new();
        kept.each(|p| {
            chunks.push(p);
            true
        })
        .unwrap();
        chunks
    }

    fn unpacked(chunks: Vec<blobs::Packed>) -> Vec<u8> {
        chunks
            .into_iter()
            .flat_map(|c| c.unpack().unwrap())
            .collect()
    }

    #[test]
    fn a_body_comes_back_whole_in_chunks_from_memory_and_file() {
        // Noise does not compress: past four chunks the rest goes to the
        // temporary file, so both halves of `each` are crossed.
        let noise = blobs::noise(6 * blobs::CHUNK + 12_345);
        for piece in [1_000, 65_536, blobs::CHUNK + 7] {
            let chunks = packed(&noise, piece);
            assert_eq!(chunks.len(), 7);
            assert!(chunks[..6].iter().all(|c| c.stored_len() == blobs::CHUNK));
            assert_eq!(unpacked(chunks), noise, "pieces of {piece}");
        }
    }

    #[test]
    fn a_zips_chunks_are_kept_as_they_came_and_others_compressed() {
        let text = b"Pelanggan,0812345678,Bandung\n".repeat(100_000);
        let plain = packed(&text, 16_384);
        assert_eq!(plain.len(), 3);
        assert!(plain.iter().all(|c| !c.kept_as_is()));
        assert_eq!(unpacked(plain), text);
        // The same bytes after a zip's signature: every chunk, not only
        // the first, is stored as it came.
        let zip = [b"PK\x03\x04".as_slice(), &text].concat();
        let zipped = packed(&zip, 16_384);
        assert_eq!(zipped.len(), 3);
        assert!(zipped.iter().all(|c| c.kept_as_is()));
        assert_eq!(unpacked(zipped), zip);
    }
}
