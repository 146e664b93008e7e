//! `--control`: an OS thread measured beside a runtime's probe (jHiccup's control). It has
//! the runtime's period, policy and CPUs and cyclictest's method (an absolute
//! `clock_nanosleep`), starts as soon as the runtime's schedule started, dates its samples
//! from that start, and stops when the runtime's probe ends: it measures the same window.
//! What the control shows too, the OS did; what only the runtime shows, the runtime added.

use super::os_thread::{self, OsThreads};
use super::{Finished, Probe, ProbeError, Sinks, Started, ThreadPlan};
use crate::measure::probe::{ClockKind, Method};
use crate::rt::sched::SchedParams;

/// The name of the control's slot, in the result's threads and the samples file.
pub const NAME: &str = "control";

/// The OS-thread plan of a control for a runtime probe of period `interval_ns` whose task
/// runs under `sched` (SCHED_OTHER but for Ada's `--ada-priority`), unpinned as the runtime's
/// threads are, in slot `index` (after the runtime's).
pub fn plan(index: usize, interval_ns: i64, sched: SchedParams) -> os_thread::Plan {
    os_thread::Plan {
        threads: vec![ThreadPlan {
            index,
            cpu: None,
            sched,
            interval_ns,
            warmup_cycles: 0,
            name: Some(NAME.into()),
            work: None,
            offset_ns: 0,
        }],
        method: Method::Abs,
        clock: ClockKind::Monotonic,
        // The runtime's program locks no memory and holds no PM QoS request: neither does its control.
        mlockall: false,
        dma_latency_us: None,
        breaktrace_ns: None,
        tracemark: false,
        main_affinity: None,
        simulate: None,
        stop_when_first_done: false,
        align: None,
        outliers: None,
        over_capacity: 1,
        cyclictest_compat: false,
        stages: false,
        stage_stop: Default::default(),
        stage_trace: None,
        deepest_idle_state: None,
        workers: None,
    }
}

/// A runtime's probe with its control beside it: the runtime's slots first, the control's
/// after them.
pub struct Controlled {
    inner: Box<dyn Probe>,
    plan: os_thread::Plan,
    control: Option<OsThreads>,
}

impl Controlled {
    /// `inner` with a control of `plan` (see [`plan`]) beside it.
    pub fn new(inner: Box<dyn Probe>, plan: os_thread::Plan) -> Controlled {
        Controlled { inner, plan, control: None }
    }

    /// The result's `runtime.control` before the result builder compares the figures.
    fn comparison(&self) -> crate::result::Control {
        crate::result::Control {
            thread: self.plan.threads.first().map_or(0, |t| t.index),
            excess_ns: Default::default(),
        }
    }
}

impl Probe for Controlled {
    fn slots(&self) -> usize {
        self.inner.slots() + self.plan.threads.len()
    }

    fn start(&mut self, sinks: &Sinks) -> Result<Started, ProbeError> {
        let mut started = self.inner.start(sinks)?;
        let since = i64::try_from(started.schedule_start.elapsed().as_nanos()).unwrap_or(0);
        let origin = crate::rt::clock::now(self.plan.clock.id()) - since;
        let mut control = OsThreads::new(self.plan.clone()).dated_from(origin);
        // The control ends with the runtime's probe, never by a count of its own.
        let own = match control.start(&Sinks { loops: None, ..sinks.clone() }) {
            Ok(s) => s,
            Err(e) => {
                self.inner.stop();
                return Err(e);
            }
        };
        self.control = Some(control);
        started.slots.extend(own.slots.into_iter().map(|mut s| {
            s.identity = Some(format!("{NAME} (OS thread)"));
            s
        }));
        started.warnings.extend(own.warnings);
        started.stages.resize(started.slots.len(), None);
        if let Some(r) = started.runtime.as_mut() {
            r.control = Some(self.comparison());
        }
        Ok(started)
    }

    fn finished(&mut self) -> bool {
        self.inner.finished()
    }

    fn stop(&mut self) {
        self.inner.stop();
        if let Some(c) = self.control.as_mut() {
            c.stop();
        }
    }

    fn join(self: Box<Self>) -> Finished {
        let this = *self;
        let comparison = this.comparison();
        let mut fin = this.inner.join();
        if let Some(control) = this.control {
            let mut own = Box::new(control).join();
            fin.slots.append(&mut own.slots);
            fin.warnings.append(&mut own.warnings);
            if let Some(r) = fin.runtime.as_mut() {
                r.control = Some(comparison);
            }
        }
        fin
    }
}
