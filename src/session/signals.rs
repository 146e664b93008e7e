//! SIGINT/SIGTERM end a run cleanly (a second one exits at once); SIGUSR1 asks for the
//! current table. Installed first thing in `main`.

use crate::rt::signals;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;

/// Flags shared between the pipeline and the signal handlers.
#[derive(Debug, Clone, Default)]
pub struct Signals {
    /// Set by SIGINT/SIGTERM (a second SIGINT exits at once).
    pub stop: Arc<AtomicBool>,
    /// Set by SIGUSR1.
    pub status: Arc<AtomicBool>,
}

static INSTALLED: std::sync::OnceLock<Signals> = std::sync::OnceLock::new();

impl Signals {
    /// Installs the handlers once per process (later calls return the same flags): SIGINT/
    /// SIGTERM set `stop` (a second SIGINT or SIGTERM while `stop` is set exits at once with
    /// 130), SIGUSR1 sets `status`. Then the three signals are unblocked, so that one sent
    /// before the handlers existed (pending under a parent's mask) is handled now, not lost.
    /// `main` calls this first thing: a Ctrl-C in the first millisecond ends a run cleanly.
    pub fn install() -> std::io::Result<Signals> {
        use signal_hook::consts::{SIGINT, SIGTERM, SIGUSR1};
        if let Some(s) = INSTALLED.get() {
            return Ok(s.clone());
        }
        let s = Signals::default();
        for sig in [SIGINT, SIGTERM] {
            signal_hook::flag::register_conditional_shutdown(sig, 130, Arc::clone(&s.stop))?;
            signal_hook::flag::register(sig, Arc::clone(&s.stop))?;
        }
        signal_hook::flag::register(SIGUSR1, Arc::clone(&s.status))?;
        let s = INSTALLED.get_or_init(|| s).clone();
        signals::unblock_in_current_thread(&[SIGINT, SIGTERM, SIGUSR1])?;
        Ok(s)
    }

    /// For a command that measures nothing: from now on SIGINT/SIGTERM end the process at once
    /// (exit 130), and one that already came ends it now.
    pub fn exit_on_signal(&self) {
        if self.stop.swap(true, Relaxed) {
            std::process::exit(130);
        }
    }
}
