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
fn nested_interrupts_are_not_counted_twice_and_a_higher_task_run_first_from_idle_is_the_blocking_task() {
    let e = run("nested_softirq.txt", 83);
    sums_to_the_latency(&e);
    assert_eq!(ns(&e, Cause::Softirq, "NET_RX"), 35_000, "40 µs of softirq less the 5 µs IRQ inside it");
    assert_eq!(ns(&e, Cause::Irq, "eth0"), 5_000);
    assert_eq!(ns(&e, Cause::ExitFromIdle, ""), 1_000);
    assert_eq!(ns(&e, Cause::TimerIrq, ""), 4_000);
    // The CPU was idle when the timer fired; the first task given the CPU before the probe
    // blocked it, as a task running at the fire would have: the same cause in every spike.
    assert_eq!(ns(&e, Cause::BlockingTask, "hi:600"), 28_000);
    assert_eq!(ns(&e, Cause::OtherTask, "hi:600"), 0);
    // Idle after the wakeup until the softirq: the switch had not happened yet.
    assert_eq!(ns(&e, Cause::Switch, ""), 5_000 + 2_000 + 3_000);
    let b = e.blocking.expect("hi:600 blocked the probe");
    assert_eq!((b.comm.as_str(), b.pid), ("hi", 600));
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

#[test]
fn a_switch_the_kernel_did_not_trace_leaves_its_gap_unaccounted_and_names_the_task_from_then_on() {
    let e = run("unseen_switch.txt", 402);
    sums_to_the_latency(&e);
    // Idle at the deadline, then `spin` is seen running without a switch: when it took the
    // CPU is unknown, so the time before its first event is unaccounted.
    assert_eq!(ns(&e, Cause::Unaccounted, ""), 10_000);
    assert_eq!(ns(&e, Cause::TimerIrq, ""), 3_000);
    assert_eq!(ns(&e, Cause::BlockingTask, "spin:900"), 387_000);
    assert_eq!(e.blocking.as_ref().unwrap().policy, "RT 90", "its priority comes from the switch that ends it");
    assert_eq!(ns(&e, Cause::Switch, ""), 2_000);
}

#[test]
fn a_probe_silent_past_the_switch_budget_is_split_so_the_parts_still_sum_to_the_latency() {
    // Timer at +2 µs, switch at +10 µs, clock read at +200 µs with no event between.
    let e = run("switch_silence.txt", 200);
    sums_to_the_latency(&e);
    assert_eq!(ns(&e, Cause::ExitFromIdle, ""), 1_000);
    assert_eq!(ns(&e, Cause::TimerIrq, ""), 2_000);
    // The idle after the timer (7 µs) and the first 43 µs of the probe: the 50 µs switch budget.
    assert_eq!(ns(&e, Cause::Switch, ""), 50_000);
    assert_eq!(ns(&e, Cause::Unaccounted, ""), 147_000, "the rest of the silence, from +53 µs to +200 µs");
    let last = e.timeline.last().unwrap();
    assert_eq!((last.what.as_str(), last.start_ns, last.end_ns), ("no event", 53_000, 200_000), "{:#?}", e.timeline);
    assert!(e.note.as_deref().unwrap().contains("longer than a switch takes"));
}

#[test]
fn the_idle_exit_bound_holds_over_every_idle_stretch_of_the_window() {
    // Idle 0-30 µs, an IRQ, idle 35-95 µs, the timer: 50 µs of exit at most, the last ones.
    let e = run("idle_stretches.txt", 101);
    sums_to_the_latency(&e);
    assert_eq!(ns(&e, Cause::ExitFromIdle, ""), 50_000);
    assert_eq!(ns(&e, Cause::Unaccounted, ""), 30_000 + 10_000);
    assert_eq!(ns(&e, Cause::Irq, "eth0"), 5_000);
    // A tighter bound (the PM QoS limit rtlab holds: only polling idle) leaves less to the exit.
    let spike = Spike { thread: 0, cpu: 1, cycle: 7, tid: 500, deadline_ns: D, wake_ns: D + 101_000 };
    let tight = Bounds { idle_exit_ns: 20_000, ..Bounds::default() };
    let e = explain(&spike, &events("idle_stretches.txt"), tight, &|_| None);
    sums_to_the_latency(&e);
    assert_eq!(ns(&e, Cause::ExitFromIdle, ""), 20_000);
    assert_eq!(ns(&e, Cause::Unaccounted, ""), 70_000);
}

#[test]
fn a_probe_that_slept_before_its_deadline_did_not_arm_its_timer_late() {
    let e = run("early_sleep.txt", 8);
    sums_to_the_latency(&e);
    assert_eq!(ns(&e, Cause::ExitFromIdle, ""), 2_000, "deadline → the timer interrupt, the CPU idle");
    assert_eq!(ns(&e, Cause::BlockingTask, ""), 0);
    assert!(e.blocking.is_none());
}

#[test]
fn a_blocker_of_the_probes_priority_or_of_unknown_priority_is_not_called_higher() {
    let e = run("equal_blocker.txt", 1004);
    sums_to_the_latency(&e);
    let b = e.blocking.as_ref().unwrap();
    assert_eq!((b.priority, b.preempted_late), (rtlab::trace::explain::Rank::Equal, false));
    let text = e.describe(true);
    assert!(text.contains("blk:4711 has the probe's priority"), "{text}");
    assert!(!text.contains("higher priority"), "{text}");
    let e = run("fifo_blocker.txt", 1004);
    assert_eq!(e.blocking.as_ref().unwrap().priority, rtlab::trace::explain::Rank::Higher);
    assert!(e.describe(true).contains("blk:4711 has higher priority than the probe"));
    let e = run("unknown_blocker.txt", 403);
    sums_to_the_latency(&e);
    let b = e.blocking.as_ref().unwrap();
    assert_eq!((b.priority, b.policy.as_str()), (rtlab::trace::explain::Rank::Unknown, "priority unknown"));
    let text = e.describe(true);
    assert!(text.contains("its priority is unknown") && !text.contains("higher priority"), "{text}");
}

#[test]
fn an_nmi_ends_only_itself_and_an_irq_entered_inside_its_rounded_start_keeps_its_time() {
    // softirq TIMER from +10; NMI 21.5-26 µs (its end minus delta_ns); eth0 printed at +22
    // and exits at +43; the softirq exits at +50.
    let e = run("nmi_overlap.txt", 54);
    sums_to_the_latency(&e);
    assert_eq!(ns(&e, Cause::Nmi, "perf_event_nmi_handler"), 4_500);
    assert_eq!(ns(&e, Cause::Irq, "eth0"), 17_000, "from the NMI's end to its exit");
    assert_eq!(ns(&e, Cause::Softirq, "TIMER"), 11_500 + 7_000);
}

#[test]
fn an_interrupt_whose_exit_was_lost_is_unaccounted_after_its_last_event_never_named() {
    let e = run("lost_exit.txt", 307);
    sums_to_the_latency(&e);
    assert_eq!(ns(&e, Cause::Irq, "eth0"), 2_000, "from its entry to its last event");
    assert_eq!(ns(&e, Cause::Unaccounted, ""), 293_000);
    assert!(e.note.as_deref().unwrap().contains("exit event of IRQ eth0 was lost"), "{:?}", e.note);
}

#[test]
fn every_fixture_explains_to_parts_that_sum_to_the_latency_at_any_wakeup() {
    let mut checked = 0;
    for entry in std::fs::read_dir("tests/fixtures/trace").unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if !name.ends_with(".txt") {
            continue;
        }
        let ev = events(&name);
        for wake_us in [1, 2, 5, 10, 37, 100, 199, 200, 250, 307, 403, 1004, 3008, 5000] {
            if name.starts_with("noise_") {
                let gap = Spike { thread: 0, cpu: 1, cycle: 1, tid: 700, deadline_ns: D, wake_ns: D + wake_us * 1000 };
                let (e, _) = rtlab::trace::noise::attribute(&gap, &ev, &|_| None);
                sums_to_the_latency(&e);
            } else {
                sums_to_the_latency(&run(&name, wake_us));
            }
            checked += 1;
        }
    }
    assert!(checked >= 14 * 17, "every fixture at every wakeup: {checked}");
}

