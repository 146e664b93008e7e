//! `rtlab monitor`'s HTTP side: the Prometheus exposition of a snapshot of the probes'
//! statistics ([`exposition`]) and the server that answers `GET /metrics`, `/healthz` and
//! `/status` from its own thread ([`http`]). The server reads only what the monitor publishes
//! once a second ([`Published`]); it never touches the probes or their memory.

pub mod exposition;
pub mod http;

use hyper::body::Bytes;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

/// What the monitor publishes for the server, replaced whole once a second. Its bodies are
/// made once per publication and shared by every answer: a flood of scrapes (pipelined
/// requests that are never read, say) costs copies of bytes, not a rendering each.
#[derive(Clone, Debug)]
pub struct Published {
    /// The metrics.
    pub snapshot: Arc<exposition::Snapshot>,
    /// The current RunResult as JSON (`/status`).
    pub status: Bytes,
    /// When it was published.
    pub at: Instant,
    /// `None` when the probes are alive and on schedule, else why not (`/healthz`).
    pub unhealthy: Option<String>,
    // The text exposition and the OpenMetrics one, each rendered at its first scrape.
    bodies: Arc<[OnceLock<Bytes>; 2]>,
}

impl Published {
    /// A publication of `snapshot`, `status` (the RunResult's JSON) and the health verdict, as of now.
    pub fn new(snapshot: exposition::Snapshot, status: Vec<u8>, unhealthy: Option<String>) -> Published {
        Published {
            snapshot: Arc::new(snapshot),
            status: Bytes::from(status),
            at: Instant::now(),
            unhealthy,
            bodies: Arc::default(),
        }
    }

    /// The `/metrics` body, OpenMetrics or text, rendered once for this publication.
    pub fn metrics(&self, openmetrics: bool) -> Bytes {
        self.bodies[usize::from(openmetrics)]
            .get_or_init(|| Bytes::from(exposition::render(&self.snapshot, openmetrics)))
            .clone()
    }
}

/// The shared slot: the monitor writes it, the server reads it; each holds the lock only to
/// swap or clone `Arc`s.
#[derive(Clone, Debug, Default)]
pub struct Board(Arc<Mutex<Option<Published>>>);

impl Board {
    /// Replaces what is published.
    pub fn publish(&self, p: Published) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(p);
    }

    /// What is published now (`None` before the first publication).
    pub fn current(&self) -> Option<Published> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_scrape_of_one_publication_shares_one_rendering_of_each_format() {
        let snapshot = exposition::Snapshot { version: "x".into(), ..Default::default() };
        let p = Published::new(snapshot.clone(), b"{}".to_vec(), None);
        let (a, b) = (p.metrics(false), p.clone().metrics(false));
        assert_eq!(a.as_ptr(), b.as_ptr(), "one rendering, shared");
        assert_eq!(&a[..], exposition::render(&snapshot, false).as_bytes());
        let om = p.metrics(true);
        assert_eq!(&om[..], exposition::render(&snapshot, true).as_bytes());
        assert_ne!(om, a);
    }
}
