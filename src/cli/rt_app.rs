//! rt-app's JSON task descriptions (rt-app 1.0, `doc/tutorial.txt`), read into a task set:
//! periodic tasks whose events are `run`/`runtime` (work) then `timer` (an absolute schedule)
//! or `sleep` (a relative one). What rtlab cannot map — locks, barriers, signals, memory and
//! I/O loads, forks, suspend/resume, several phases — is refused, naming the key and the task.
//!
//! Comments (`/* */`, `//`) and trailing commas are allowed, as rt-app's json-c allows them.

use super::tasks::TaskSpec;
use crate::measure::work::WorkKind;
use crate::rt::affinity::CpuSet;
use crate::rt::sched::{Policy, SchedParams};
use serde_json::value::RawValue;
use serde_json::Value;
use std::path::Path;

/// A task set read from an rt-app file, and what its `global` object asks of the run.
#[derive(Clone, Debug, PartialEq)]
pub struct RtAppSet {
    /// The tasks (one per instance).
    pub tasks: Vec<TaskSpec>,
    /// Which tasks sleep a relative interval after their work (rt-app's `sleep`), by index.
    pub relative: Vec<bool>,
    /// `global.duration` (`None`: -1 or absent, until stopped).
    pub duration: Option<std::time::Duration>,
    /// `global.lock_pages` (rt-app's default: false).
    pub lock_pages: bool,
    /// Periods per task when every task's `loop` bounds it (`None`: until the duration).
    pub loops: Option<u64>,
    /// Keys rtlab read and does not apply, with why (said as warnings).
    pub ignored: Vec<String>,
}

/// A JSON object with its keys in file order (rt-app's events run in the order written), each
/// value kept as its text so that nested objects keep their order too.
struct Ordered(Vec<(String, Box<RawValue>)>);

impl Ordered {
    /// The object in `raw`, in order.
    fn of(raw: &RawValue) -> Result<Ordered, serde_json::Error> {
        serde_json::from_str(raw.get())
    }

    /// Each key with its value parsed, and its text; a value serde cannot hold (`1e400`) is an
    /// error naming its key.
    fn entries(self) -> Result<Vec<(String, Value, Box<RawValue>)>, String> {
        self.0
            .into_iter()
            .map(|(k, raw)| match serde_json::from_str(raw.get()) {
                Ok(v) => Ok((k, v, raw)),
                Err(e) => Err(format!(
                    "'{k}': {} is not a value rtlab can hold ({e})",
                    crate::units::printable(&crate::units::clip(raw.get(), 40))
                )),
            })
            .collect()
    }
}

impl<'de> serde::Deserialize<'de> for Ordered {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Ordered, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Ordered;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut m: A) -> Result<Ordered, A::Error> {
                let mut v = Vec::new();
                while let Some((k, val)) = m.next_entry::<String, Box<RawValue>>()? {
                    v.push((k, val));
                }
                Ok(Ordered(v))
            }
        }
        d.deserialize_map(V)
    }
}

/// The key an event is (`run0` is a `run`): rt-app matches events by prefix.
fn event_kind(key: &str) -> &str {
    for kind in ["runtime", "run", "timer", "sleep"] {
        if key.starts_with(kind) && key[kind.len()..].bytes().all(|b| b.is_ascii_digit()) {
            return kind;
        }
    }
    key
}

/// The most threads a task set holds (instances counted).
const MAX_TASKS: u64 = 4096;

/// Reads an rt-app file: `online` are the CPUs a `cpus` array may name.
pub fn read(path: &Path, online: &CpuSet) -> Result<RtAppSet, String> {
    let shown = path.display().to_string();
    let mut text = crate::import::read_text_input(path).map_err(|(_, e)| format!("--rt-app {shown}: {e}"))?;
    json_strip_comments::strip(&mut text).map_err(|e| format!("--rt-app {shown}: {e}"))?;
    let top: Ordered = serde_json::from_str(&text)
        .map_err(|e| format!("--rt-app {shown}: not rt-app JSON (line {}): {e}", e.line()))?;
    parse(&shown, top, online)
}

