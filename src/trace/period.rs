//! Why a watched thread's period was late (`rtlab watch --explain`): its wakeup explained as
//! a probe's is (the events of the CPU it woke on, from its release to its return to user
//! space), and its response by the interference *during its work*: from its return to user
//! space to its next block, whatever ran on the CPU it was on (an interrupt, a softirq) or,
//! while it was runnable but not running, on the CPU it was waiting for (the task that
//! preempted it) — followed across CPUs with one [`CpuState`] each.

use super::cpu::{steps, CpuState, Ctx, Step};
use super::event::{Event, Kind};
use super::explain::{explain, partition, Bounds, Cause, Explanation, Lane, Spike, Stretch};
use super::syscalls::Arch;
use std::collections::{HashMap, VecDeque};

/// How long before a release the events are kept: enough to know what ran at the release.
pub const LOOKBACK_NS: i64 = 50_000_000;

/// The recent events of every CPU, in time order, for the periods still to be explained.
#[derive(Debug, Default)]
pub struct Recent {
    events: VecDeque<Event>,
}

/// Events kept at most (memory stays bounded whatever the rate).
const KEEP_EVENTS: usize = 2_000_000;

/// Events older than this before the newest are dropped.
pub const KEEP_NS: i64 = 2_000_000_000;

impl Recent {
    /// Keeps `e` (events come in time order).
    pub fn push(&mut self, e: &Event) {
        self.events.push_back(e.clone());
        let oldest = e.ts_ns - KEEP_NS;
        while self.events.len() > KEEP_EVENTS || self.events.front().is_some_and(|f| f.ts_ns < oldest) {
            self.events.pop_front();
        }
    }

    /// The events from `from` to `to`, every CPU (`cpu: None`) or one.
    pub fn between(&self, from: i64, to: i64, cpu: Option<usize>) -> Vec<Event> {
        let start = self.events.partition_point(|e| e.ts_ns < from);
        self.events
            .range(start..)
            .take_while(|e| e.ts_ns <= to)
            .filter(|e| cpu.is_none_or(|c| e.cpu == c))
            .cloned()
            .collect()
    }
}

/// A watched thread's period to explain.
#[derive(Clone, Copy, Debug)]
pub struct Late {
    /// The watched slot.
    pub thread: usize,
    /// The period's index in the slot.
    pub cycle: u64,
    /// The thread.
    pub tid: i32,
    /// The CPU it returned to user space on.
    pub cpu: usize,
    /// Its release (ns, CLOCK_MONOTONIC).
    pub release_ns: i64,
    /// Its return to user space − release (ns).
    pub wakeup_ns: i64,
    /// Its block − release (ns), for a late response.
    pub response_ns: Option<i64>,
    /// Its relative deadline (ns), for a late response.
    pub deadline_ns: Option<i64>,
    /// The traced kernel's system call numbers (to name what it blocked on).
    pub syscalls: Arch,
}

/// Explains the wakeup of `late` from the CPU it woke on.
pub fn explain_wakeup(late: &Late, recent: &Recent, policy_of: &dyn Fn(i32) -> Option<String>) -> Explanation {
    let wake = late.release_ns + late.wakeup_ns;
    let spike = Spike {
        thread: late.thread,
        cpu: late.cpu,
        cycle: late.cycle,
        tid: late.tid,
        deadline_ns: late.release_ns,
        wake_ns: wake,
    };
    let events = recent.between(late.release_ns - LOOKBACK_NS, wake + 100_000, Some(late.cpu));
    explain(&spike, &events, Bounds::default(), policy_of)
}

/// Explains the whole period of `late` (release to block): its wakeup's parts, then its work's
/// (its own running, and what took its CPU while it worked); the parts sum to the response.
pub fn explain_response(late: &Late, recent: &Recent, policy_of: &dyn Fn(i32) -> Option<String>) -> Explanation {
    let mut e = explain_wakeup(late, recent, policy_of);
    let (Some(response), wake) = (late.response_ns, late.release_ns + late.wakeup_ns) else { return e };
    let block = late.release_ns + response;
    let events = recent.between(late.release_ns - LOOKBACK_NS, block, None);
    let mut stretches: Vec<Stretch> = e.parts.iter().map(|p| (0, p.ns, p.cause, p.name.clone(), Lane::Task)).collect();
    let work = work_stretches(late.tid, late.cpu, (wake, block), &events, late.syscalls);
    stretches
        .extend(work.iter().map(|s| (s.0 - wake + late.wakeup_ns, s.1 - wake + late.wakeup_ns, s.2, s.3.clone(), s.4)));
    let (parts, _) = partition(stretches, response, 0);
    let (_, work_timeline) = partition(work, response, late.release_ns);
    e.parts = parts;
    e.timeline.extend(work_timeline);
    e.latency_ns = response;
    e.work = late.deadline_ns;
    e
}

