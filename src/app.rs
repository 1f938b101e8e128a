//! The running service: what the HTTP layer and the workers share, and
//! starting it all on a listener.

use std::sync::Arc;

use tokio::net::TcpListener;
use tokio::sync::{Notify, watch};

use crate::catalog::Catalog;
use crate::config::Settings;
use crate::http::limits::Limiter;
use crate::keys::{self, Role};
use crate::store::{self, Db};

/// Shared state of one process.
pub struct App {
    pub db: Db,
    pub catalog: Arc<Catalog>,
    pub settings: Settings,
    /// Woken when a job needs a worker (an upload, an approval).
    pub work: Notify,
    /// Woken (all waiters) whenever this process moves a job.
    pub job_moved: Notify,
    /// Flips to true when the process is shutting down.
    pub shutdown: watch::Sender<bool>,
    /// Requests per key counted by this process.
    pub limiter: Limiter,
}

impl App {
    /// Connects, migrates, and loads the catalog.
    pub async fn open(settings: Settings) -> anyhow::Result<Arc<App>> {
        let catalog = match &settings.catalog {
            Some(path) => Catalog::from_file(path)?,
            None => Catalog::builtin(),
        };
        let db = Db::connect(&settings.database).await?;
        db.migrate(&catalog).await?;
        let (shutdown, _) = watch::channel(false);
        let limiter = Limiter::new(
            settings.limits.uploads_per_minute,
            settings.limits.requests_per_minute,
        );
        Ok(Arc::new(App {
            limiter,
            db,
            catalog: Arc::new(catalog),
            settings,
            work: Notify::new(),
            job_moved: Notify::new(),
            shutdown,
        }))
    }

    /// On a database with no keys at all, makes one admin key and returns
    /// its secret (to be shown once).
    pub async fn first_admin_key(&self) -> anyhow::Result<Option<String>> {
        let mut tx = self.db.begin().await?;
        store::lock(&mut tx.conn(), store::Lock::FirstKey).await?;
        if store::keys::count(&mut tx.conn()).await? > 0 {
            tx.rollback().await?;
            return Ok(None);
        }
        let key = keys::generate();
        store::keys::insert(
            &mut tx.conn(),
            &key,
            "admin",
            Role::Admin,
            &["*".to_string()],
            None,
        )
        .await?;
        tx.commit().await?;
        Ok(Some(key.secret))
    }

    /// Serves HTTP on `listener` and runs the workers until shutdown is
    /// signalled (SIGTERM / Ctrl-C, or [`App::shutdown`]).
    pub async fn serve(self: Arc<Self>, listener: TcpListener) -> anyhow::Result<()> {
        let workers = crate::worker::spawn(self.clone());
        let router = crate::http::router(self.clone());
        let mut stop = self.shutdown.subscribe();
        let app = self.clone();
        tokio::spawn(async move {
            wait_for_signal().await;
            let _ = app.shutdown.send(true);
        });
        axum::serve(listener, router)
            .with_graceful_shutdown(async move {
                let _ = stop.wait_for(|s| *s).await;
            })
            .await?;
        for w in workers {
            let _ = w.await;
        }
        self.db.close().await;
        Ok(())
    }
}

async fn wait_for_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(s) => s,
                Err(_) => {
                    let _ = ctrl_c.await;
                    return;
                }
            };
        tokio::select! {
            _ = ctrl_c => {},
            _ = term.recv() => {},
        }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
}
