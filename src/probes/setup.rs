//! What every probe that runs its own OS threads does the same way: the start line they wait
//! at after their setup, the scheduling they ask for (and its fallback), and waking them out of
//! a sleep when the run stops.

use super::{ProbeError, ThreadPlan, ThreadStatus};
use crate::measure::ring::SampleRing;
use crate::measure::stats::Live;
use crate::result::warning::Warning;
use crate::rt::affinity::{self, CpuSet};
use crate::rt::memory;
use crate::rt::privileges::Privileges;
use crate::rt::sched::{self, Policy, SchedParams};
use crate::rt::signals;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

/// Where the start line stands.
#[derive(PartialEq, Eq, Clone, Copy, Debug)]
pub enum GateState {
    /// Threads wait.
    Closed,
    /// Threads measure.
    Go,
    /// Threads leave without measuring.
    Abort,
}

/// The start line: threads wait here after setup and leave together.
pub struct Gate {
    state: Mutex<GateState>,
    cv: Condvar,
}

impl Gate {
    /// A closed gate.
    pub fn new() -> Gate {
        Gate { state: Mutex::new(GateState::Closed), cv: Condvar::new() }
    }

    /// Waits until the gate opens; says how.
    pub fn wait(&self) -> GateState {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        while *s == GateState::Closed {
            s = self.cv.wait(s).unwrap_or_else(|p| p.into_inner());
        }
        *s
    }
    /// Opens the gate: `Go` releases the threads, `Abort` sends them home.
    pub fn open(&self, to: GateState) {
        *self.state.lock().unwrap_or_else(|p| p.into_inner()) = to;
        self.cv.notify_all();
    }
}

impl Default for Gate {
    fn default() -> Self {
        Gate::new()
    }
}