fn parse(shown: &str, top: Ordered, online: &CpuSet) -> Result<RtAppSet, String> {
    let err = |m: String| format!("--rt-app {shown}: {m}");
    let mut set = RtAppSet {
        tasks: Vec::new(),
        relative: Vec::new(),
        duration: None,
        lock_pages: false,
        loops: None,
        ignored: Vec::new(),
    };
    let mut default_policy = Policy::Other;
    let mut tasks = None;
    for (k, raw) in top.0 {
        match k.as_str() {
            "tasks" => tasks = Some(raw),
            "global" => {
                let g = Ordered::of(&raw).map_err(|_| err("global is not an object".into()))?;
                let g = g.entries().map_err(|e| err(format!("global.{}", e.trim_start_matches('\''))))?;
                for (gk, gv, _) in g {
                    match gk.as_str() {
                        "duration" => {
                            let d = gv.as_i64().ok_or_else(|| err("global.duration is not a whole number of seconds".into()))?;
                            if d > 0 {
                                set.duration = Some(std::time::Duration::from_secs(d as u64));
                            } else if d != -1 {
                                return Err(err(format!("global.duration {d}: give seconds, or -1 to run until stopped")));
                            }
                        }
                        "default_policy" => {
                            default_policy = policy_name(gv.as_str().unwrap_or("")).map_err(|e| err(format!("global.default_policy: {e}")))?
                        }
                        "lock_pages" => set.lock_pages = gv.as_bool().unwrap_or(false),
                        "calibration" => set.ignored.push(format!(
                            "global.calibration {gv}: rtlab sizes each task's work on the CPU it runs on, at its policy, before it starts"
                        )),
                        "logdir" | "log_basename" | "log_size" | "gnuplot" | "ftrace" => set.ignored.push(format!(
                            "global.{gk}: rtlab writes its own outputs (--json, --samples); read rt-app's logs with rtlab import"
                        )),
                        "pi_enabled" | "io_device" | "mem_buffer_size" | "cumulative_slack" => {
                            set.ignored.push(format!("global.{gk}: no event that uses it can be mapped"))
                        }
                        _ => return Err(err(format!("global.{gk} is not an rt-app global key rtlab knows"))),
                    }
                }
            }
            "resources" => return Err(err(
                "'resources' (mutexes, barriers, conditions) cannot be mapped: rtlab runs independent periodic tasks"
                    .into(),
            )),
            _ => return Err(err(format!("unknown top-level key '{k}'; an rt-app file has tasks and global"))),
        }
    }
    let Some(raw) = tasks else { return Err(err("no 'tasks' object".into())) };
    let tasks = Ordered::of(&raw).map_err(|e| err(format!("'tasks' is not an object ({e})")))?;
    let mut all_bounded = true;
    let mut loops = Vec::new();
    for (name, body) in tasks.0 {
        let task = |m: String| err(format!("task {name}: {m}"));
        let body = Ordered::of(&body).map_err(|_| task("is not an object".into()))?;
        let mut sched = SchedParams::simple(default_policy, 0);
        let mut priority = None;
        let (mut dl_runtime, mut dl_period, mut dl_deadline) = (None, None, None);
        let (mut cpu, mut nice, mut delay, mut instance) = (None, None, 0i64, 1u64);
        let mut events: Vec<(String, Value)> = Vec::new();
        let mut thread_loop = -1i64;
        let mut phases = None;
        for (k, v, raw) in body.entries().map_err(task)? {
            let int = |what: &str| v.as_i64().ok_or_else(|| task(format!("{what} is not a whole number")));
            let us_ns = |what: &str| crate::units::to_ns(int(what)?, crate::units::NS_PER_US, what).map_err(task);
            match k.as_str() {
                "instance" => instance = int("instance")?.max(0) as u64,
                "policy" => sched.policy = policy_name(v.as_str().unwrap_or("")).map_err(task)?,
                "priority" => priority = Some(int("priority")?),
                "dl-runtime" => dl_runtime = Some(us_ns("dl-runtime")?),
                "dl-period" => dl_period = Some(us_ns("dl-period")?),
                "dl-deadline" => dl_deadline = Some(us_ns("dl-deadline")?),
                "nice" => nice = Some(int("nice")?),
                "delay" => delay = us_ns("delay")?,
                "cpus" => cpu = cpus(&v, online).map_err(task)?,
                "loop" => thread_loop = int("loop")?,
                "phases" => phases = Some(raw),
                _ => events.push((k, v)),
            }
        }
        // One phase: its events and loop; the thread's own loop then repeats it.
        let periods = if let Some(p) = phases {
            let p = Ordered::of(&p).map_err(|_| task("phases is not an object".into()))?;
            if p.0.len() != 1 || !events.is_empty() {
                return Err(task(format!(
                    "{} phases: rtlab runs one periodic phase per task; split the phases into tasks",
                    p.0.len() + usize::from(!events.is_empty())
                )));
            }
            let Some((pname, pbody)) = p.0.into_iter().next() else { return Err(task("phases is empty".into())) };
            let pbody = Ordered::of(&pbody).map_err(|_| task(format!("phase {pname} is not an object")))?;
            let mut phase_loop = -1;
            for (k, v, _) in pbody.entries().map_err(&task)? {
                match k.as_str() {
                    "loop" => phase_loop = v.as_i64().ok_or_else(|| task("loop is not a whole number".into()))?,
                    "cpus" => cpu = cpus(&v, online).map_err(&task)?,
                    _ => events.push((k, v)),
                }
            }
            // rt-app runs the phase `loop` times per loop of the thread (-1: forever).
            if phase_loop > 0 && thread_loop > 0 {
                phase_loop.saturating_mul(thread_loop)
            } else {
                -1
            }
        } else {
            // With the events in the thread object, rt-app takes `loop` for the phase and
            // repeats the thread forever (checked against rt-app 1.0: loop 5 ran until the duration).
            -1
        };
        let (work, period, relative) = periodic(&events).map_err(task)?;
        let period_ns = period.ok_or_else(|| task("has no timer or sleep: it is not periodic".into()))?;
        if let Some((_, ns)) = work {
            crate::measure::work::check_amount("run/runtime", ns).map_err(task)?;
        }
        if !(1_000..=3_600_000_000_000).contains(&period_ns) {
            return Err(task(format!("period {} µs is out of range (1 µs to 1 h)", period_ns / 1000)));
        }
        let rt = sched.policy.is_realtime_priority();
        sched.priority = match (rt, priority) {
            (true, p) => {
                let p = p.unwrap_or(10);
                if !(1..=99).contains(&p) {
                    return Err(task(format!("priority {p} is not 1 to 99 for {}", sched.policy)));
                }
                p as u32
            }
            (false, Some(p)) if p != 0 => {
                return Err(task(format!("priority {p}: {} takes none (use nice)", sched.policy)))
            }
            _ => 0,
        };
        if let Some(n) = nice {
            if !(-20..=19).contains(&n) || rt || sched.policy == Policy::Deadline {
                return Err(task(format!("nice {n}: -20 to 19, for SCHED_OTHER/BATCH only")));
            }
            sched.nice = n as i32;
        }
        if sched.policy == Policy::Deadline {
            let runtime = dl_runtime.ok_or_else(|| task("SCHED_DEADLINE needs dl-runtime".into()))?;
            let p = dl_period.unwrap_or(runtime);
            let d = dl_deadline.unwrap_or(p);
            if !(1024 <= runtime && runtime <= d && d <= p) {
                return Err(task(format!(
                    "SCHED_DEADLINE needs runtime <= deadline <= period, got {runtime} ns, {d} ns, {p} ns"
                )));
            }
            // A runtime shorter than the work is throttled in every period: the task never ends a job.
            if let Some((_, w)) = work.filter(|(_, w)| *w > runtime) {
                return Err(task(format!(
                    "dl-runtime {} µs is shorter than the work of {} µs: SCHED_DEADLINE would throttle every job; \
                     give dl-runtime at least the work",
                    runtime / 1000,
                    w / 1000
                )));
            }
            (sched.runtime_ns, sched.deadline_ns, sched.period_ns) = (runtime as u64, d as u64, p as u64);
        }
        if delay < 0 {
            return Err(task("delay is negative".into()));
        }
        // The limit holds for the whole set, before anything is multiplied.
        let room = MAX_TASKS - set.tasks.len() as u64;
        if instance == 0 || instance > room {
            return Err(task(format!(
                "instance {instance}: give 1 to {room} (a task set holds at most {MAX_TASKS} threads in all)"
            )));
        }
        all_bounded &= periods > 0;
        loops.push(periods);
        for i in 0..instance {
            set.tasks.push(TaskSpec {
                name: if instance == 1 { name.clone() } else { format!("{name}-{i}") },
                period_ns,
                work,
                deadline_ns: None,
                sched,
                cpu,
                offset_ns: delay,
            });
            set.relative.push(relative);
        }
    }
    if set.tasks.is_empty() {
        return Err(err("'tasks' is empty".into()));
    }
    // rtlab bounds every thread by one count: the file's, when every task has the same one.
    if all_bounded {
        let first = loops[0];
        if loops.iter().any(|l| *l != first) {
            return Err(err("tasks loop different numbers of times; rtlab records the same count per task (-l) — give them one loop count".into()));
        }
        set.loops = Some(first as u64);
    }
    Ok(set)
}