// Ground truth on the real kernel (root, tracefs): loads whose effect is known, and the
// explanation must name them.

mod common;

/// Why the real kernel cannot be traced here, if it cannot.
fn untraceable() -> Option<String> {
    if !common::is_root() {
        return Some("not root: tracefs instances need root".into());
    }
    if !std::path::Path::new("/sys/kernel/tracing/instances").is_dir()
        && !std::path::Path::new("/sys/kernel/debug/tracing/instances").is_dir()
    {
        return Some("tracefs is not mounted at /sys/kernel/tracing".into());
    }
    None
}

/// The highest online CPU (the probe's), as text.
fn probe_cpu() -> String {
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    online.trim().rsplit([',', '-']).next().unwrap().to_string()
}

/// `rtlab run ARGS --json -` on `cpu` while `load` (a stress-ng command line) runs there.
/// One real-kernel test at a time: their loads share the probe's CPU.
static REAL_KERNEL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn explained_under(load: &[&str], args: &[&str]) -> serde_json::Value {
    use std::os::unix::process::CommandExt;
    let _one = REAL_KERNEL.lock().unwrap_or_else(|e| e.into_inner());
    let stress = std::process::Command::new("stress-ng")
        .args(load)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .process_group(0)
        .spawn()
        .expect("stress-ng (apt install stress-ng)");
    std::thread::sleep(std::time::Duration::from_millis(700));
    let out =
        common::rtlab().args(["run", "-q", "-t1", "-i1ms", "-D", "3s", "--json", "-"]).args(args).output().unwrap();
    // The load's processes (its process group), to tell them from any other stress-ng running.
    let pids = common::group_pids(&stress);
    common::stop_bursts(stress);
    assert!(matches!(out.status.code(), Some(0 | 3)), "{}", String::from_utf8_lossy(&out.stderr));
    let mut v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    common::assert_valid_run_result(&v);
    v["load_pids"] = serde_json::json!(pids);
    assert!(v["explain"]["unavailable"].is_null(), "{}", v["explain"]);
    assert!(
        !std::path::Path::new(&format!("/sys/kernel/tracing/instances/{}", v["explain"]["instance"].as_str().unwrap()))
            .exists(),
        "the instance is removed at exit"
    );
    // On the real kernel too, every explanation partitions its latency exactly.
    for e in v["explanations"].as_array().unwrap() {
        let parts: i64 = e["parts"].as_array().unwrap().iter().map(|p| p["ns"].as_i64().unwrap()).sum();
        assert_eq!(parts, e["latency_ns"].as_i64().unwrap(), "{e:#}");
        let covered: i64 = e["timeline"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["end_ns"].as_i64().unwrap() - s["start_ns"].as_i64().unwrap())
            .sum();
        assert_eq!(covered, e["latency_ns"].as_i64().unwrap(), "{e:#}");
    }
    v
}

