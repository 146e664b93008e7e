//! `--explain`: while a run measures, late samples are matched with the events their CPU
//! recorded (`trace::recorder`) and explained (`trace::explain`).

use crate::measure::ring::Sample;
use crate::rt::affinity::CpuSet;
use crate::trace::explain::{idle_exit_ns, policy_of};
use crate::trace::recorder::{Recorder, BUFFER_KB};
use crate::trace::{explain, Bounds, ExplainSummary, Explanation, Spike};
use std::time::{Duration, Instant};

/// What `--explain` asks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExplainPlan {
    /// Explain every sample above this (ns).
    pub threshold_ns: Option<i64>,
    /// Explain the N largest samples, whatever their size.
    pub worst: usize,
    /// The samples are noise gaps of busy threads (`rtlab noise`): every gap of at least the
    /// threshold is attributed and counted by source; only the N largest are kept whole.
    pub noise: bool,
    /// rtla hwnoise: its stop thresholds are judged on each gap's hardware noise, known once
    /// the gap is attributed (the busy loop itself cannot tell an interrupt from an SMI).
    pub hardware: Option<HardwareStop>,
}

/// rtla hwnoise's stop thresholds, judged on hardware noise (see [`crate::trace::noise::Tally::add`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HardwareStop {
    /// `-s`/`-S`, and `continue`.
    pub stop_above: crate::measure::noise::StopAbove,
    /// The duty-cycle period `-S` sums over (ns).
    pub period_ns: i64,
}

/// Noise gaps waiting for their events at most; more are counted as not attributed (a
/// threshold so low that gaps come faster than they can be matched).
const MAX_PENDING: usize = 200_000;

/// At most this many samples above the threshold are explained and kept (the largest).
pub const MAX_EXPLAINED: usize = 100;

/// Events before the deadline kept with a spike: enough to know what ran at the deadline.
const LOOKBACK_NS: i64 = 50_000_000;

/// A spike waits this long for its CPU's events to be read before it is explained anyway.
const PATIENCE: Duration = Duration::from_millis(500);

/// Adds one explained spike to the running tally by cause: the spike counts once for each
/// cause it had, however many of its parts share it; the time is every part's.
fn tally_causes(causes: &mut std::collections::BTreeMap<crate::trace::Cause, (u64, i64)>, e: &Explanation) {
    let mut had = std::collections::BTreeSet::new();
    for p in &e.parts {
        let c = causes.entry(p.cause).or_default();
        c.0 += had.insert(p.cause) as u64;
        c.1 += p.ns;
    }
}

/// The explaining side of a run.
#[derive(Debug)]
pub struct Explainer {
    recorder: Recorder,
    plan: ExplainPlan,
    /// Per slot: its CPU and thread id.
    slots: Vec<(Option<usize>, i32)>,
    pending: Vec<(Spike, Instant)>,
    done: Vec<Explanation>,
    /// The largest latencies seen, for `worst` (ascending, at most `worst` long).
    top: Vec<i64>,
    over: u64,
    /// `/proc/stat` steal ticks of the measured CPUs, read at each poll: `(CLOCK_MONOTONIC ns,
    /// CPU → ticks)`, the last few seconds.
    steal: std::collections::VecDeque<(i64, std::collections::BTreeMap<usize, u64>)>,
    /// The SMI count (x86 MSR 0x34) of the measured CPUs at the same readings, while readable
    /// (Intel, root, the msr module): `(CLOCK_MONOTONIC ns, CPU → count)`.
    smi: std::collections::VecDeque<(i64, std::collections::BTreeMap<usize, u64>)>,
    /// The SMI counter could not be read once: it is not tried again.
    smi_unreadable: bool,
    /// Per slot: a noise run's attribution so far.
    tallies: Vec<crate::trace::noise::Tally>,
    /// Per slot: when its busy loop started (CLOCK_MONOTONIC ns), which its periods count from.
    starts: Vec<i64>,
    /// The hardware noise that crossed hwnoise's stop threshold: the slot and where.
    hardware_stop: Option<(usize, crate::measure::stats::Exceedance)>,
    /// Recording stopped and everything pending explained.
    settled: bool,
    /// Every late sample explained so far, by cause: spikes it took part in, and time (ns).
    causes: std::collections::BTreeMap<crate::trace::Cause, (u64, i64)>,
    /// Per CPU: the idle exit bound, fixed once the probe has started (and the PM QoS limit
    /// it holds is known).
    idle_exit: std::collections::BTreeMap<usize, i64>,
}

