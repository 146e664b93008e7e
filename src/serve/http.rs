//! The monitor's HTTP server: `GET /metrics` (Prometheus text, or OpenMetrics when the client
//! asks for it), `GET /healthz`, `GET /status`; any other path is 404 and any other method 405.
//! It runs on its own thread with its own single-threaded runtime, so a slow or hostile client
//! costs that thread only: at most [`MAX_CONNECTIONS`] at once (more are closed at once), the
//! request head must arrive within [`HEAD_TIMEOUT`] and fit in 8 KiB, and a connection lives at
//! most [`CONNECTION_TIMEOUT`]. Responses come from what the monitor last published.

use super::{exposition, Board};
use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use std::convert::Infallible;
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

/// Connections served at once; more are closed as soon as they are accepted.
pub const MAX_CONNECTIONS: usize = 64;
/// Time for a request's head to arrive.
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(5);
/// Longest life of one connection (keep-alive included).
pub const CONNECTION_TIMEOUT: Duration = Duration::from_secs(30);
/// A published snapshot older than this makes `/healthz` fail (the monitor stopped publishing).
pub const STALE: Duration = Duration::from_secs(5);

const TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";
const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

fn reply(status: StatusCode, content_type: &str, body: impl Into<Bytes>) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(body.into()));
    *r.status_mut() = status;
    if let Ok(v) = content_type.parse() {
        r.headers_mut().insert(hyper::header::CONTENT_TYPE, v);
    }
    r
}

/// The answer to `req` from what `board` holds.
pub fn respond(board: &Board, method: &Method, path: &str, accept: Option<&str>) -> Response<Full<Bytes>> {
    let known = matches!(path, "/metrics" | "/healthz" | "/status");
    if !known {
        return reply(StatusCode::NOT_FOUND, "text/plain", "not found: try /metrics, /healthz or /status\n");
    }
    if method != Method::GET {
        let mut r = reply(StatusCode::METHOD_NOT_ALLOWED, "text/plain", "only GET\n");
        r.headers_mut().insert(hyper::header::ALLOW, hyper::header::HeaderValue::from_static("GET"));
        return r;
    }
    let Some(p) = board.current() else {
        return reply(StatusCode::SERVICE_UNAVAILABLE, "text/plain", "starting: no measurement published yet\n");
    };
    match path {
        "/metrics" => {
            let om = accept.is_some_and(|a| a.contains("application/openmetrics-text"));
            let body = exposition::render(&p.snapshot, om);
            reply(StatusCode::OK, if om { OPENMETRICS } else { TEXT }, body)
        }
        "/status" => reply(StatusCode::OK, "application/json", Bytes::from((*p.status).clone())),
        _ => {
            let stale = p.at.elapsed() > STALE;
            match (&p.unhealthy, stale) {
                (None, false) => reply(StatusCode::OK, "text/plain", "ok\n"),
                (Some(why), _) => reply(StatusCode::SERVICE_UNAVAILABLE, "text/plain", format!("unhealthy: {why}\n")),
                (None, true) => reply(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "text/plain",
                    format!("unhealthy: nothing published for {} s\n", p.at.elapsed().as_secs()),
                ),
            }
        }
    }
}

/// A running server.
#[derive(Debug)]
pub struct Server {
    /// Where it listens.
    pub addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Server {
    /// Binds `addr` (here, so that a taken port is an error before anything is measured) and
    /// serves `board` from a thread of its own, pinned to `cpus` when given.
    pub fn start(addr: SocketAddr, board: Board, cpus: Option<crate::rt::affinity::CpuSet>) -> std::io::Result<Server> {
        let listener = TcpListener::bind(addr)?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::Builder::new().name("rtlab-http".into()).spawn(move || {
            if let Some(c) = &cpus {
                let _ = crate::rt::affinity::set_current_thread(c);
            }
            let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_io().enable_time().build() else {
                return;
            };
            rt.block_on(serve(listener, board, flag));
        })?;
        Ok(Server { addr, stop, thread: Some(thread) })
    }

    /// Stops serving (within 100 ms) and waits for the thread.
    pub fn stop(mut self) {
        self.stop.store(true, Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

async fn serve(listener: TcpListener, board: Board, stop: Arc<AtomicBool>) {
    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else { return };
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    while !stop.load(Relaxed) {
        let accepted = tokio::time::timeout(Duration::from_millis(100), listener.accept()).await;
        let Ok(Ok((stream, _))) = accepted else { continue };
        // Beyond the limit a connection is closed at once: it costs no memory and no wait.
        let Ok(permit) = Arc::clone(&slots).try_acquire_owned() else { continue };
        let board = board.clone();
        tokio::spawn(async move {
            let _permit = permit;
            let io = hyper_util::rt::TokioIo::new(stream);
            let service = hyper::service::service_fn(move |req: Request<Incoming>| {
                let accept = req.headers().get(hyper::header::ACCEPT).and_then(|v| v.to_str().ok()).map(String::from);
                let r = respond(&board, req.method(), req.uri().path(), accept.as_deref());
                async move { Ok::<_, Infallible>(r) }
            });
            let conn = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(HEAD_TIMEOUT)
                .max_buf_size(8192)
                .serve_connection(io, service);
            let _ = tokio::time::timeout(CONNECTION_TIMEOUT, conn).await;
        });
    }
}
