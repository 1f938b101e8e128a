//! Serving connections with the limits of API.md section 10 that
//! `axum::serve` cannot set: a request head must arrive within
//! `header_read`, an idle keep-alive connection closes after `idle`, and
//! connections are capped in all (new ones wait) and per client address
//! (new ones are refused; those open keep working).
//!
//! hyper's own `header_read_timeout` also runs while a kept-alive
//! connection waits for its next request, so it cannot tell a slow head
//! from an idle connection; the watchdog here can, from the bytes the
//! connection reads and the requests it has in flight. Request bodies are
//! timed where they are read ([`crate::service::uploads`]).

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::ConnectInfo;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, watch};
use tower::ServiceExt;

use crate::config::Connections;

/// Serves `router` on `listener` until `stop` turns true, then lets the
/// requests in flight finish.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: Connections,
    mut stop: watch::Receiver<bool>,
) {
    let open = Arc::new(Semaphore::new(limits.max_open.max(1)));
    let addresses = Arc::new(PerAddress::default());
    let graceful = GracefulShutdown::new();
    loop {
        let permit = tokio::select! {
            p = open.clone().acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => break,
            },
            () = stopped(&mut stop) => break,
        };
        let (stream, addr) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // Out of file descriptors and the like: wait, then go on.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = stopped(&mut stop) => break,
        };
        let Some(slot) = addresses.take(addr.ip(), limits.max_per_address) else {
            metrics::counter!("importgate_connections_refused_total").increment(1);
            drop(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let activity = Arc::new(Activity::new());
        let io = TokioIo::new(Watched {
            inner: stream,
            activity: activity.clone(),
        });
        let service = per_connection(router.clone(), addr, activity.clone());
        let conn = hyper::server::conn::http1::Builder::new()
            .timer(TokioTimer::new())
            .keep_alive(true)
            .serve_connection(io, TowerToHyperService::new(service));
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            let _permit = permit;
            let _slot = slot;
            tokio::select! {
                done = conn => {
                    if let Err(e) = done {
                        tracing::debug!(error = %e, "connection ended with an error");
                    }
                }
                why = activity.expired(limits) => {
                    tracing::debug!(reason = why, "connection closed");
                }
            }
        });
    }
    graceful.shutdown().await;
}

/// Resolves when the service is told to stop (the watch's guard is
/// dropped here, not held across the accept loop's awaits).
async fn stopped(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await;
}

/// The router for one connection: it knows the client's address (as
/// `axum::serve` would tell it) and counts the requests in flight.
fn per_connection(
    router: Router,
    addr: SocketAddr,
    activity: Arc<Activity>,
) -> impl tower::Service<
    axum::extract::Request<hyper::body::Incoming>,
    Response = axum::response::Response,
    Error = std::convert::Infallible,
    Future = impl Send,
> + Clone {
    tower::service_fn(
        move |mut req: axum::extract::Request<hyper::body::Incoming>| {
            req.extensions_mut().insert(ConnectInfo(addr));
            let busy = Busy::new(activity.clone());
            let router = router.clone();
            async move {
                let mut resp = router.oneshot(req.map(axum::body::Body::new)).await;
                match &mut resp {
                    // A stream of events is in flight for as long as it is
                    // open: between its messages the connection is not idle.
                    Ok(r) if is_event_stream(r) => {
                        let body = std::mem::take(r.body_mut()).into_data_stream();
                        *r.body_mut() = axum::body::Body::from_stream(futures::StreamExt::map(
                            body,
                            move |chunk| {
                                let _open = &busy;
                                chunk
                            },
                        ));
                    }
                    _ => drop(busy),
                }
                resp
            }
        },
    )
}

/// Whether an answer is a stream of server-sent events.
fn is_event_stream(r: &axum::response::Response) -> bool {
    r.headers()
        .get(axum::http::header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"))
}

/// Open connections per client address.
#[derive(Default)]
struct PerAddress(Mutex<HashMap<IpAddr, usize>>);

impl PerAddress {
    fn take(self: &Arc<Self>, ip: IpAddr, max: usize) -> Option<AddressSlot> {
        let mut open = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let n = open.entry(ip).or_insert(0);
        if *n >= max {
            return None;
        }
        *n += 1;
        Some(AddressSlot {
            ip,
            of: self.clone(),
        })
    }
}

/// One open connection of an address; gives its place back when dropped.
struct AddressSlot {
    ip: IpAddr,
    of: Arc<PerAddress>,
}

impl Drop for AddressSlot {
    fn drop(&mut self) {
        let mut open = self.of.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = open.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                open.remove(&self.ip);
            }
        }
    }
}

/// What a connection is doing, for its watchdog.
struct Activity(Mutex<State>);

struct State {
    in_flight: usize,
    /// Since when a request head is arriving (a new connection is reading
    /// its first head from the start).
    head_since: Option<Instant>,
    /// Since when the connection has had nothing to do.
    idle_since: Instant,
}

impl Activity {
    fn new() -> Activity {
        let now = Instant::now();
        Activity(Mutex::new(State {
            in_flight: 0,
            head_since: Some(now),
            idle_since: now,
        }))
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Bytes came in: outside a request, a new head has begun.
    fn read_some(&self) {
        let mut s = self.state();
        if s.in_flight == 0 && s.head_since.is_none() {
            s.head_since = Some(Instant::now());
        }
    }

    /// When the connection's wait would end it, and why; `None` while a
    /// request is in flight (its time is not the connection's to judge).
    fn deadline(&self, limits: Connections) -> Option<(Instant, &'static str)> {
        let s = self.state();
        match (s.in_flight, s.head_since) {
            (1.., _) => None,
            (0, Some(since)) => Some((since + limits.header_read, "header read timeout")),
            (0, None) => Some((s.idle_since + limits.idle, "idle")),
        }
    }

    /// Resolves when the connection has waited too long: for a request
    /// head, or idle. It sleeps until the next moment that could end the
    /// connection, so thousands of quiet connections cost no wake-ups.
    async fn expired(&self, limits: Connections) -> &'static str {
        loop {
            let wake = match self.deadline(limits) {
                Some((at, _)) => at,
                None => Instant::now() + limits.header_read,
            };
            tokio::time::sleep_until(wake.into()).await;
            if let Some((at, why)) = self.deadline(limits)
                && at <= Instant::now()
            {
                return why;
            }
        }
    }
}

/// A request in flight on a connection.
struct Busy(Arc<Activity>);

impl Busy {
    fn new(activity: Arc<Activity>) -> Busy {
        {
            let mut s = activity.state();
            s.in_flight += 1;
            s.head_since = None;
        }
        Busy(activity)
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        let mut s = self.0.state();
        s.in_flight -= 1;
        if s.in_flight == 0 {
            s.idle_since = Instant::now();
        }
    }
}

/// A socket that tells its connection's [`Activity`] when bytes arrive.
struct Watched {
    inner: TcpStream,
    activity: Arc<Activity>,
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.activity.read_some();
        }
        polled
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