impl Explainer {
    /// Starts recording `cpus` (the reader runs on the other online CPUs when there are any).
    /// Starts recording `cpus`; the trace reader runs on `reader` (anywhere when `None`).
    pub fn start(plan: ExplainPlan, cpus: &CpuSet, reader: Option<&CpuSet>) -> Result<Explainer, String> {
        let recorder = Recorder::start(cpus, reader, &crate::trace::recorder::events(plan.noise))?;
        Ok(Explainer {
            recorder,
            plan,
            slots: Vec::new(),
            pending: Vec::new(),
            done: Vec::new(),
            top: Vec::new(),
            over: 0,
            steal: std::collections::VecDeque::new(),
            smi: std::collections::VecDeque::new(),
            smi_unreadable: false,
            tallies: Vec::new(),
            starts: Vec::new(),
            hardware_stop: None,
            settled: false,
            causes: std::collections::BTreeMap::new(),
            idle_exit: std::collections::BTreeMap::new(),
        })
    }

    /// The slots' CPUs and thread ids, once the probe has started, and the PM QoS limit it
    /// holds on `/dev/cpu_dma_latency` (µs), if any: it decides which idle states may be entered.
    pub fn slots(&mut self, slots: Vec<(Option<usize>, i32)>, dma_latency_us: Option<i32>) {
        let root = crate::doctor::Sysroot::default();
        self.idle_exit =
            slots.iter().filter_map(|s| s.0).map(|c| (c, idle_exit_ns(&root, c, dma_latency_us))).collect();
        self.tallies = vec![Default::default(); slots.len()];
        self.starts = vec![0; slots.len()];
        self.slots = slots;
        self.sample_smi();
    }

    /// Looks at samples of `slot` (whose schedule started at `start_ns`) for spikes.
    pub fn samples(&mut self, slot: usize, samples: &[Sample], start_ns: i64) {
        let Some(&(Some(cpu), tid)) = self.slots.get(slot) else { return };
        if self.plan.noise {
            self.starts[slot] = start_ns;
            let threshold = self.plan.threshold_ns.unwrap_or(0);
            for s in samples.iter().filter(|s| s.latency_ns >= threshold) {
                self.over += 1;
                self.tallies[slot].gap();
                if self.pending.len() < MAX_PENDING {
                    let end = start_ns + s.at_ns;
                    let spike =
                        Spike { thread: slot, cpu, cycle: s.cycle, tid, deadline_ns: end - s.latency_ns, wake_ns: end };
                    self.pending.push((spike, Instant::now()));
                }
            }
            self.poll(false);
            return;
        }
        for s in samples {
            let over = self.plan.threshold_ns.is_some_and(|t| s.latency_ns > t);
            self.over += over as u64;
            let worst = self.plan.worst > 0 && (self.top.len() < self.plan.worst || s.latency_ns > self.top[0]);
            if worst {
                self.top.push(s.latency_ns);
                self.top.sort_unstable();
                if self.top.len() > self.plan.worst {
                    self.top.remove(0);
                }
            }
            if over || worst {
                let wake = start_ns + s.at_ns;
                let spike =
                    Spike { thread: slot, cpu, cycle: s.cycle, tid, deadline_ns: wake - s.latency_ns, wake_ns: wake };
                self.pending.push((spike, Instant::now()));
            }
        }
        self.poll(false);
    }

    fn sample_steal(&mut self) {
        let ticks = crate::doctor::steal_ticks(&crate::doctor::Sysroot::default());
        if ticks.is_empty() {
            return;
        }
        let now = crate::rt::clock::now(crate::rt::clock::ClockId::MONOTONIC);
        self.steal.push_back((now, ticks));
        while self.steal.front().is_some_and(|(t, _)| *t < now - 10_000_000_000) {
            self.steal.pop_front();
        }
    }