/// A phase's work (kind, ns), period (ns) and whether it waits relatively.
type Periodic = (Option<(WorkKind, i64)>, Option<i64>, bool);

/// A phase's events as rtlab runs them: the work (run or runtime, summed), then one timer
/// (absolute schedule) or sleep (relative, `true`); the period in ns, `None` without a wait.
/// Errors say what cannot be mapped, without the task (the caller names it).
fn periodic(events: &[(String, Value)]) -> Result<Periodic, String> {
    let mut work: Option<(WorkKind, i64)> = None;
    let (mut period, mut relative) = (None, false);
    for (k, v) in events {
        let us = || v.as_i64().filter(|n| *n > 0).ok_or_else(|| format!("{k} is not a positive number of µs"));
        match event_kind(k) {
            kind @ ("run" | "runtime") => {
                if period.is_some() {
                    return Err(format!(
                        "{k} comes after the timer/sleep: rtlab runs the work right after each wakeup; put it first"
                    ));
                }
                let kind = if kind == "run" { WorkKind::Fixed } else { WorkKind::Time };
                let ns = crate::units::to_ns(us()?, crate::units::NS_PER_US, k)?;
                work = match work {
                    None => Some((kind, ns)),
                    Some((k0, n0)) if k0 == kind => {
                        Some((k0, n0.checked_add(ns).ok_or_else(|| format!("{k}: the work adds up past 64 bits"))?))
                    }
                    Some(_) => return Err("mixes run and runtime: use one kind of work per task".to_string()),
                };
            }
            "timer" => {
                if period.is_some() {
                    return Err(format!("{k}: a second timer/sleep; rtlab runs one periodic wait per task"));
                }
                let Value::Object(t) = v else { return Err(format!("{k} is not an object")) };
                for tk in t.keys() {
                    if !["ref", "period", "mode"].contains(&tk.as_str()) {
                        return Err(format!("{k}.{tk} is not a timer key (ref, period, mode)"));
                    }
                }
                if let Some(m) = t.get("mode").and_then(Value::as_str).filter(|m| !["absolute", "relative"].contains(m))
                {
                    return Err(format!("{k}.mode '{m}': use absolute or relative"));
                }
                let p = t.get("period").and_then(Value::as_i64).filter(|p| *p > 0);
                let p = p.ok_or_else(|| format!("{k}.period is not a positive number of µs"))?;
                period = Some(crate::units::to_ns(p, crate::units::NS_PER_US, &format!("{k}.period"))?);
            }
            "sleep" => {
                if period.is_some() {
                    return Err(format!("{k}: a second timer/sleep; rtlab runs one periodic wait per task"));
                }
                period = Some(crate::units::to_ns(us()?, crate::units::NS_PER_US, k)?);
                relative = true;
            }
            _ => {
                return Err(format!(
                    "event '{k}' cannot be mapped: rtlab runs periodic tasks of run/runtime then timer or sleep"
                ))
            }
        }
    }
    Ok((work, period, relative))
}