/// Wakes every probe that is still sleeping until it has left its loop. A signal may land
/// just before a probe goes to sleep, so it is sent again every 5 ms; `--method sleep`
/// (Rust's `std::thread::sleep`, which resumes after signals) still sleeps out its period.
pub fn wake_until_finished(finished: &[AtomicBool], statuses: &[ThreadStatus]) {
    loop {
        let mut waiting = false;
        for s in statuses {
            if !finished[s.index].load(Relaxed) {
                waiting = true;
                let _ = signals::wake_thread(s.tid);
            }
        }
        if !waiting {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Applies the thread's policy; on refusal, falls back to the best allowed (an RT priority
/// clamped to RLIMIT_RTPRIO, else SCHED_OTHER) and says why.
pub fn apply_sched(tp: &ThreadPlan, privileges: &Privileges, warnings: &mut Vec<Warning>) {
    let asked = tp.sched;
    let Err(e) = sched::set_current_thread(&asked) else { return };
    let label = SchedParams::label;
    let why = match () {
        _ if crate::rt::not_permitted(&e) => privileges.explain_rt_denied(),
        _ if crate::rt::busy(&e) && asked.policy == Policy::Deadline => format!(
            "SCHED_DEADLINE admission control refused runtime {} ns per period {} ns (the CPUs' deadline bandwidth \
             is used up); fix: lower --dl-runtime or use fewer threads",
            asked.runtime_ns, asked.period_ns
        ),
        _ => e.to_string(),
    };
    let mut fallback = SchedParams::simple(Policy::Other, 0);
    if asked.policy.is_realtime_priority()
        && privileges.rlimit_rtprio > 0
        && u64::from(asked.priority) > privileges.rlimit_rtprio
    {
        let clamped = SchedParams::simple(asked.policy, privileges.rlimit_rtprio as u32);
        if sched::set_current_thread(&clamped).is_ok() {
            fallback = clamped;
        }
    }
    if fallback.policy == Policy::Other {
        let _ = sched::set_current_thread(&fallback);
    }
    warnings.push(Warning::PolicyDowngraded { thread: tp.index, asked: label(&asked), got: label(&fallback), why });
}

/// Stack touched before the first sample (a measuring thread's stack is 256 KiB).
pub const PREFAULT_BYTES: usize = 128 * 1024;

/// Enters a measuring thread: control signals blocked (they go to the reporting thread, never
/// into a sample), pinned to its CPU, its policy applied (with [`apply_sched`]'s fallback).
pub fn enter(tp: &ThreadPlan, privileges: &Privileges, warnings: &mut Vec<Warning>) {
    let _ = signals::block_in_current_thread(&[signals::SIGINT, signals::SIGTERM, signals::SIGUSR1, signals::SIGHUP]);
    if let Some(cpu) = tp.cpu {
        if let Err(e) = affinity::set_current_thread(&CpuSet::from_cpus([cpu])) {
            warnings.push(Warning::AffinityFailed { thread: tp.index, cpu, why: e.to_string() });
        }
    }
    apply_sched(tp, privileges, warnings);
}

/// Readies the calling thread to measure: a stop wakes it out of a sleep ([`signals::wake_signal`],
/// without `SA_RESTART`) once `stop` is set, and its stack, histogram and ring are touched so that
/// nothing faults in while measuring.
pub fn ready(stop: &AtomicBool, live: &Live, ring: Option<&SampleRing>) {
    let _ = signals::unblock_in_current_thread(&[signals::wake_signal()]);
    signals::interrupt_sleeps_on(Some(stop));
    memory::prefault_stack(PREFAULT_BYTES);
    live.hist.prefault();
    if let Some(r) = ring {
        r.prefault();
    }
}

/// In the starting thread once every measuring thread has set up (and touched what it uses):
/// locks memory (MCL_FUTURE only when locking is not limited: under a finite RLIMIT_MEMLOCK it
/// would make later allocations fail), pins the reporting thread, and with `strict` turns any
/// downgrade into an error. Returns whether memory is locked.
pub fn settle(
    mlockall: bool,
    main_affinity: Option<&CpuSet>,
    privileges: &Privileges,
    strict: bool,
    warnings: &mut Vec<Warning>,
) -> Result<bool, ProbeError> {
    let mut mlocked = false;
    if mlockall {
        let unlimited = privileges.cap_ipc_lock || privileges.rlimit_memlock_bytes.is_none();
        match memory::lock_all(unlimited) {
            Ok(()) => mlocked = true,
            Err(e) => {
                warnings.push(Warning::MlockFailed { why: format!("{e}; {}", privileges.explain_mlock_denied()) })
            }
        }
    }
    if let Some(cpus) = main_affinity {
        if let Err(e) = affinity::set_current_thread(cpus) {
            warnings.push(Warning::MainAffinityFailed { cpus: cpus.to_string(), why: e.to_string() });
        }
    }
    if strict {
        let downgrades: Vec<String> = warnings.iter().filter(|w| w.is_downgrade()).map(Warning::message).collect();
        if !downgrades.is_empty() {
            return Err(ProbeError::Strict(downgrades.join(" ")));
        }
    }
    Ok(mlocked)
}

/// Ends a start that failed before the schedule: the threads waiting at `gate` (if it was made)
/// are released into an abort, and every one of `handles` is joined.
pub fn abort_threads<T>(gate: Option<&Gate>, handles: &mut Vec<std::thread::JoinHandle<T>>) {
    if let Some(g) = gate {
        g.open(GateState::Abort);
    }
    for h in handles.drain(..) {
        let _ = h.join();
    }
}

/// Stack size of a measuring thread; all of it is locked by mlockall.
pub const STACK_BYTES: usize = 256 * 1024;

/// Stack size of a simulated thread, which also reads and encodes its own series (deflate
/// wants more stack than a measuring loop).
pub const SIMULATED_STACK_BYTES: usize = 8 << 20;

/// Starts measuring thread `name` running `f`, with a [`STACK_BYTES`] stack.
pub fn spawn<T: Send + 'static>(
    name: String,
    f: impl FnOnce() -> T + Send + 'static,
) -> std::io::Result<std::thread::JoinHandle<T>> {
    spawn_with_stack(name, STACK_BYTES, f)
}

/// Starts thread `name` running `f` with a stack of `bytes`.
pub fn spawn_with_stack<T: Send + 'static>(
    name: String,
    bytes: usize,
    f: impl FnOnce() -> T + Send + 'static,
) -> std::io::Result<std::thread::JoinHandle<T>> {
    std::thread::Builder::new().name(name).stack_size(bytes).spawn(f)
}

/// Waits for one setup report from each of `n` threads until `deadline`; `Err(missing)` when
/// some did not report in time (starved by a task at a higher RT priority): waiting forever
/// would hang rtlab.
pub fn collect<T>(rx: &std::sync::mpsc::Receiver<T>, n: usize, deadline: std::time::Instant) -> Result<Vec<T>, usize> {
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        match rx.recv_timeout(deadline.saturating_duration_since(std::time::Instant::now())) {
            Ok(s) => out.push(s),
            Err(_) => return Err(n - out.len()),
        }
    }
    Ok(out)
}