    /// Reads the SMI counters of the measured CPUs. Reading an MSR runs on its CPU (an IPI), so
    /// it is read only when the probe starts and when a spike is explained, never on every poll.
    fn sample_smi(&mut self) {
        if self.smi_unreadable {
            return;
        }
        let now = crate::rt::clock::now(crate::rt::clock::ClockId::MONOTONIC);
        let counts: Result<std::collections::BTreeMap<usize, u64>, String> = self
            .slots
            .iter()
            .filter_map(|s| s.0)
            .map(|c| crate::rt::msr::SmiCounter::read(c).map(|n| (c, n)))
            .collect();
        match counts {
            Ok(m) => self.smi.push_back((now, m)),
            Err(_) => self.smi_unreadable = true,
        }
        while self.smi.len() > 1000 {
            self.smi.pop_front();
        }
    }

    /// SMIs of `cpu` between the readings that bracket `from..to` (the last one before, the
    /// first after), if the counter is readable.
    fn smi_over(&self, cpu: usize, from: i64, to: i64) -> Option<u64> {
        let before = self.smi.iter().rev().find(|(t, _)| *t <= from)?;
        let after = self.smi.iter().find(|(t, _)| *t >= to)?;
        Some(after.1.get(&cpu)?.saturating_sub(*before.1.get(&cpu)?))
    }

    /// Steal of `cpu` between the readings that bracket `from..to` (ns), if both exist.
    fn steal_over(&self, cpu: usize, from: i64, to: i64) -> Option<i64> {
        let before = self.steal.iter().rev().find(|(t, _)| *t <= from)?;
        let after = self.steal.iter().find(|(t, _)| *t >= to)?;
        Some((after.1.get(&cpu)?.saturating_sub(*before.1.get(&cpu)?)) as i64 * crate::doctor::NS_PER_TICK)
    }

    /// Explains the pending spikes whose events have been read (all of them when `force`).
    pub fn poll(&mut self, force: bool) {
        if self.plan.noise {
            return self.poll_noise(force);
        }
        self.sample_steal();
        let mut still = Vec::new();
        if !self.pending.is_empty() {
            self.sample_smi();
        }
        for (spike, seen) in std::mem::take(&mut self.pending) {
            if force || seen.elapsed() > PATIENCE || self.recorder.caught_up(spike.cpu, spike.wake_ns + 100_000) {
                let events = self.recorder.events(spike.cpu, spike.deadline_ns - LOOKBACK_NS, spike.wake_ns + 100_000);
                let idle = self.idle_exit.get(&spike.cpu).copied().unwrap_or(Bounds::default().idle_exit_ns);
                let bounds = Bounds { idle_exit_ns: idle, ..Bounds::default() };
                let mut e = explain(&spike, &events, bounds, &policy_of);
                e.lost_events = self.recorder.lost(spike.cpu);
                e.steal_ns = self.steal_over(spike.cpu, spike.deadline_ns, spike.wake_ns);
                e.smis = self.smi_over(spike.cpu, spike.deadline_ns, spike.wake_ns);
                tally_causes(&mut self.causes, &e);
                self.done.push(e);
                self.trim();
            } else {
                still.push((spike, seen));
            }
        }
        self.pending = still;
    }

