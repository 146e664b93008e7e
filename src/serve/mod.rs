//! `rtlab monitor`'s HTTP side: the Prometheus exposition of a snapshot of the probes'
//! statistics ([`exposition`]) and the server that answers `GET /metrics`, `/healthz` and
//! `/status` from its own thread ([`http`]). The server reads only what the monitor publishes
//! once a second ([`Published`]); it never touches the probes or their memory.

pub mod exposition;
pub mod http;

use std::sync::{Arc, Mutex};
use std::time::Instant;

/// What the monitor publishes for the server, replaced whole once a second.
#[derive(Clone, Debug)]
pub struct Published {
    /// The metrics.
    pub snapshot: Arc<exposition::Snapshot>,
    /// The current RunResult as JSON (`/status`).
    pub status: Arc<Vec<u8>>,
    /// When it was published.
    pub at: Instant,
    /// `None` when the probes are alive and on schedule, else why not (`/healthz`).
    pub unhealthy: Option<String>,
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