#[test]
fn a_fifo_90_spinner_on_the_probes_cpu_is_the_blocking_task_of_its_spikes() {
    if let Some(why) = untraceable() {
        eprintln!("SKIPPED (needs the real kernel's tracefs): {why}");
        return;
    }
    let cpu = probe_cpu();
    let v = explained_under(
        &[
            "--cpu",
            "1",
            "--cpu-load",
            "2",
            "--cpu-load-slice",
            "1",
            "--taskset",
            &cpu,
            "--sched",
            "fifo",
            "--sched-prio",
            "90",
            "--timeout",
            "8s",
        ],
        &["-a", &cpu, "-p50", "--explain=300us"],
    );
    let ex = v["explanations"].as_array().unwrap();
    // The spikes the spinner took part in for at least 100 µs (its bursts are 1 ms; on this VM
    // the host may take most of a window instead, leaving the spinner a few µs of it).
    let load: Vec<String> =
        v["load_pids"].as_array().unwrap().iter().map(|p| p.as_str().unwrap().to_string()).collect();
    let ours = |name: &str| name.starts_with("stress-ng") && load.iter().any(|p| name.ends_with(p.as_str()));
    let named: Vec<&serde_json::Value> = ex.iter().filter(|e| spinner_part(e, &ours).is_some()).collect();
    assert!(named.len() >= 3, "a 1 ms burst every 50 ms for 3 s makes dozens of spikes: {ex:#?}");
    for e in &named {
        the_spinner_is_named_as_a_task_of_the_spike(e, &ours);
    }
    // How much of one spike the host takes is the host's: under qemu-user in CI (2026-12-02) a
    // 7 ms spike held 3.3 ms of local timer and 2.5 ms of no event beside the spinner's 587 µs.
    // Of dozens, the spinner holding the CPU at the fire and being the largest part is the case
    // the explainer must get right somewhere; that it is so in each is the host's to decide.
    assert!(
        named.iter().any(|e| the_spinner_blocked_and_is_the_largest_part(e, &ours)),
        "no spike names the spinner as its blocking task with its largest part: {named:#?}"
    );
    // Every other spike is put down to something else, never left out.
    for e in ex.iter().filter(|e| !e.to_string().contains("stress-ng")) {
        assert!(!e["parts"].as_array().unwrap().is_empty(), "{e:#}");
    }
}

