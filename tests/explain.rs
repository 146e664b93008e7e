//! The attribution of a late sample, driven by synthetic event streams (tests/fixtures/trace/)
//! with exact expected figures: shares sum to 100 %, nested interrupts are not counted twice,
//! and missing events give "unaccounted", never a wrong name.

use rtlab::trace::event::{parse, Event};
use rtlab::trace::{explain, Bounds, Cause, Explanation, Spike};

const D: i64 = 1_000_000_000_000; // the deadline in the fixtures: 1000.000000 s

fn events(name: &str) -> Vec<Event> {
    let text = std::fs::read_to_string(format!("tests/fixtures/trace/{name}")).unwrap();
    let ev: Vec<Event> = text.lines().filter_map(parse).collect();
    assert_eq!(ev.len(), text.lines().filter(|l| !l.starts_with('#')).count(), "every line parses");
    ev
}

fn run(name: &str, wake_us: i64) -> Explanation {
    let spike = Spike { thread: 0, cpu: 1, cycle: 7, tid: 500, deadline_ns: D, wake_ns: D + wake_us * 1000 };
    explain(&spike, &events(name), Bounds::default(), &|_| None)
}

fn ns(e: &Explanation, cause: Cause, name: &str) -> i64 {
    e.parts.iter().filter(|p| p.cause == cause && p.name == name).map(|p| p.ns).sum()
}

fn sums_to_the_latency(e: &Explanation) {
    assert_eq!(e.parts.iter().map(|p| p.ns).sum::<i64>(), e.latency_ns, "{:#?}", e.parts);
    let shares: f64 = e.parts.iter().map(|p| p.share).sum();
    assert!((shares - 100.0).abs() < 1e-9, "{shares}");
    let covered: i64 = e.timeline.iter().map(|s| s.end_ns - s.start_ns).sum();
    assert_eq!(covered, e.latency_ns, "the timeline covers the window once");
}

#[test]
fn a_higher_priority_fifo_task_is_named_as_the_blocking_task_with_its_share() {
    let e = run("fifo_blocker.txt", 1004);
    sums_to_the_latency(&e);
    assert_eq!(e.latency_ns, 1_004_000);
    assert_eq!(e.fired_ns, Some(3_000), "the hrtimer's own now= gives the exact firing");
    assert_eq!(e.switched_ns, Some(1_001_000));
    assert_eq!(ns(&e, Cause::BlockingTask, "blk:4711"), 995_000);
    assert_eq!(ns(&e, Cause::IrqsDisabled, "blk:4711"), 2_000, "deadline → timer IRQ entry");
    assert_eq!(ns(&e, Cause::TimerIrq, ""), 4_000, "the timer interrupt, entry to exit");
    assert_eq!(ns(&e, Cause::Switch, ""), 3_000);
    assert_eq!(e.parts[0].cause, Cause::BlockingTask, "largest first");
    assert!((e.parts[0].share - 99.103_585_657_370_52).abs() < 1e-9, "{}", e.parts[0].share);
    let b = e.blocking.unwrap();
    assert_eq!((b.comm.as_str(), b.pid, b.policy.as_str(), b.preempted_late), ("blk", 4711, "RT 90", false));
    assert!(e.note.is_none());
}

#[test]
fn nested_interrupts_are_not_counted_twice_and_a_higher_task_is_other_task_interference() {
    let e = run("nested_softirq.txt", 83);
    sums_to_the_latency(&e);
    assert_eq!(ns(&e, Cause::Softirq, "NET_RX"), 35_000, "40 µs of softirq less the 5 µs IRQ inside it");
    assert_eq!(ns(&e, Cause::Irq, "eth0"), 5_000);
    assert_eq!(ns(&e, Cause::ExitFromIdle, ""), 1_000);
    assert_eq!(ns(&e, Cause::TimerIrq, ""), 4_000);
    assert_eq!(ns(&e, Cause::OtherTask, "hi:600"), 28_000);
    // Idle after the wakeup until the softirq: the switch had not happened yet.
    assert_eq!(ns(&e, Cause::Switch, ""), 5_000 + 2_000 + 3_000);
    assert!(e.blocking.is_none(), "the CPU was idle when the timer fired: nobody blocked");
}

#[test]
fn missing_events_give_unaccounted_not_a_wrong_name() {
    let e = run("missing_events.txt", 503);
    sums_to_the_latency(&e);
    assert_eq!(ns(&e, Cause::Unaccounted, ""), 500_000);
    assert_eq!(ns(&e, Cause::Switch, ""), 3_000);
    assert!(e.parts.iter().all(|p| p.name.is_empty()), "no task is named without an event showing it: {:?}", e.parts);
    assert!(e.note.as_deref().unwrap().contains("no event shows the probe's timer firing"));
    assert_eq!(e.fired_ns, None);
}

#[test]
fn idle_beyond_the_exit_latency_is_unaccounted_time_as_on_a_vm() {
    let e = run("idle_gap.txt", 3008);
    sums_to_the_latency(&e);
    assert_eq!(ns(&e, Cause::ExitFromIdle, ""), 50_000, "bounded by the idle exit latency");
    assert_eq!(ns(&e, Cause::Unaccounted, ""), 2_950_000);
    assert!(e.note.as_deref().unwrap().contains("hypervisor"));
    assert_eq!(e.timeline.first().unwrap().what, "no event", "the unexplained part comes first");
}

#[test]
fn a_fair_busy_loop_beside_a_fair_probe_is_other_task_interference() {
    let e = run("fair_spin.txt", 2003);
    sums_to_the_latency(&e);
    assert_eq!(ns(&e, Cause::OtherTask, "spin:900"), 1_996_000);
    assert_eq!(ns(&e, Cause::BlockingTask, "spin:900"), 0);
    assert!(e.blocking.is_none());
}