/// `SCHED_FIFO` (rt-app's spelling) or `fifo`.
fn policy_name(s: &str) -> Result<Policy, String> {
    let short = s.strip_prefix("SCHED_").unwrap_or(s);
    short.parse().map_err(|_| {
        format!("policy '{s}': use SCHED_OTHER, SCHED_BATCH, SCHED_IDLE, SCHED_FIFO, SCHED_RR or SCHED_DEADLINE")
    })
}

/// A `cpus` array: one CPU pins the task, every online CPU leaves it free; other sets cannot
/// be mapped (rtlab pins a task to one CPU or none).
fn cpus(v: &Value, online: &CpuSet) -> Result<Option<usize>, String> {
    let list: Vec<usize> = v
        .as_array()
        .and_then(|a| a.iter().map(|c| c.as_u64().map(|c| c as usize)).collect())
        .ok_or("cpus is not an array of CPU numbers")?;
    let set = CpuSet::from_cpus(list.iter().copied());
    let missing = set.difference(online);
    if !missing.is_empty() {
        return Err(format!("cpus names CPU {missing}, which does not exist or is offline; online CPUs are {online}"));
    }
    match set.len() {
        1 => Ok(Some(set.cpus()[0])),
        n if n == online.len() => Ok(None),
        _ => Err(format!("cpus [{set}]: rtlab pins a task to one CPU or leaves it free on all; give one CPU")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(json: &str) -> Result<RtAppSet, String> {
        let mut text = json.to_string();
        json_strip_comments::strip(&mut text).unwrap();
        parse("t.json", serde_json::from_str(&text).map_err(|e| e.to_string())?, &CpuSet::from_cpus([0, 1]))
    }

    #[test]
    fn a_periodic_rt_app_task_becomes_a_task_with_work_and_a_period() {
        let s = set(r#"{
            /* the tutorial's example 2, with a comment and a trailing comma */
            "tasks": { "thread0": { "instance": 2, "loop": -1, "policy": "SCHED_FIFO", "cpus": [1],
                        "run": 10000, "timer": { "ref": "unique", "period": 100000, "mode": "absolute" }, } },
            "global": { "duration": 2, "calibration": "CPU0", "default_policy": "SCHED_OTHER", "lock_pages": true,
                        "logdir": "./", "log_basename": "rt-app2", "ftrace": true, "gnuplot": true }
        }"#)
        .unwrap();
        assert_eq!(s.tasks.len(), 2);
        let t = &s.tasks[1];
        assert_eq!(
            (t.name.as_str(), t.period_ns, t.work),
            ("thread0-1", 100_000_000, Some((WorkKind::Fixed, 10_000_000)))
        );
        assert_eq!((t.sched.policy, t.sched.priority, t.cpu), (Policy::Fifo, 10, Some(1)));
        assert_eq!((s.duration, s.lock_pages, s.loops), (Some(std::time::Duration::from_secs(2)), true, None));
        assert!(s.ignored.iter().any(|i| i.contains("calibration")), "{:?}", s.ignored);
        assert_eq!(s.relative, vec![false, false]);
    }

    #[test]
    fn sleep_runtime_phases_loops_and_deadline_parameters_map() {
        let s = set(r#"{ "tasks": {
            "a": { "runtime": 2000, "sleep": 8000 },
            "b": { "policy": "SCHED_DEADLINE", "dl-runtime": 3000, "dl-period": 10000, "loop": 4,
                   "phases": { "p": { "loop": 25, "run0": 1000, "run1": 500, "timer0": { "ref": "b", "period": 10000 } } } }
        } }"#);
        // a: unbounded; b: 4 × 25 periods: they differ only in being bounded, so no common count.
        let s = s.unwrap();
        assert_eq!(s.tasks[0].work, Some((WorkKind::Time, 2_000_000)));
        assert_eq!(s.relative, vec![true, false]);
        assert_eq!(s.tasks[1].work, Some((WorkKind::Fixed, 1_500_000)));
        assert_eq!((s.tasks[1].sched.runtime_ns, s.tasks[1].sched.period_ns), (3_000_000, 10_000_000));
        assert_eq!(s.loops, None);
        let bounded = set(
            r#"{ "tasks": { "b": { "loop": 4, "phases": { "p": { "loop": 25, "run": 10, "timer": { "ref": "b", "period": 1000 } } } } } }"#,
        );
        assert_eq!(bounded.unwrap().loops, Some(100));
    }

    #[test]
    fn what_cannot_be_mapped_is_refused_naming_the_key_and_the_task() {
        for (json, says) in [
            (
                r#"{ "tasks": { "t": { "lock": "m", "run": 10, "timer": { "ref": "x", "period": 100 } } } }"#,
                "task t: event 'lock'",
            ),
            (
                r#"{ "tasks": { "t": { "run": 10, "barrier": "b", "timer": { "ref": "x", "period": 100 } } } }"#,
                "task t: event 'barrier'",
            ),
            (r#"{ "tasks": { "t": { "mem": 1000, "timer": { "ref": "x", "period": 100 } } } }"#, "event 'mem'"),
            (r#"{ "tasks": { "t": { "run": 10 } } }"#, "not periodic"),
            (
                r#"{ "tasks": { "t": { "run": 10, "timer": { "ref": "x", "period": 100 }, "run1": 5 } } }"#,
                "comes after",
            ),
            (
                r#"{ "tasks": { "t": { "phases": { "a": { "run": 1, "sleep": 1 }, "b": { "run": 1, "sleep": 1 } } } } }"#,
                "2 phases",
            ),
            (r#"{ "tasks": { "t": { "cpus": [0, 5], "run": 1, "sleep": 1 } } }"#, "CPU 5"),
            (r#"{ "resources": {}, "tasks": {} }"#, "'resources'"),
            (
                r#"{ "tasks": { "t": { "run": 10, "timer": { "ref": "x", "period": 100, "mode": "sideways" } } } }"#,
                "mode 'sideways'",
            ),
            (
                r#"{ "tasks": { "t": { "policy": "SCHED_DEADLINE", "run": 10, "timer": { "ref": "x", "period": 100 } } } }"#,
                "needs dl-runtime",
            ),
            (r#"{ "global": { "colour": 1 }, "tasks": {} }"#, "global.colour"),
        ] {
            let e = set(json).unwrap_err();
            assert!(e.contains(says), "{json}: {e}");
        }
    }
}