/// The largest part a spike's explanation gives the load's spinner (`ours` tells its names),
/// if it is at least 100 µs.
fn spinner_part(e: &serde_json::Value, ours: &dyn Fn(&str) -> bool) -> Option<serde_json::Value> {
    e["parts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| ours(p["name"].as_str().unwrap()))
        .max_by_key(|p| p["ns"].as_i64().unwrap())
        .filter(|p| p["ns"].as_i64().unwrap() >= 100_000)
        .cloned()
}

/// Blocking (it held the CPU when the timer fired), interfering (it took the CPU between the
/// wakeup and the switch) or holding back the timer's interrupt (the host may delay it while
/// the spinner runs, which the trace shows as the spinner's time with interrupts off): the
/// spinner is named as a task, and a blocker is told as what it is, FIFO 90, higher.
fn the_spinner_is_named_as_a_task_of_the_spike(e: &serde_json::Value, ours: &dyn Fn(&str) -> bool) {
    let named = spinner_part(e, ours).unwrap();
    assert!(matches!(named["cause"].as_str(), Some("blocking_task" | "other_task" | "irqs_disabled")), "{e:#}");
    assert!(named["name"].as_str().unwrap().starts_with("stress-ng"), "{e:#}");
    let parts = e["parts"].as_array().unwrap();
    if parts.iter().any(|p| p["cause"] == "blocking_task" && ours(p["name"].as_str().unwrap())) {
        assert!(e["blocking"]["comm"].as_str().unwrap().starts_with("stress-ng"), "{e:#}");
        assert_eq!(e["blocking"]["policy"], "FIFO 90", "{e:#}");
        assert_eq!(e["blocking"]["priority"], "higher", "{e:#}");
        assert_eq!(e["blocking"]["preempted_late"], false, "a FIFO 90 task simply has higher priority: {e:#}");
    }
    let shares: f64 = parts.iter().map(|p| p["share"].as_f64().unwrap()).sum();
    assert!((shares - 100.0).abs() < 1e-6, "{e:#}");
}

/// Whether the spinner blocked the probe and its parts together outweigh any other named part
/// (time with no event is the host's, not a name the explainer gave).
fn the_spinner_blocked_and_is_the_largest_part(e: &serde_json::Value, ours: &dyn Fn(&str) -> bool) -> bool {
    let parts = e["parts"].as_array().unwrap();
    let ns = |p: &serde_json::Value| p["ns"].as_i64().unwrap();
    let spinners: i64 = parts.iter().filter(|p| ours(p["name"].as_str().unwrap())).map(ns).sum();
    let named_other = |p: &&serde_json::Value| p["cause"] != "unaccounted" && !ours(p["name"].as_str().unwrap());
    let others = parts.iter().filter(named_other).map(ns).max().unwrap_or(0);
    spinner_part(e, ours).is_some_and(|p| p["cause"] == "blocking_task") && spinners > others
}

#[test]
fn a_fair_busy_loop_beside_a_fair_probe_is_other_task_interference_on_the_real_kernel() {
    if let Some(why) = untraceable() {
        eprintln!("SKIPPED (needs the real kernel's tracefs): {why}");
        return;
    }
    let cpu = probe_cpu();
    let v = explained_under(
        &["--cpu", "1", "--taskset", &cpu, "--timeout", "8s"],
        &["-a", &cpu, "--policy", "other", "--explain-worst", "10"],
    );
    let ex = v["explanations"].as_array().unwrap();
    assert_eq!(ex.len(), 10, "the 10 largest samples are explained");
    let mut seen = 0;
    for e in ex {
        for p in e["parts"].as_array().unwrap() {
            if p["name"].as_str().unwrap().starts_with("stress-ng") {
                // Running when the timer was due (irqs_disabled) or after it (other_task);
                // never a blocker: both are fair tasks.
                assert_ne!(
                    p["cause"], "blocking_task",
                    "a fair loop beside a fair probe is other-task interference: {e:#}"
                );
                seen += (p["cause"] == "other_task") as usize;
            }
        }
    }
    assert!(seen > 0, "the busy loop appears in the worst spikes: {ex:#?}");
}

#[test]
fn a_loopback_udp_flood_on_the_probes_cpu_shows_network_softirqs() {
    if let Some(why) = untraceable() {
        eprintln!("SKIPPED (needs the real kernel's tracefs): {why}");
        return;
    }
    let cpu = probe_cpu();
    // The flood at FIFO 10 (below the probe's 50) keeps sending whatever else the machine runs
    // (a busy machine's SCHED_OTHER work would starve it), and the 100 largest samples are
    // explained: other spikes may be larger than the softirqs' on a busy machine.
    let v = explained_under(
        &["--udp", "1", "--taskset", &cpu, "--sched", "fifo", "--sched-prio", "10", "--timeout", "8s"],
        &["-a", &cpu, "-p50", "--explain-worst", "100"],
    );
    let ex = v["explanations"].as_array().unwrap();
    let net: i64 = ex
        .iter()
        .flat_map(|e| e["parts"].as_array().unwrap().iter())
        .filter(|p| p["cause"] == "softirq" && p["name"].as_str().unwrap().starts_with("NET_"))
        .map(|p| p["ns"].as_i64().unwrap())
        .sum();
    assert!(net > 0, "NET_RX/NET_TX softirq time in the worst spikes: {ex:#?}");
}

#[test]
fn without_rights_the_run_goes_on_and_says_why_nothing_is_explained() {
    if !common::is_root() {
        eprintln!("SKIPPED: drops root to show the unprivileged case; run as root");
        return;
    }
    let (mut cmd, _dir) = common::unprivileged("rtlab");
    let out = cmd.args(["run", "-q", "-t1", "-a0", "-i1ms", "-l", "200", "--explain", "--json", "-"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(matches!(out.status.code(), Some(0 | 3)), "{err}");
    assert!(err.contains("rtlab: warning: spikes cannot be explained: "), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["explain"]["unavailable"].is_string(), "{}", v["explain"]);
    assert_eq!(v["all"]["cycles"], 200, "the measurement itself went on");
}

#[test]
fn a_probe_kept_from_sleeping_until_after_its_deadline_blames_the_task_that_kept_it() {
    // The previous cycle's wakeup waited for `spin` (FIFO 90) until 300 µs past this deadline;
    // the probe armed its timer only then, so the timer itself was on time.
    let e = run("late_arm.txt", 315);
    sums_to_the_latency(&e);
    assert_eq!(ns(&e, Cause::BlockingTask, "spin:900"), 300_000);
    assert_eq!(ns(&e, Cause::Switch, ""), 15_000);
    assert_eq!(ns(&e, Cause::IrqsDisabled, "spin:900"), 0, "not a timer delay: the timer was not armed");
    let b = e.blocking.unwrap();
    assert_eq!((b.comm.as_str(), b.policy.as_str(), b.preempted_late), ("spin", "RT 90", false));
}

#[test]
fn explained_runs_are_reported_with_timelines_compared_by_share_and_cyclictest_b_explains_its_break() {
    if let Some(why) = untraceable() {
        eprintln!("SKIPPED (needs the real kernel's tracefs): {why}");
        return;
    }
    let _one = REAL_KERNEL.lock().unwrap_or_else(|e| e.into_inner());
    let cpu = probe_cpu();
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.json"), dir.path().join("b.json"));
    for f in [&a, &b] {
        let out = common::rtlab()
            .args(["run", "-q", "-t1", "-a", &cpu, "-p50", "-i1ms", "-D", "1s", "--explain-worst", "2", "--json"])
            .arg(f)
            .output()
            .unwrap();
        assert!(matches!(out.status.code(), Some(0 | 3)), "{out:?}");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("why it was late (events of tracefs instance rtlab-"), "{text}");
        let head = text.lines().find(|l| l.starts_with("why it was late")).unwrap_or_default();
        assert!(!head.contains(" above "), "no threshold was given, so no count above one: {head}");
        assert!(text.lines().any(|l| l.starts_with("max ") && l.contains(" on thread 0 (CPU ")), "{text}");
    }
    let v = common::read_json(&a);
    assert_eq!(v["explanations"].as_array().unwrap().len(), 2);
    let html = dir.path().join("r.html");
    let out = common::rtlab().arg("report").arg(&a).arg("-o").arg(&html).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("Why it was late (--explain)"));
    assert!(
        page.contains("<figure id=\"timeline-0-0\">") && page.contains("<figure id=\"timeline-0-1\">"),
        "a timeline per explained spike"
    );
    assert!(page.contains("where the latency went"));
    assert!(!page.contains("above the threshold"), "no threshold was given: none is counted");
    let out = common::rtlab().arg("compare").args([&a, &b]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.lines().any(|l| l.contains("explained.")), "attribution shares are compared: {text}");
    // cyclictest -b: the sample that broke the run, explained as comment lines.
    let out = common::rtlab()
        .args(["cyclictest", "-q", "-t1", "-a", &cpu, "-p80", "-i1000", "-b", "1", "-D", "5"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "{text}");
    assert!(text.contains("# Break value: "), "{text}");
    assert!(text.lines().any(|l| l.starts_with("# max ") || l.starts_with("# spike ")), "{text}");
}

#[test]
fn ctrl_c_during_an_explained_run_removes_the_instance_and_keeps_the_explanations() {
    if let Some(why) = untraceable() {
        eprintln!("SKIPPED (needs the real kernel's tracefs): {why}");
        return;
    }
    let _one = REAL_KERNEL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let child = std::process::Command::new(common::rtlab_path())
        .args(["run", "-q", "-t1", "-a", &probe_cpu(), "-i1ms", "--explain-worst", "1", "--json"])
        .arg(&json)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let instance = instance_made(child.id());
    let _ = std::process::Command::new("kill").args(["-INT", &child.id().to_string()]).status();
    let out = child.wait_with_output().unwrap();
    assert!(matches!(out.status.code(), Some(0 | 3)), "{out:?}");
    assert!(!std::path::Path::new(&instance).exists(), "removed at exit");
    let v = common::read_json(&json);
    assert_eq!(v["end_reason"], "signal");
    assert_eq!(v["explanations"].as_array().unwrap().len(), 1);
}

/// The tracefs instance of rtlab process `pid`, once it has made it, and a second more
/// for samples to explain (a fixed 1.5 s could end before a debug build's start beside the
/// rest of the suite).
fn instance_made(pid: u32) -> std::path::PathBuf {
    let bound = common::spawn_bound(std::time::Duration::from_secs(60));
    common::wait_for(&format!("rtlab {pid}'s tracefs instance"), bound, || instance_of(pid).is_some());
    std::thread::sleep(std::time::Duration::from_secs(1));
    instance_of(pid).expect("the run records in its own instance")
}

/// The tracefs instance of rtlab process `pid` (`rtlab-PID-XXXXXXXX`), if it has one.
fn instance_of(pid: u32) -> Option<std::path::PathBuf> {
    std::fs::read_dir("/sys/kernel/tracing/instances")
        .ok()?
        .flatten()
        .find(|e| e.file_name().to_string_lossy().starts_with(&format!("rtlab-{pid}-")))
        .map(|e| e.path())
}

#[test]
fn sighup_ends_a_run_cleanly_and_a_second_signal_still_removes_the_instance() {
    if let Some(why) = untraceable() {
        eprintln!("SKIPPED (needs the real kernel's tracefs): {why}");
        return;
    }
    let _one = REAL_KERNEL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let spawn = |json: &std::path::Path| {
        std::process::Command::new(common::rtlab_path())
            .args(["run", "-q", "-t1", "-a", &probe_cpu(), "-i1ms", "--explain-worst", "1", "--json"])
            .arg(json)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap()
    };
    // SIGHUP (a closed terminal) is a stop like SIGTERM: the result is written, the instance gone.
    let json = dir.path().join("hup.json");
    let child = spawn(&json);
    let instance = instance_made(child.id());
    let _ = std::process::Command::new("kill").args(["-HUP", &child.id().to_string()]).status();
    let out = child.wait_with_output().unwrap();
    assert!(matches!(out.status.code(), Some(0 | 3)), "{out:?}");
    assert!(!instance.exists(), "removed at exit");
    assert_eq!(common::read_json(&json)["end_reason"], "signal");
    // Two signals at once: the emergency exit (130) still switches tracing off and removes it.
    let child = spawn(&dir.path().join("twice.json"));
    let instance = instance_made(child.id());
    let pid = child.id().to_string();
    let _ = std::process::Command::new("kill").args(["-TERM", &pid]).status();
    let _ = std::process::Command::new("kill").args(["-TERM", &pid]).status();
    let out = child.wait_with_output().unwrap();
    if out.status.code() == Some(130) {
        assert!(!instance.exists(), "the emergency exit removed {}", instance.display());
    } else {
        // The first signal's clean stop won the race: the instance went the normal way.
        assert!(matches!(out.status.code(), Some(0 | 3)), "{out:?}");
        assert!(!instance.exists());
    }
}

#[test]
fn an_instance_whose_owner_died_is_removed_and_a_live_one_is_kept() {
    if let Some(why) = untraceable() {
        eprintln!("SKIPPED (needs the real kernel's tracefs): {why}");
        return;
    }
    let _one = REAL_KERNEL.lock().unwrap_or_else(|e| e.into_inner());
    let root = std::path::Path::new("/sys/kernel/tracing/instances");
    // A dead run's instance named with a PID that is alive now (ours: a reused PID), and one
    // that a live process holds locked.
    let dead = root.join(format!("rtlab-{}-0badc0de", std::process::id()));
    let live = root.join("rtlab-1-0c0ffee0");
    std::fs::create_dir(&dead).unwrap();
    std::fs::create_dir(&live).unwrap();
    let mut holder =
        std::process::Command::new("flock").arg(&live).args(["sleep", "30"]).spawn().expect("flock (util-linux)");
    std::thread::sleep(std::time::Duration::from_millis(300));
    let out = common::rtlab()
        .args(["run", "-q", "-t1", "-a", &probe_cpu(), "-l", "100", "--explain", "--json", "-"])
        .output()
        .unwrap();
    let _ = holder.kill();
    let _ = holder.wait();
    let kept = live.exists();
    let _ = std::fs::remove_dir(&live);
    let _ = std::fs::remove_dir(&dead);
    assert!(matches!(out.status.code(), Some(0 | 3)), "{out:?}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["explain"]["unavailable"].is_null(), "{}", v["explain"]);
    assert!(kept, "a live instance is never touched");
    assert!(!dead.exists(), "the dead run's instance was removed although its PID is alive");
}

#[test]
fn measuring_every_cpu_warns_that_the_trace_reader_shares_them() {
    if let Some(why) = untraceable() {
        eprintln!("SKIPPED (needs the real kernel's tracefs): {why}");
        return;
    }
    let _one = REAL_KERNEL.lock().unwrap_or_else(|e| e.into_inner());
    let out = common::rtlab().args(["run", "-q", "-i1ms", "-l", "200", "--explain", "--json", "-"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(matches!(out.status.code(), Some(0 | 3)), "{err}");
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    assert!(
        err.contains(&format!("--explain's trace reader shares CPU {} with the measurement", online.trim())),
        "{err}"
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["warnings"].as_array().unwrap().iter().any(|w| w["kind"] == "trace_reader_shared"));
}
