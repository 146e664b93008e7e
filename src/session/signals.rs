//! SIGINT/SIGTERM/SIGHUP end a run cleanly (a second one exits at once, tracing switched
//! off); SIGUSR1 asks for the current table. Installed first thing in `main`.

use crate::rt::signals;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;

/// Flags shared between the pipeline and the signal handlers.
#[derive(Debug, Clone, Default)]
pub struct Signals {
    /// Set by SIGINT/SIGTERM/SIGHUP (a second one exits at once).
    pub stop: Arc<AtomicBool>,
    /// Set by SIGUSR1.
    pub status: Arc<AtomicBool>,
}

static INSTALLED: std::sync::OnceLock<Signals> = std::sync::OnceLock::new();

/// The handler that makes SIGHUP stop the run, while it is installed.
static HUP_STOPS: std::sync::Mutex<Option<signal_hook::SigId>> = std::sync::Mutex::new(None);

impl Signals {
    /// Installs the handlers once per process (later calls return the same flags): SIGINT,
    /// SIGTERM and SIGHUP (a closed terminal, an SSH drop) set `stop`; a second one while `stop`
    /// is set exits at once with 130, tracing switched off and rtlab's tracefs instance removed
    /// first; SIGUSR1 sets `status`. Then the signals are unblocked, so that one sent before the
    /// handlers existed (pending under a parent's mask) is handled now, not lost. `main` calls
    /// this first thing: a Ctrl-C in the first millisecond ends a run cleanly.
    pub fn install() -> std::io::Result<Signals> {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM, SIGUSR1};
        if let Some(s) = INSTALLED.get() {
            return Ok(s.clone());
        }
        let s = Signals::default();
        for sig in [SIGINT, SIGTERM] {
            signals::on_stop_signal(sig, Arc::clone(&s.stop))?;
        }
        let hup = signals::on_stop_signal(SIGHUP, Arc::clone(&s.stop))?;
        *HUP_STOPS.lock().unwrap_or_else(|e| e.into_inner()) = Some(hup);
        signal_hook::flag::register(SIGUSR1, Arc::clone(&s.status))?;
        let s = INSTALLED.get_or_init(|| s).clone();
        signals::unblock_in_current_thread(&[SIGINT, SIGTERM, SIGHUP, SIGUSR1])?;
        Ok(s)
    }

    /// From now on SIGHUP does not stop the run (`rtlab monitor --json` rotates its window on
    /// it instead).
    pub fn hup_does_not_stop(&self) {
        if let Some(id) = HUP_STOPS.lock().unwrap_or_else(|e| e.into_inner()).take() {
            signals::remove_handler(id);
        }
    }

    /// For a command that measures nothing: from now on SIGINT/SIGTERM end the process at once
    /// (exit 130), and one that already came ends it now.
    pub fn exit_on_signal(&self) {
        if self.stop.swap(true, Relaxed) {
            std::process::exit(130);
        }
    }
}