/// What an interrupt context is, as a part of a latency.
fn interrupt(ctx: &Ctx) -> (Cause, String, Lane) {
    match ctx {
        Ctx::Irq(n) => (Cause::Irq, n.to_string(), Lane::Irq),
        Ctx::Softirq(n) => (Cause::Softirq, n.to_string(), Lane::Softirq),
        Ctx::Vector(_, true) => (Cause::TimerIrq, String::new(), Lane::Irq),
        Ctx::Vector(n, false) => (Cause::Vector, n.to_string(), Lane::Irq),
        Ctx::Nmi(n) => (Cause::Nmi, n.to_string(), Lane::Irq),
    }
}

/// Where the watched thread is during its work.
struct Follow {
    tid: i32,
    /// The CPU it runs on (`None`: runnable, waiting, or blocked).
    on: Option<usize>,
    /// The CPU it last ran on.
    last: usize,
    /// Asleep inside its job (switched out in a sleeping state, not yet woken).
    blocked: bool,
}

impl Follow {
    /// What `from..to` was: an interrupt on its CPU, its own work, or (waiting) what held
    /// the CPU it waits for.
    fn what(&self, cpus: &HashMap<usize, CpuState>) -> (Cause, String, Lane) {
        let state = cpus.get(&self.on.unwrap_or(self.last));
        if let Some(ctx) = state.and_then(|s| s.context()) {
            return interrupt(ctx);
        }
        match (self.on, state.and_then(|s| s.task.as_ref())) {
            (Some(_), _) => (Cause::OwnWork, String::new(), Lane::Probe),
            (None, _) if self.blocked => (Cause::Blocked, String::new(), Lane::Task),
            (None, Some(t)) if t.pid != self.tid => (Cause::Preemption, format!("{}:{}", t.comm, t.pid), Lane::Task),
            _ => (Cause::Unaccounted, String::new(), Lane::Unaccounted),
        }
    }

    /// Moves with the switches (and with its own events, which show where it runs).
    fn step(&mut self, e: &Event) {
        match &e.kind {
            Kind::Switch { next_pid, .. } if *next_pid == self.tid => (self.on, self.blocked) = (Some(e.cpu), false),
            Kind::Switch { prev_pid, prev_state, .. } if *prev_pid == self.tid => {
                (self.on, self.blocked) = (None, !prev_state.starts_with('R'));
            }
            Kind::Waking { pid, .. } if *pid == self.tid => {
                self.blocked = false;
                return;
            }
            _ if e.pid == self.tid => self.on = Some(e.cpu),
            _ => return,
        }
        self.last = self.on.unwrap_or(e.cpu);
    }
}

/// The stretches of `wake..block` for thread `tid` (running on `cpu` at `wake`), from every
/// CPU's `events` (in time order, starting before `wake` so each CPU's state is known).
/// Blocks inside the work are named by the call the thread returns from (`syscalls`: the
/// traced kernel's numbers).
pub fn work_stretches(
    tid: i32,
    cpu: usize,
    (wake, block): (i64, i64),
    events: &[Event],
    syscalls: Arch,
) -> Vec<Stretch> {
    let mut cpus: HashMap<usize, CpuState> = HashMap::new();
    let mut follow = Follow { tid, on: Some(cpu), last: cpu, blocked: false };
    let (mut out, mut t, mut started) = (Vec::new(), wake, false);
    for (ts, step) in steps(events, None) {
        if ts > block {
            break;
        }
        if ts >= wake && !started {
            // At its return to user space it runs on `cpu`, whatever the events before said.
            (follow.on, follow.last, started) = (Some(cpu), cpu, true);
        }
        let at = ts.clamp(wake, block);
        if at > t {
            let (cause, name, lane) = follow.what(&cpus);
            out.push((t, at, cause, name, lane));
            t = at;
        }
        let state = cpus.entry(event_cpu(&step).unwrap_or(follow.last)).or_default();
        let header = state.header(&step, None);
        state.adopt(header);
        state.learn(&step);
        state.apply(&step, at);
        if let Step::Event(e) = &step {
            if started {
                follow.step(e);
                if let (Kind::SysExit { nr }, true) = (&e.kind, e.pid == tid) {
                    name_blocks(&mut out, syscalls.describe(*nr));
                }
            }
        }
    }
    if block > t {
        let (cause, name, lane) = follow.what(&cpus);
        out.push((t, block, cause, name, lane));
    }
    out
}

/// Names the blocks just ended by the call the thread returned from (`name`).
fn name_blocks(out: &mut [Stretch], name: String) {
    // Back from the return over its own work since, to the block before it.
    let (mut blocked, mut own) = (false, 0);
    for s in out.iter_mut().rev() {
        match s.2 {
            Cause::Blocked if s.3.is_empty() => (blocked, s.3) = (true, name.clone()),
            Cause::Blocked => blocked = true,
            Cause::OwnWork if blocked || own > 0 => break,
            Cause::OwnWork => own += 1,
            _ => {}
        }
    }
}