    /// Attributes the pending noise gaps whose events have been read: one read of each CPU's
    /// events covers all of its gaps.
    fn poll_noise(&mut self, force: bool) {
        let ready: Vec<bool> = self
            .pending
            .iter()
            .map(|(g, seen)| {
                force
                    || seen.elapsed() > PATIENCE
                    || self.recorder.caught_up(g.cpu, g.wake_ns + crate::trace::noise::SLACK_NS)
            })
            .collect();
        if !ready.contains(&true) {
            return;
        }
        let (mut go, mut still) = (Vec::new(), Vec::new());
        for (p, r) in std::mem::take(&mut self.pending).into_iter().zip(ready) {
            if r {
                go.push(p.0);
            } else {
                still.push(p);
            }
        }
        self.pending = still;
        go.sort_by_key(|g| (g.cpu, g.deadline_ns));
        let slack = crate::trace::noise::SLACK_NS;
        for cpu_gaps in go.chunk_by(|a, b| a.cpu == b.cpu) {
            let cpu = cpu_gaps[0].cpu;
            let from = cpu_gaps.iter().map(|g| g.deadline_ns).min().unwrap_or(0) - slack;
            let to = cpu_gaps.iter().map(|g| g.wake_ns).max().unwrap_or(0) + slack;
            let events = self.recorder.events(cpu, from, to);
            for g in cpu_gaps {
                let lo = events.partition_point(|e| e.ts_ns < g.deadline_ns - slack);
                let hi = events.partition_point(|e| e.ts_ns <= g.wake_ns + slack);
                let (e, occurrences) = crate::trace::noise::attribute(g, &events[lo..hi], &policy_of);
                if let Some(t) = self.tallies.get_mut(g.thread) {
                    let hardware = t.add(&e, &occurrences);
                    self.judge_hardware(g, hardware);
                }
                let keep = self.plan.worst > 0
                    && (self.done.len() < self.plan.worst
                        || self.done.last().is_some_and(|l| e.latency_ns > l.latency_ns));
                if keep {
                    self.done.push(e);
                    self.trim();
                }
            }
        }
    }

    /// Stops recording and explains what is pending (once; `finish` does it too).
    pub fn settle(&mut self) {
        if !self.settled {
            self.settled = true;
            self.recorder.finish();
            self.poll(true);
        }
    }

    /// With rtla hwnoise's thresholds: whether the hardware noise of the gap `g` (or of its
    /// period so far) crosses them; the first crossing stops the run unless `continue`.
    fn judge_hardware(&mut self, g: &Spike, hardware_ns: i64) {
        let Some(h) = self.plan.hardware else { return };
        let (Some(t), Some(start)) = (self.tallies.get_mut(g.thread), self.starts.get(g.thread)) else { return };
        // The busy loop dates a gap by its end, and counts its periods from its start.
        let at = g.wake_ns - start;
        let period_sum = t.hardware_in_period(at / h.period_ns.max(1), hardware_ns);
        let crossed = match h.stop_above {
            crate::measure::noise::StopAbove { single_ns: Some(s), .. } if hardware_ns > s as i64 => hardware_ns,
            crate::measure::noise::StopAbove { total_ns: Some(s), .. } if period_sum > s as i64 => period_sum,
            _ => return,
        };
        t.hw_stop_hits += 1;
        if !h.stop_above.continues && self.hardware_stop.is_none() {
            let e = crate::measure::stats::Exceedance { cycle: g.cycle, at_ns: at, latency_ns: crossed };
            self.hardware_stop = Some((g.thread, e));
        }
    }

    /// The hardware noise that crossed rtla hwnoise's stop threshold, once one has: the run
    /// stops there.
    pub fn hardware_stop(&self) -> Option<(usize, crate::measure::stats::Exceedance)> {
        self.hardware_stop
    }

    /// Every sample explained so far, by cause (its name in results: `blocking_task`):
    /// `(cause, spikes it took part in, time in ns)`.
    pub fn causes(&self) -> Vec<(String, u64, i64)> {
        self.causes
            .iter()
            .map(|(c, (n, ns))| {
                let id = serde_json::to_value(c).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default();
                (id, *n, *ns)
            })
            .collect()
    }

    /// Keeps the N largest, and the largest [`MAX_EXPLAINED`] above the threshold.
    fn trim(&mut self) {
        self.done
            .sort_by(|a, b| b.latency_ns.cmp(&a.latency_ns).then(a.thread.cmp(&b.thread)).then(a.cycle.cmp(&b.cycle)));
        // Noise gaps: every one is counted by source; only the N largest are kept whole.
        let threshold = self.plan.threshold_ns.filter(|_| !self.plan.noise);
        let (mut worst, mut over) = (0, 0);
        self.done.retain(|e| {
            let above = threshold.is_some_and(|t| e.latency_ns > t);
            let keep = worst < self.plan.worst || above && over < MAX_EXPLAINED;
            worst += 1;
            over += (keep && above) as usize;
            keep
        });
    }

