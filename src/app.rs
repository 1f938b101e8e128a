//! The running service: the one place that puts the parts together. Both
//! front doors (the API and the console) share one router over the same
//! service state ([`App`]), and the workers run beside them.

use std::sync::Arc;

use axum::Router;
use tokio::net::TcpListener;

pub use crate::service::App;

impl App {
    /// On a database with no keys at all, makes one admin key and returns
    /// its secret (to be shown once).
    pub async fn first_admin_key(&self) -> anyhow::Result<Option<String>> {
        Ok(crate::service::keys::first_admin_key(self).await?)
    }

    /// Serves HTTP on `listener` and runs the workers until shutdown is
    /// signalled (SIGTERM / Ctrl-C, or [`App::shutdown`]).
    pub async fn serve(self: Arc<Self>, listener: TcpListener) -> anyhow::Result<()> {
        let metrics_listener = match self.settings.metrics_listen {
            Some(addr) => Some(
                TcpListener::bind(addr)
                    .await
                    .map_err(|e| anyhow::anyhow!("cannot listen for metrics on {addr}: {e}"))?,
            ),
            None => None,
        };
        let owner = crate::worker::owner_prefix(self.settings.instance.as_deref());
        if let Some(instance) = &self.settings.instance {
            // Work an earlier process of this replica was doing when it
            // stopped need not wait for its leases to lapse.
            if let Err(e) = crate::service::work::take_back(&self, instance, &owner).await {
                tracing::warn!(error = %e, "could not take back the work of an earlier process");
            }
        }
        let workers = crate::worker::spawn(self.clone(), &owner);
        let router = router(self.clone());
        let stop = self.shutdown.subscribe();
        let app = self.clone();
        tokio::spawn(async move {
            wait_for_signal().await;
            let _ = app.shutdown.send(true);
        });
        if let Some(own) = metrics_listener {
            let router = crate::http::metrics::own_listener(self.clone());
            let limits = self.settings.connections;
            tokio::spawn(crate::http::listener::serve(
                own,
                router,
                limits,
                stop.clone(),
            ));
        }
        crate::http::listener::serve(listener, router, self.settings.connections, stop).await;
        for w in workers {
            let _ = w.await;
        }
        // The moves the workers made since the last checkpoint.
        crate::service::seal::checkpoint_now(&self).await;
        self.db.close().await;
        Ok(())
    }
}

/// Every route of the service: the API, the console, and the layers
/// around them both.
pub fn router(app: Arc<App>) -> Router {
    let routes = Router::new()
        .merge(crate::http::routes())
        .merge(crate::console::routes())
        .fallback(crate::console::not_found);
    crate::http::layered(routes).with_state(app)
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