/// The CPU of a step (an NMI's start or end has none of its own).
fn event_cpu(step: &Step) -> Option<usize> {
    match step {
        Step::Event(e) => Some(e.cpu),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::testing::{ev, switch};

    #[test]
    fn the_work_is_own_time_interrupts_on_its_cpu_and_the_task_that_preempted_it_across_a_migration() {
        // Thread 7 returns to user space on CPU 1 at 1000, takes an IRQ 1100-1150, is preempted
        // by 9 at 1300, resumes on CPU 0 at 1700 (CPU 1 ran 9 meanwhile) and blocks at 2000.
        let events = [
            ev(900, 1, 0, switch(0, "R", 7)),
            ev(1100, 1, 7, Kind::IrqEntry { irq: 5, name: "eth0".into() }),
            ev(1150, 1, 7, Kind::IrqExit { irq: 5 }),
            ev(1300, 1, 7, switch(7, "R+", 9)),
            ev(1700, 0, 0, switch(0, "R", 7)),
            ev(2000, 0, 7, switch(7, "S", 0)),
        ];
        let s = work_stretches(7, 1, (1000, 2000), &events, Arch::X86_64);
        let (parts, _) = partition(s, 1000, 1000);
        let got: Vec<(Cause, &str, i64)> = parts.iter().map(|p| (p.cause, p.name.as_str(), p.ns)).collect();
        assert_eq!(got, vec![(Cause::OwnWork, "", 550), (Cause::Preemption, "t9:9", 400), (Cause::Irq, "eth0", 50)]);
    }

    #[test]
    fn a_block_inside_the_work_is_blocked_time_named_by_the_call_it_slept_in_not_preemption() {
        // Thread 7 works on CPU 1 from 1000, sleeps on a futex at 1200 while t9 runs, is woken
        // at 1500, back at 1550 (returning from futex, NR 202), and blocks for good at 1800.
        let events = [
            ev(900, 1, 0, switch(0, "R", 7)),
            ev(1200, 1, 7, switch(7, "S", 9)),
            ev(1500, 0, 3, Kind::Waking { pid: 7, comm: "t7".into(), prio: 19 }),
            ev(1550, 1, 9, switch(9, "R", 7)),
            ev(1551, 1, 7, Kind::SysExit { nr: 202 }),
            ev(1800, 1, 7, switch(7, "S", 0)),
        ];
        let s = work_stretches(7, 1, (1000, 1800), &events, Arch::X86_64);
        let (parts, _) = partition(s, 800, 1000);
        let got: Vec<(Cause, &str, i64)> = parts.iter().map(|p| (p.cause, p.name.as_str(), p.ns)).collect();
        assert_eq!(
            got,
            vec![(Cause::OwnWork, "", 450), (Cause::Blocked, "futex", 300), (Cause::Preemption, "t9:9", 50)]
        );
    }

    #[test]
    fn a_late_response_is_explained_by_its_wakeup_and_its_work_summing_to_the_response() {
        let mut recent = Recent::default();
        for e in [
            ev(500, 1, 7, switch(7, "S", 0)),
            ev(1000, 1, 0, Kind::Waking { pid: 7, comm: "t7".into(), prio: 19 }),
            ev(1010, 1, 0, switch(0, "R", 7)),
            ev(1020, 1, 7, Kind::SysExit { nr: 230 }),
            ev(1200, 1, 7, switch(7, "R+", 9)),
            ev(1600, 1, 9, switch(9, "S", 7)),
            ev(1700, 1, 7, switch(7, "S", 0)),
        ] {
            recent.push(&e);
        }
        let late = Late {
            thread: 0,
            cycle: 4,
            tid: 7,
            cpu: 1,
            release_ns: 1000,
            wakeup_ns: 20,
            response_ns: Some(700),
            deadline_ns: Some(500),
            syscalls: Arch::X86_64,
        };
        let e = explain_response(&late, &recent, &|_| None);
        assert_eq!(e.latency_ns, 700);
        assert_eq!(e.work, Some(500));
        assert_eq!(e.parts.iter().map(|p| p.ns).sum::<i64>(), 700, "{:?}", e.parts);
        assert_eq!(e.parts[0].cause, Cause::Preemption);
        assert_eq!((e.parts[0].name.as_str(), e.parts[0].ns), ("t9:9", 400));
        assert!(
            e.describe(true)
                .contains("finished 0.2 µs late (response 0.7 µs, deadline 0.5 µs): preempted by t9:9 0.4 µs"),
            "{}",
            e.describe(true)
        );
    }
}