    /// Stops recording, explains what is pending, and gives the explanations (largest first)
    /// with the summary.
    pub fn finish(mut self) -> (Vec<Explanation>, ExplainSummary, Vec<Option<crate::trace::noise::NoiseSources>>) {
        self.settle();
        let lost = self.slots.iter().filter_map(|s| s.0).map(|c| self.recorder.lost(c)).sum();
        let threshold = self.plan.threshold_ns;
        let explained = if self.plan.noise {
            self.tallies.iter().map(|t| t.figures(0).attributed as usize).sum()
        } else {
            self.done.iter().filter(|e| threshold.is_some_and(|t| e.latency_ns > t)).count()
        };
        let sources = if self.plan.noise {
            self.slots
                .iter()
                .zip(&self.tallies)
                .map(|(s, t)| Some(t.figures(s.0.map_or(0, |c| self.recorder.lost(c)))))
                .collect()
        } else {
            Vec::new()
        };
        let summary = ExplainSummary {
            skipped_for_time: 0,
            threshold_ns: threshold,
            worst: self.plan.worst,
            unavailable: None,
            instance: Some(self.recorder.instance()),
            buffer_kb: BUFFER_KB,
            missing_events: self.recorder.missing_events(),
            lost_events: lost,
            over_threshold: self.over,
            explained,
        };
        (std::mem::take(&mut self.done), summary, sources)
    }
}

/// The summary of a run that could not explain: why.
pub fn unavailable(plan: ExplainPlan, why: String) -> ExplainSummary {
    ExplainSummary {
        skipped_for_time: 0,
        threshold_ns: plan.threshold_ns,
        worst: plan.worst,
        unavailable: Some(why),
        buffer_kb: BUFFER_KB,
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::explain::IRQ_ENTRY_NS;
    use crate::trace::{explain::Part, Cause};

    fn part(cause: Cause, name: &str, ns: i64) -> Part {
        Part { cause, name: name.into(), ns, share: 0.0 }
    }

    #[test]
    fn a_spike_with_two_parts_of_one_cause_counts_once_for_that_cause() {
        let spike = Spike { thread: 0, cpu: 1, cycle: 0, tid: 1, deadline_ns: 0, wake_ns: 30 };
        let mut e = explain(&spike, &[], Bounds::default(), &|_| None);
        e.parts = vec![part(Cause::Irq, "eth0", 10), part(Cause::Irq, "nvme0", 15), part(Cause::Switch, "", 5)];
        let mut causes = std::collections::BTreeMap::new();
        tally_causes(&mut causes, &e);
        tally_causes(&mut causes, &e);
        assert_eq!(causes[&Cause::Irq], (2, 50), "two spikes, 25 ns of IRQs each");
        assert_eq!(causes[&Cause::Switch], (2, 10));
    }

    #[test]
    fn the_idle_exit_bound_follows_the_states_the_pm_qos_limit_allows() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().join("sys/devices/system/cpu/cpu1/cpuidle");
        for (state, latency, disabled) in [("state0", 0, 0), ("state1", 2, 0), ("state2", 10, 0), ("state3", 100, 1)] {
            let d = base.join(state);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("latency"), format!("{latency}\n")).unwrap();
            std::fs::write(d.join("disable"), format!("{disabled}\n")).unwrap();
        }
        let root = crate::doctor::Sysroot::new(dir.path());
        assert_eq!(idle_exit_ns(&root, 1, None), 10_000 + IRQ_ENTRY_NS, "the deepest enabled state: C2, 10 µs");
        assert_eq!(idle_exit_ns(&root, 1, Some(0)), IRQ_ENTRY_NS, "held at 0 µs: only polling idle");
        assert_eq!(idle_exit_ns(&root, 1, Some(5)), 2_000 + IRQ_ENTRY_NS);
        assert_eq!(idle_exit_ns(&root, 0, Some(0)), Bounds::default().idle_exit_ns, "no cpuidle: the default bound");
    }
}
