//! The monitor's HTTP server: `GET /metrics` (Prometheus text, or OpenMetrics when the client
//! asks for it), `GET /healthz`, `GET /status`; any other path is 404 and any other method 405.
//! It runs on its own thread with its own single-threaded runtime, so a slow or hostile client
//! costs that thread only, and a good client always gets through: at most [`MAX_CONNECTIONS`] at
//! once, and when they are all taken a newcomer takes the place of the oldest one that has not
//! said a byte (else that does not read its answers, else the oldest); a client silent for
//! [`FIRST_BYTE_TIMEOUT`] after connecting, or not reading for [`WRITE_TIMEOUT`], is closed; the
//! request head must arrive within [`HEAD_TIMEOUT`] and fit in 8 KiB; a connection lives at most
//! [`CONNECTION_TIMEOUT`]. Responses come from what the monitor last published.

use super::Board;
use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use std::convert::Infallible;
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

/// Connections served at once; a newcomer beyond takes the place of the least useful one.
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
    // HEAD wherever GET is served (RFC 9110); hyper sends the head without the body.
    if method != Method::GET && method != Method::HEAD {
        let mut r = reply(StatusCode::METHOD_NOT_ALLOWED, "text/plain", "only GET and HEAD\n");
        r.headers_mut().insert(hyper::header::ALLOW, hyper::header::HeaderValue::from_static("GET, HEAD"));
        return r;
    }
    let Some(p) = board.current() else {
        return reply(StatusCode::SERVICE_UNAVAILABLE, "text/plain", "starting: no measurement published yet\n");
    };
    match path {
        "/metrics" => {
            let om = accept.is_some_and(wants_openmetrics);
            reply(StatusCode::OK, if om { OPENMETRICS } else { TEXT }, p.metrics(om))
        }
        "/status" => reply(StatusCode::OK, "application/json", p.status),
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

/// Whether an `Accept` header prefers OpenMetrics to the text format: its media ranges are
/// matched without regard to case, `q=0` means not acceptable, and OpenMetrics is chosen when
/// its quality is above zero and at least that of `text/plain` (or `text/*`, `*/*`).
pub fn wants_openmetrics(accept: &str) -> bool {
    let (mut om, mut text) = (0.0f64, 0.0f64);
    for range in accept.split(',') {
        let mut parts = range.split(';').map(str::trim);
        let media = parts.next().unwrap_or("").to_ascii_lowercase();
        let q = parts
            .filter_map(|p| p.split_once('='))
            .find(|(k, _)| k.trim().eq_ignore_ascii_case("q"))
            .and_then(|(_, v)| v.trim().parse::<f64>().ok())
            .unwrap_or(1.0)
            .clamp(0.0, 1.0);
        match media.as_str() {
            "application/openmetrics-text" => om = om.max(q),
            "text/plain" | "text/*" | "*/*" => text = text.max(q),
            _ => {}
        }
    }
    om > 0.0 && om >= text
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

/// A connection's state, shared between its task and the accept loop.
#[derive(Debug)]
struct Conn {
    /// When it was accepted.
    accepted: std::time::Instant,
    /// It has sent at least one byte.
    spoke: AtomicBool,
    /// Since when its writes have made no progress (the client does not read), if they stall.
    write_stalled_since: std::sync::Mutex<Option<std::time::Instant>>,
    /// It has ended.
    done: AtomicBool,
    /// Told to close (to make room for a newcomer).
    evict: tokio::sync::Notify,
}

impl Conn {
    fn new() -> Arc<Conn> {
        Arc::new(Conn {
            accepted: std::time::Instant::now(),
            spoke: AtomicBool::new(false),
            write_stalled_since: std::sync::Mutex::new(None),
            done: AtomicBool::new(false),
            evict: tokio::sync::Notify::new(),
        })
    }

    fn stalled_for(&self) -> Option<Duration> {
        self.write_stalled_since.lock().unwrap_or_else(|e| e.into_inner()).map(|t| t.elapsed())
    }
}

/// The stream, noting whether its client has spoken and whether its writes progress.
struct Tracked {
    inner: tokio::net::TcpStream,
    conn: Arc<Conn>,
}

impl tokio::io::AsyncRead for Tracked {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let r = std::pin::Pin::new(&mut self.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.conn.spoke.store(true, Relaxed);
        }
        r
    }
}

impl tokio::io::AsyncWrite for Tracked {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        let r = std::pin::Pin::new(&mut self.inner).poll_write(cx, buf);
        let mut stalled = self.conn.write_stalled_since.lock().unwrap_or_else(|e| e.into_inner());
        match r {
            std::task::Poll::Pending => {
                stalled.get_or_insert_with(std::time::Instant::now);
            }
            _ => *stalled = None,
        }
        r
    }
    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// The connection to close so that a newcomer fits, when all [`MAX_CONNECTIONS`] are taken:
/// the oldest that has not said a byte, else the oldest whose client does not read its
/// answers, else the oldest of all. A client that connects and asks at once is always served.
fn victim(conns: &[Arc<Conn>]) -> Option<&Arc<Conn>> {
    let oldest = |f: &dyn Fn(&Conn) -> bool| conns.iter().filter(|c| f(c)).min_by_key(|c| c.accepted);
    // A connection accepted a moment ago may have sent its request without having been read
    // yet (a busy machine): it is not taken for a silent one.
    let settled = |c: &Conn| c.accepted.elapsed() > SETTLE;
    oldest(&|c| settled(c) && !c.spoke.load(Relaxed))
        .or_else(|| oldest(&|c| c.stalled_for().is_some()))
        .or_else(|| oldest(&settled))
        .or_else(|| oldest(&|_| true))
}

/// How long a new connection is given before it may be judged silent.
const SETTLE: Duration = Duration::from_millis(100);

/// A client that has not sent a byte this long after connecting is closed.
pub const FIRST_BYTE_TIMEOUT: Duration = Duration::from_secs(1);
/// A client that does not read its answers for this long is closed.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(2);

/// Ends when `conn` should be closed: evicted, silent past [`FIRST_BYTE_TIMEOUT`], or not
/// reading past [`WRITE_TIMEOUT`].
async fn watchdog(conn: Arc<Conn>) {
    loop {
        tokio::select! {
            _ = conn.evict.notified() => return,
            _ = tokio::time::sleep(Duration::from_millis(100)) => {}
        }
        if !conn.spoke.load(Relaxed) && conn.accepted.elapsed() > FIRST_BYTE_TIMEOUT {
            return;
        }
        if conn.stalled_for().is_some_and(|d| d > WRITE_TIMEOUT) {
            return;
        }
    }
}

async fn serve(listener: TcpListener, board: Board, stop: Arc<AtomicBool>) {
    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else { return };
    let mut conns: Vec<Arc<Conn>> = Vec::new();
    while !stop.load(Relaxed) {
        let accepted = tokio::time::timeout(Duration::from_millis(100), listener.accept()).await;
        let stream = match accepted {
            Ok(Ok((stream, _))) => stream,
            // Out of descriptors (EMFILE/ENFILE) or another accept error: wait instead of
            // spinning on a listener that stays readable.
            Ok(Err(_)) => {
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
            Err(_) => continue,
        };
        conns.retain(|c| !c.done.load(Relaxed));
        if conns.len() >= MAX_CONNECTIONS {
            if let Some(v) = victim(&conns) {
                v.evict.notify_one();
                let v = Arc::clone(v);
                conns.retain(|c| !Arc::ptr_eq(c, &v));
            }
        }
        let conn = Conn::new();
        conns.push(Arc::clone(&conn));
        let board = board.clone();
        tokio::spawn(async move {
            let io = hyper_util::rt::TokioIo::new(Tracked { inner: stream, conn: Arc::clone(&conn) });
            let service = hyper::service::service_fn(move |req: Request<Incoming>| {
                let accept = req.headers().get(hyper::header::ACCEPT).and_then(|v| v.to_str().ok()).map(String::from);
                let r = respond(&board, req.method(), req.uri().path(), accept.as_deref());
                async move { Ok::<_, Infallible>(r) }
            });
            let served = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(HEAD_TIMEOUT)
                .max_buf_size(8192)
                .serve_connection(io, service);
            tokio::select! {
                _ = tokio::time::timeout(CONNECTION_TIMEOUT, served) => {}
                _ = watchdog(Arc::clone(&conn)) => {}
            }
            conn.done.store(true, Relaxed);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_headers_are_weighed_by_quality_and_matched_without_case() {
        assert!(wants_openmetrics("application/openmetrics-text; version=1.0.0"));
        assert!(wants_openmetrics("Application/OpenMetrics-Text;version=1.0.0,text/plain;q=0.5"));
        assert!(!wants_openmetrics("application/openmetrics-text;q=0, text/plain"));
        assert!(!wants_openmetrics("text/plain, application/openmetrics-text;q=0.5"));
        assert!(!wants_openmetrics("text/plain;version=0.0.4"));
        // Prometheus's own header.
        assert!(wants_openmetrics(
            "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
        ));
    }
}
