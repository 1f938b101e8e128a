//! The ledger's seal (API.md section 9), what makes rewriting history need
//! more than access to the database:
//! - the key its chain is keyed with, in a file outside the database,
//!   created on first start; the database keeps only its fingerprint, so
//!   a service started with another key refuses to extend the chain;
//! - the checkpoint file, where the service appends the chain's head
//!   (number of links and last hash) after every gate decision and key
//!   event, at a graceful stop, and at least once a minute, so that
//!   deleting the newest events is found.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use chrono::Utc;

use crate::config::Settings;
use crate::ledger::chain::ChainKey;
use crate::store::{self, Db};

/// Appends the chain's head to the checkpoint file now: after a gate
/// decision or a key event is committed, and at a graceful stop. A failure
/// to write it is logged; what was committed stands.
pub async fn checkpoint_now(app: &super::App) {
    if let Err(e) = app.seal.checkpoint(&app.db).await {
        tracing::warn!(error = %e, "could not append the ledger's head to the checkpoint");
    }
}

/// The key and the checkpoint of one process.
pub struct Seal {
    pub key: ChainKey,
    checkpoint: PathBuf,
    /// The number of links last written to the checkpoint; held while
    /// writing, so that heads written by one process never go backwards.
    written: tokio::sync::Mutex<i64>,
}

impl Seal {
    /// Reads (or, on a ledger not yet sealed, creates) the key file, and
    /// seals the chain with it when it is not yet: a ledger written before
    /// the chain was keyed is checked and rehashed under the key.
    pub async fn open(db: &Db, settings: &Settings) -> anyhow::Result<Seal> {
        let (key_file, checkpoint) = settings.ledger_files();
        let mut tx = db.begin().await?;
        let sealed_with = store::ledger::fingerprint(&mut tx.conn()).await?;
        let (key, created) = match (read_key(&key_file)?, &sealed_with) {
            (Some(key), _) => (key, false),
            (None, None) => (create_key(&key_file)?, true),
            (None, Some(_)) => bail!(
                "the ledger key file {} is missing, and this database's ledger is sealed with a key: \
                 restore the file (or point ledger_key_file / IMPORTGATE_LEDGER_KEY_FILE at it); \
                 every replica needs the same key",
                key_file.display()
            ),
        };
        match sealed_with {
            Some(f) if f != key.fingerprint() => bail!(
                "the ledger key in {} is not the key this database's ledger is sealed with \
                 (fingerprint {f}); every replica needs the same key file",
                key_file.display()
            ),
            Some(_) => tx.rollback().await?,
            None => {
                // A ledger written before the chain was keyed is sealed
                // only by the start that makes its key. Events in an
                // unsealed database beside an existing key mean the seal
                // was removed behind the service's back (to have a
                // rehashed chain sealed): refused, never laundered.
                let (links, _) = store::ledger::head(&mut tx.conn()).await?;
                if links > 0 && !created {
                    bail!(
                        "this database's ledger holds {links} events but is not sealed, while the key \
                         {} exists: the seal was removed; run `importgate ledger verify`",
                        key_file.display()
                    );
                }
                store::ledger::seal(&mut tx.conn(), &key).await?;
                tx.commit().await?;
            }
        }
        Ok(Seal {
            key,
            checkpoint,
            written: tokio::sync::Mutex::new(0),
        })
    }

    /// Appends the chain's head to the checkpoint file if it grew since
    /// this process last wrote it.
    pub async fn checkpoint(&self, db: &Db) -> anyhow::Result<()> {
        let mut written = self.written.lock().await;
        let mut c = db.acquire().await?;
        let (links, hash) = store::ledger::head(&mut c.conn()).await?;
        drop(c);
        if links <= *written {
            return Ok(());
        }
        let line = format!("{links} {hash} {}\n", Utc::now().to_rfc3339());
        let path = self.checkpoint.clone();
        tokio::task::spawn_blocking(move || append_line(&path, &line)).await??;
        *written = links;
        Ok(())
    }
}

/// The key in `path`, if the file exists.
pub fn read_key(path: &Path) -> anyhow::Result<Option<ChainKey>> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    let bytes: [u8; 32] = hex::decode(text.trim())
        .ok()
        .and_then(|b| b.try_into().ok())
        .with_context(|| {
            format!(
                "{} does not hold a ledger key (64 hexadecimal digits)",
                path.display()
            )
        })?;
    Ok(Some(ChainKey::new(bytes)))
}

/// Makes a new random key in `path`, readable by its owner only. When
/// another process made it first (replicas starting together), that key.
fn create_key(path: &Path) -> anyhow::Result<ChainKey> {
    let bytes: [u8; 32] = rand::random();
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    match options.open(path) {
        Ok(mut f) => {
            f.write_all(format!("{}\n", hex::encode(bytes)).as_bytes())?;
            f.sync_all()?;
            tracing::info!(file = %path.display(), "created the ledger key; keep it, and back it up apart from the database");
            Ok(ChainKey::new(bytes))
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            read_key(path)?.with_context(|| format!("{} vanished", path.display()))
        }
        Err(e) => Err(e).with_context(|| format!("creating the ledger key {}", path.display())),
    }
}

fn append_line(path: &Path, line: &str) -> anyhow::Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .with_context(|| format!("opening the ledger checkpoint {}", path.display()))?;
    f.write_all(line.as_bytes())?;
    f.sync_data()?;
    Ok(())
}

/// The last head recorded in a checkpoint file: `(links, hash)`. Lines
/// that are not heads (a torn last write) are passed over.
pub fn last_checkpoint(path: &Path) -> anyhow::Result<Option<(i64, String)>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading the ledger checkpoint {}", path.display()))?;
    Ok(text.lines().rev().find_map(|line| {
        let mut parts = line.split_whitespace();
        let links = parts.next()?.parse::<i64>().ok()?;
        let hash = parts.next().filter(|h| h.len() == 64)?;
        Some((links, hash.to_string()))
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_made_once_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("k");
        assert!(read_key(&path).unwrap().is_none());
        let made = create_key(&path).unwrap();
        let again = create_key(&path).unwrap();
        assert_eq!(made.fingerprint(), again.fingerprint());
        assert_eq!(
            read_key(&path).unwrap().unwrap().fingerprint(),
            made.fingerprint()
        );
        std::fs::write(&path, "not a key").unwrap();
        assert!(read_key(&path).is_err());
    }

    #[test]
    fn the_last_whole_head_is_the_checkpoint() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c");
        let h = "a".repeat(64);
        std::fs::write(&path, format!("3 {h} t\n7 {h} t\n9 abc")).unwrap();
        assert_eq!(last_checkpoint(&path).unwrap(), Some((7, h)));
    }
}
