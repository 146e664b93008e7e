//! rt-app's JSON use cases (rt-app 1.0, `doc/tutorial.txt`), read into a
//! [`UseCase`]: `global`, `tasks` with `instance`, `loop`, `policy`, `priority`, `dl-*`, `cpus`,
//! `delay` and `phases`, and every event in file order. Read as rt-app reads it: comments and
//! trailing commas are allowed (json-c allows them), a key given twice keeps both in order,
//! events are found by prefix (`run0`, `sleep2`), keys rt-app does not use are ignored with a
//! warning (rt-app ignores them too), and a value rtlab cannot honour is refused naming the
//! task, the event and the key.

use crate::probes::rt_app::model::{Event, LogSpec, Phase, Resource, ResourceKind, ThreadSpec, UseCase};
use crate::rt::affinity::CpuSet;
use crate::rt::sched::{Policy, SchedParams};
use serde_json::value::RawValue;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// A JSON object with its keys in file order, repeated keys kept (rt-app's events run in the
/// order written), each value kept as its text so that nested objects keep their order too.
struct Ordered(Vec<(String, Box<RawValue>)>);

impl Ordered {
    /// The object in `raw`, in order.
    fn of(raw: &RawValue) -> Result<Ordered, serde_json::Error> {
        serde_json::from_str(raw.get())
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

/// The most threads a use case holds (instances counted).
pub const MAX_THREADS: usize = 4096;
/// The most events in all the threads together (instances counted).
pub const MAX_EVENTS: usize = 200_000;
/// The longest time one event may ask for (1 h, in µs).
const MAX_US: i64 = 3_600_000_000;
/// The most bytes one `mem`/`iorun` event or `mem_buffer_size` may ask for (1 GiB).
const MAX_BYTES: i64 = 1 << 30;
/// The most bytes the threads' `mem`/`iorun` buffers may take together (1 GiB); the
/// histograms are bounded apart (`Layout::check_memory`, counted before any is allocated).
pub const MAX_BUFFERS: usize = 1 << 30;

/// Reads an rt-app file: `online` are the CPUs a `cpus` array may name.
pub fn read(path: &Path, online: &CpuSet) -> Result<UseCase, String> {
    let shown = path.display().to_string();
    let mut text = crate::import::read_text_input(path).map_err(|(_, e)| format!("--rt-app {shown}: {e}"))?;
    json_strip_comments::strip(&mut text).map_err(|e| format!("--rt-app {shown}: {e}"))?;
    let top: Ordered = serde_json::from_str(&text).map_err(|e| {
        let hint = if e.to_string().contains("expected `:`") {
            " — a key without a value (a bare \"suspend\", which rt-app's workgen fills in and rt-app itself \
             refuses): give it one, e.g. \"suspend\": \"<task>\""
        } else {
            ""
        };
        format!("--rt-app {shown}: not rt-app JSON (line {}): {e}{hint}", e.line())
    })?;
    let uc = parse(top, online).map_err(|e| format!("--rt-app {shown}: {e}"))?;
    check_io_device(&uc).map_err(|e| format!("--rt-app {shown}: {e}"))?;
    Ok(uc)
}

/// Where `iorun` writes, checked before anything runs when a thread has one: only a sink
/// device or a new file rtlab creates (never an existing file, never through a symlink, never
/// `/proc` or `/sys`).
fn check_io_device(uc: &UseCase) -> Result<(), String> {
    if !uc.threads.iter().any(ThreadSpec::does_iorun) {
        return Ok(());
    }
    crate::rt::fs::io_target(&uc.io_device).map(|_| ()).map_err(|what| {
        format!(
            "global.io_device {} is {what}: rtlab's iorun writes only to /dev/null, /dev/zero or a new file it \
             creates (and removes at the end); give a path that does not exist yet in an ordinary directory",
            crate::units::printable(&uc.io_device.display().to_string())
        )
    })
}

/// A key's value; one serde cannot hold (`1e400`) is an error naming the key and the value.
fn value(k: &str, raw: &RawValue) -> Result<Value, String> {
    serde_json::from_str(raw.get()).map_err(|e| {
        format!(
            "'{k}': {} is not a value rtlab can hold ({e})",
            crate::units::printable(&crate::units::clip(raw.get(), 40))
        )
    })
}

/// A value of a key as the type rt-app reads it, or why not.
fn int(key: &str, v: &Value) -> Result<i64, String> {
    v.as_i64().ok_or_else(|| format!("{key} {v} is not a whole number"))
}

/// A time in µs within 0 ..= 1 h, in ns.
fn micros(key: &str, v: &Value) -> Result<i64, String> {
    let us = int(key, v)?;
    if !(0..=MAX_US).contains(&us) {
        return Err(format!("{key} {us} µs is out of range (0 to 1 h)"));
    }
    Ok(us * 1000)
}

/// `global.ftrace`: rt-app 1.0's boolean (every marker, or none), or upstream's list of
/// categories (`"main,task,loop,event,stats,attrs"`, `"all"`, `"none"`).
fn ftrace(v: &Value) -> Result<crate::probes::rt_app::model::Ftrace, String> {
    use crate::probes::rt_app::model::Ftrace;
    let bad = || format!("ftrace {v}: give true, false, or a list of main, task, loop, event, stats, attrs");
    if let Some(b) = v.as_bool() {
        return Ok(if b { Ftrace::ALL } else { Ftrace::NONE });
    }
    let mut set = Ftrace::NONE;
    for c in v.as_str().ok_or_else(bad)?.split(',').map(str::trim) {
        set.0 |= match c {
            "main" => Ftrace::MAIN,
            "task" => Ftrace::TASK,
            "loop" => Ftrace::LOOP,
            "event" => Ftrace::EVENT,
            "stats" => Ftrace::STATS,
            "attrs" => Ftrace::ATTRS,
            "all" => Ftrace::ALL,
            "none" => Ftrace::NONE,
            _ => return Err(bad()),
        }
        .0;
    }
    Ok(set)
}

fn parse(top: Ordered, online: &CpuSet) -> Result<UseCase, String> {
    let mut uc = UseCase {
        threads: Vec::new(),
        resources: Vec::new(),
        duration: None,
        lock_pages: false,
        pi_enabled: false,
        calibration_cpu: None,
        p_load_ns: None,
        ftrace: crate::probes::rt_app::model::Ftrace::NONE,
        cumulative_slack: false,
        io_device: PathBuf::from("/dev/null"),
        mem_buffer_size: 4 << 20,
        log: None,
        ignored: Vec::new(),
    };
    let (mut tasks, mut default_policy) = (None, Policy::Other);
    let mut log = (None::<PathBuf>, "rt-app".to_string(), true);
    for (k, raw) in top.0 {
        match k.as_str() {
            "tasks" => tasks = Some(raw),
            "global" => {
                let g = Ordered::of(&raw).map_err(|_| "global is not an object".to_string())?;
                for (gk, graw) in g.0 {
                    let v = value(&gk, &graw).map_err(|e| format!("global.{e}"))?;
                    global(&mut uc, (&mut default_policy, &mut log), &gk, &v, online)
                        .map_err(|e| format!("global.{e}"))?;
                }
            }
            "resources" => uc.ignored.push(
                "'resources': rt-app creates resources from the events that name them (the object is kept \
                 for old files only)"
                    .into(),
            ),
            _ => uc.ignored.push(format!("top-level key '{k}' is not rt-app's (tasks, global, resources)")),
        }
    }
    if let (Some(dir), true) = (log.0, log.2) {
        uc.log = Some(LogSpec { dir, basename: log.1 });
        if uc.p_load_ns.is_none() {
            uc.ignored.push(
                "the logs' perf column counts rtlab's work units (a few ns each), not rt-app's loops, whose size \
                 rt-app measures for its own loop: give global.calibration in ns per loop (rt-app prints its pLoad) \
                 to have rt-app's count"
                    .into(),
            );
        }
    }
    let Some(raw) = tasks else { return Err("no 'tasks' object".into()) };
    let tasks = Ordered::of(&raw).map_err(|e| format!("'tasks' is not an object ({e})"))?;
    let mut b = Builder { uc, online, default_policy, events: 0, barrier_refs: Vec::new() };
    for (name, body) in tasks.0 {
        b.task(&name, &body).map_err(|e| format!("task {name}: {e}"))?;
    }
    b.finish()
}

/// Applies one `global` key; the error names the key (the caller adds `global.`).
fn global(
    uc: &mut UseCase,
    (default_policy, log): (&mut Policy, &mut (Option<PathBuf>, String, bool)),
    k: &str,
    v: &Value,
    online: &CpuSet,
) -> Result<(), String> {
    let boolean = || v.as_bool().ok_or_else(|| format!("{k} {v} is not true or false (rt-app refuses it)"));
    let text = || v.as_str().ok_or_else(|| format!("{k} {v} is not a string (rt-app refuses it)"));
    match k {
        "duration" => match int(k, v)? {
            -1 => uc.duration = None,
            d if d > 0 => uc.duration = Some(std::time::Duration::from_secs(d as u64)),
            d => return Err(format!("duration {d}: give seconds, or -1 to run until the threads end")),
        },
        "default_policy" => *default_policy = policy_name(text()?)?,
        "pi_enabled" => uc.pi_enabled = boolean()?,
        "lock_pages" => uc.lock_pages = boolean()?,
        "cumulative_slack" => uc.cumulative_slack = boolean()?,
        "calibration" => match (v.as_str(), v.as_i64()) {
            (Some(s), _) => {
                let cpu = s.strip_prefix("CPU").and_then(|c| c.parse::<usize>().ok());
                let cpu = cpu.ok_or_else(|| format!("calibration '{s}': give \"CPUn\" or ns per loop"))?;
                if !online.contains(cpu) {
                    return Err(format!(
                        "calibration CPU {cpu} does not exist or is offline; online CPUs are {online}"
                    ));
                }
                uc.calibration_cpu = Some(cpu);
            }
            (None, Some(ns)) if ns > 0 => {
                // rtlab's work unit is not rt-app's loop: the work is still sized by rtlab's own
                // calibration; the logs count it in rt-app's loops of this size.
                uc.p_load_ns = Some(ns as u64);
                uc.ignored.push(format!(
                    "global.calibration {ns} ns per loop: rtlab sizes `run` by calibrating its own work on each \
                     thread's CPU; the logs' perf column counts rt-app's loops of {ns} ns, as rt-app's would"
                ));
            }
            _ => return Err(format!("calibration {v}: give \"CPUn\" or ns per loop")),
        },
        "logdir" => log.0 = Some(PathBuf::from(text()?)),
        "log_basename" => log.1 = text()?.to_string(),
        "log_size" => match (v.as_str(), v.as_i64()) {
            (Some("Disable" | "disable"), _) => log.2 = false,
            (Some(_), _) | (None, Some(_)) => {}
            _ => return Err(format!("log_size {v}: give \"file\", \"Auto\", \"Disable\" or MB")),
        },
        "io_device" => uc.io_device = PathBuf::from(text()?),
        "mem_buffer_size" => match int(k, v)? {
            n if (1..=MAX_BYTES).contains(&n) => uc.mem_buffer_size = n as usize,
            n => return Err(format!("mem_buffer_size {n}: give 1 byte to 1 GiB")),
        },
        "ftrace" => uc.ftrace = ftrace(v)?,
        "gnuplot" => {
            boolean()?;
            uc.ignored.push("global.gnuplot: rtlab draws its own pictures (rtlab plot, rtlab report)".into())
        }
        _ => uc.ignored.push(format!("global.{k}: not a key rt-app 1.0 uses (rt-app ignores it too)")),
    }
    Ok(())
}

/// Gathers threads and resources as tasks are read.
struct Builder<'a> {
    uc: UseCase,
    online: &'a CpuSet,
    default_policy: Policy,
    events: usize,
    /// Per barrier resource: how many references threads make to it.
    barrier_refs: Vec<(usize, u32)>,
}

/// The task-level keys (everything else is an event, or ignored).
const TASK_KEYS: [&str; 10] =
    ["instance", "loop", "policy", "priority", "dl-runtime", "dl-period", "dl-deadline", "cpus", "delay", "phases"];

/// A task's own settings, before its instances are made.
struct TaskHead {
    instances: u64,
    loops: Option<u64>,
    sched: SchedParams,
    cpus: Option<CpuSet>,
    delay_ns: i64,
}

impl Builder<'_> {
    /// Reads one task and makes its instances.
    fn task(&mut self, name: &str, body: &RawValue) -> Result<(), String> {
        let body = Ordered::of(body).map_err(|_| "is not an object".to_string())?;
        let mut values = Vec::new();
        for (k, raw) in body.0 {
            values.push((k.clone(), value(&k, &raw)?, raw));
        }
        let head = self.head(&values)?;
        let phases_raw = values.iter().find(|(k, _, _)| k == "phases").map(|(_, _, r)| r.clone());
        if phases_raw.is_some() {
            for (k, _, _) in values.iter().filter(|(k, _, _)| !TASK_KEYS.contains(&k.as_str())) {
                self.uc.ignored.push(format!("task {name}: '{k}' beside 'phases' (rt-app reads only the phases)"));
            }
        }
        let room = MAX_THREADS - self.uc.threads.len();
        if head.instances as usize > room {
            return Err(format!("instance {}: a use case holds at most {MAX_THREADS} threads in all", head.instances));
        }
        for i in 0..head.instances {
            let index = self.uc.threads.len();
            // What the first instance said of its keys is said once, not once per instance.
            let said = self.uc.ignored.len();
            let mut phases = Vec::new();
            match &phases_raw {
                Some(raw) => {
                    let p = Ordered::of(raw).map_err(|_| "phases is not an object".to_string())?;
                    if p.0.is_empty() {
                        return Err("phases is empty".into());
                    }
                    for (pname, praw) in p.0 {
                        let pv = Ordered::of(&praw).map_err(|_| format!("phase {pname} is not an object"))?;
                        let mut pvalues = Vec::new();
                        for (k, raw) in pv.0 {
                            pvalues.push((k.clone(), value(&k, &raw)?));
                        }
                        phases.push(
                            self.phase(name, index, &pname, &pvalues, true)
                                .map_err(|e| format!("phase {pname}: {e}"))?,
                        );
                    }
                }
                None => {
                    let own: Vec<(String, Value)> = values
                        .iter()
                        .filter(|(k, _, _)| !TASK_KEYS.contains(&k.as_str()))
                        .map(|(k, v, _)| (k.clone(), v.clone()))
                        .collect();
                    phases.push(self.phase(name, index, "phase0", &own, false)?);
                }
            }
            if i > 0 {
                self.uc.ignored.truncate(said);
            }
            check_deadline(&head.sched, &phases)?;
            self.uc.threads.push(ThreadSpec {
                name: if head.instances == 1 { name.to_string() } else { format!("{name}-{i}") },
                task: name.to_string(),
                sched: head.sched,
                cpus: head.cpus.clone(),
                delay_ns: head.delay_ns,
                // Events in the task object itself are one phase, and rt-app then takes `loop`
                // for that phase and repeats the thread until the run ends (checked on rt-app 1.0).
                loops: if phases_raw.is_some() { head.loops } else { None },
                phases,
            });
        }
        Ok(())
    }

    /// The task's own keys: instances, loop, scheduling, CPUs and delay.
    fn head(&self, values: &[(String, Value, Box<RawValue>)]) -> Result<TaskHead, String> {
        let mut h = TaskHead {
            instances: 1,
            loops: None,
            sched: SchedParams::simple(self.default_policy, 0),
            cpus: None,
            delay_ns: 0,
        };
        let (mut priority, mut dl) = (None, (None, None, None));
        for (k, v, _) in values {
            match k.as_str() {
                "instance" => match int(k, v)? {
                    n if (0..=MAX_THREADS as i64).contains(&n) => h.instances = n as u64,
                    n => return Err(format!("instance {n}: give 0 to {MAX_THREADS}")),
                },
                "loop" => h.loops = loops(k, v, true)?,
                "policy" => h.sched.policy = policy_name(v.as_str().unwrap_or(""))?,
                "priority" => priority = Some(int(k, v)?),
                "dl-runtime" => dl.0 = Some(micros(k, v)?),
                "dl-period" => dl.1 = Some(micros(k, v)?),
                "dl-deadline" => dl.2 = Some(micros(k, v)?),
                "cpus" => h.cpus = cpus(v, self.online)?,
                "delay" => h.delay_ns = micros(k, v)?,
                _ => {}
            }
        }
        h.sched = sched(h.sched.policy, priority, dl)?;
        Ok(h)
    }
}

/// A `loop` value: -1 forever (`None`), else a positive count.
fn loops(k: &str, v: &Value, thread: bool) -> Result<Option<u64>, String> {
    match int(k, v)? {
        -1 if thread => Ok(None),
        n if n > 0 => Ok(Some(n as u64)),
        n => Err(format!("loop {n}: give a positive count{}", if thread { " or -1 (forever)" } else { "" })),
    }
}

/// A policy with rt-app's priority and deadline parameters, checked.
fn sched(
    policy: Policy,
    priority: Option<i64>,
    (runtime, period, deadline): (Option<i64>, Option<i64>, Option<i64>),
) -> Result<SchedParams, String> {
    let mut s = SchedParams::simple(policy, 0);
    if policy.is_realtime_priority() {
        let p = priority.unwrap_or(10);
        if !(1..=99).contains(&p) {
            return Err(format!("priority {p} is not 1 to 99 for {policy}"));
        }
        s.priority = p as u32;
    } else if policy == Policy::Deadline {
        let runtime = runtime.ok_or("SCHED_DEADLINE needs dl-runtime")?;
        let p = period.unwrap_or(runtime);
        let d = deadline.unwrap_or(p);
        if !(1024 <= runtime && runtime <= d && d <= p) {
            return Err(format!(
                "SCHED_DEADLINE needs runtime <= deadline <= period, got {runtime} ns, {d} ns, {p} ns"
            ));
        }
        (s.runtime_ns, s.deadline_ns, s.period_ns) = (runtime as u64, d as u64, p as u64);
    } else if let Some(n) = priority {
        // rt-app sets a SCHED_OTHER/BATCH/IDLE thread's priority as its nice value.
        if !(-20..=19).contains(&n) {
            return Err(format!("priority {n}: for {policy} rt-app's priority is the nice value, -20 to 19"));
        }
        s.nice = n as i32;
    }
    Ok(s)
}

/// `SCHED_FIFO` (rt-app's spelling) or `fifo`.
fn policy_name(s: &str) -> Result<Policy, String> {
    let short = s.strip_prefix("SCHED_").unwrap_or(s);
    short.parse().map_err(|_| {
        format!("policy '{s}': use SCHED_OTHER, SCHED_BATCH, SCHED_IDLE, SCHED_FIFO, SCHED_RR or SCHED_DEADLINE")
    })
}

/// A `cpus` array (`None` when it names every online CPU).
fn cpus(v: &Value, online: &CpuSet) -> Result<Option<CpuSet>, String> {
    let list: Vec<usize> = v
        .as_array()
        .and_then(|a| a.iter().map(|c| c.as_u64().filter(|c| *c < 1 << 16).map(|c| c as usize)).collect())
        .ok_or("cpus is not an array of CPU numbers")?;
    let set = CpuSet::from_cpus(list.iter().copied());
    if set.is_empty() {
        return Err("cpus is empty".into());
    }
    let missing = set.difference(online);
    if !missing.is_empty() {
        return Err(format!("cpus names CPU {missing}, which does not exist or is offline; online CPUs are {online}"));
    }
    Ok((set.len() != online.len()).then_some(set))
}

/// The events rt-app knows, longest first where one name begins another (`runtime`, `run`).
const EVENTS: [&str; 16] = [
    "runtime", "run", "sleep", "timer", "suspend", "resume", "unlock", "lock", "wait", "signal", "broad", "sync",
    "barrier", "mem", "iorun", "yield",
];

impl Builder<'_> {
    /// Reads one phase's keys (a phase object, or the task itself when it has no `phases`).
    fn phase(
        &mut self,
        task: &str,
        thread: usize,
        name: &str,
        keys: &[(String, Value)],
        own: bool,
    ) -> Result<Phase, String> {
        let mut p = Phase {
            name: name.to_string(),
            loops: 1,
            cpus: None,
            sched: None,
            events: Vec::new(),
            event_names: Vec::new(),
        };
        let (mut policy, mut priority) = (None, None);
        for (k, v) in keys {
            match k.as_str() {
                "loop" if own => p.loops = loops(k, v, false)?.unwrap_or(1),
                "cpus" if own => p.cpus = cpus(v, self.online)?,
                "policy" if own => policy = Some(policy_name(v.as_str().unwrap_or(""))?),
                "priority" if own => priority = Some(int(k, v)?),
                "loop" | "cpus" | "policy" | "priority" => {}
                "fork" => return Err("fork: upstream rt-app's event, not rt-app 1.0's; rtlab does not run it".into()),
                _ => match EVENTS.iter().find(|e| k.starts_with(**e)) {
                    Some(kind) => match self.event(task, thread, kind, v) {
                        Ok(Some(e)) => {
                            p.events.push(e);
                            p.event_names.push(k.clone());
                        }
                        Ok(None) => self.uc.ignored.push(format!(
                            "task {task}: '{k}': {v} is not the type a {kind} event takes (rt-app skips it too)"
                        )),
                        Err(e) => return Err(format!("event '{k}': {e}")),
                    },
                    None => {
                        self.uc.ignored.push(format!("task {task}: '{k}' is not an rt-app event (rt-app ignores it)"))
                    }
                },
            }
        }
        if policy.is_some() || priority.is_some() {
            p.sched = Some(sched(policy.unwrap_or(self.default_policy), priority, (None, None, None))?);
        }
        self.events += p.events.len();
        if self.events > MAX_EVENTS {
            return Err(format!("more than {MAX_EVENTS} events in all (instances counted)"));
        }
        check_locks(&p.events, &self.uc.resources)?;
        Ok(p)
    }

    /// One event, its resources found or made; `Ok(None)` when the value is not the type the
    /// event takes (rt-app skips such keys).
    fn event(&mut self, task: &str, thread: usize, kind: &str, v: &Value) -> Result<Option<Event>, String> {
        let name = |v: &Value| v.as_str().map(str::to_string);
        let bytes = |v: &Value| -> Result<Option<u64>, String> {
            match v.as_i64() {
                Some(n) if (0..=MAX_BYTES).contains(&n) => Ok(Some(n as u64)),
                Some(n) => Err(format!("{n} bytes: give 0 to 1 GiB")),
                None => Ok(None),
            }
        };
        Ok(Some(match kind {
            "run" | "runtime" | "sleep" => {
                let Some(_) = v.as_i64() else { return Ok(None) };
                let ns = micros(kind, v)?;
                match kind {
                    "run" => Event::Run(ns),
                    "runtime" => Event::Runtime(ns),
                    _ => Event::Sleep(ns),
                }
            }
            "timer" => return self.timer(thread, v),
            "wait" | "sync" => {
                let Some(o) = v.as_object() else { return Ok(None) };
                let (Some(r), Some(m)) = (o.get("ref").and_then(name), o.get("mutex").and_then(name)) else {
                    return Err(format!("{kind} needs {{ \"ref\": condition, \"mutex\": mutex }}"));
                };
                let (cond, mutex) =
                    (self.resource(&r, ResourceKind::Condition), self.resource(&m, ResourceKind::Mutex));
                if kind == "wait" {
                    Event::Wait { cond, mutex }
                } else {
                    Event::Sync { cond, mutex }
                }
            }
            "mem" | "iorun" => match bytes(v)? {
                Some(n) if kind == "mem" => Event::Mem(n),
                Some(n) => Event::IoRun(n),
                None => return Ok(None),
            },
            "yield" => Event::Yield,
            _ => {
                let Some(mut r) = name(v) else { return Ok(None) };
                if r.is_empty() && kind == "suspend" {
                    r = task.to_string();
                }
                let of = match kind {
                    "lock" | "unlock" => ResourceKind::Mutex,
                    "signal" | "broad" => ResourceKind::Condition,
                    "barrier" => ResourceKind::Barrier { users: 0 },
                    _ => ResourceKind::Suspension,
                };
                let res = self.resource(&r, of);
                match kind {
                    "lock" => Event::Lock(res),
                    "unlock" => Event::Unlock(res),
                    "signal" => Event::Signal(res),
                    "broad" => Event::Broad(res),
                    "suspend" => Event::Suspend(res),
                    "resume" => Event::Resume(res),
                    _ => {
                        match self.barrier_refs.iter_mut().find(|(b, _)| *b == res) {
                            Some((_, n)) => *n += 1,
                            None => self.barrier_refs.push((res, 1)),
                        }
                        Event::Barrier(res)
                    }
                }
            }
        }))
    }

    /// A `timer` event: `{ "ref", "period", "mode" }`; a `unique…` ref is the thread's own.
    fn timer(&mut self, thread: usize, v: &Value) -> Result<Option<Event>, String> {
        let Some(t) = v.as_object() else { return Ok(None) };
        let r = t.get("ref").and_then(Value::as_str).ok_or("timer needs a \"ref\" string")?;
        let period = t.get("period").ok_or("timer needs a \"period\" in µs")?;
        let period_ns = micros("timer.period", period)?;
        if period_ns == 0 {
            return Err("timer.period 0: give a positive period in µs".into());
        }
        let relative = match t.get("mode").map(|m| m.as_str()) {
            None | Some(Some("relative")) => true,
            Some(Some("absolute")) => false,
            Some(_) => return Err(format!("timer.mode {}: use relative or absolute", t["mode"])),
        };
        let name = if r.starts_with("unique") { format!("{r}#{thread}") } else { r.to_string() };
        let res = self.resource(&name, ResourceKind::Timer { relative });
        Ok(Some(Event::Timer { res, period_ns }))
    }

    /// The resource of this name and kind (rt-app keeps one per name and kind), made on first use.
    fn resource(&mut self, name: &str, kind: ResourceKind) -> usize {
        let same = |k: &ResourceKind| std::mem::discriminant(k) == std::mem::discriminant(&kind);
        if let Some(i) = self.uc.resources.iter().position(|r| r.name == name && same(&r.kind)) {
            return i;
        }
        self.uc.resources.push(Resource { name: name.to_string(), kind });
        self.uc.resources.len() - 1
    }

    /// The use case, with each barrier's users counted and its limits checked.
    fn finish(mut self) -> Result<UseCase, String> {
        for (res, users) in self.barrier_refs {
            self.uc.resources[res].kind = ResourceKind::Barrier { users };
        }
        if self.uc.threads.is_empty() {
            return Err("no thread to run ('tasks' is empty, or every instance is 0)".into());
        }
        let buffers = self
            .uc
            .threads
            .iter()
            .filter(|t| t.phases.iter().flat_map(|p| &p.events).any(|e| matches!(e, Event::Mem(_) | Event::IoRun(_))))
            .count();
        if buffers.saturating_mul(self.uc.mem_buffer_size) > MAX_BUFFERS {
            return Err(format!(
                "{buffers} threads with a buffer of mem_buffer_size {} bytes each: more than {} MiB in all; lower \
                 mem_buffer_size",
                self.uc.mem_buffer_size,
                MAX_BUFFERS >> 20
            ));
        }
        Ok(self.uc)
    }
}

/// A SCHED_DEADLINE thread's runtime holds the work of each of its phases: less would throttle
/// every job.
fn check_deadline(s: &SchedParams, phases: &[Phase]) -> Result<(), String> {
    if s.policy != Policy::Deadline {
        return Ok(());
    }
    let work = |p: &Phase| -> i64 {
        p.events
            .iter()
            .map(|e| match e {
                Event::Run(ns) | Event::Runtime(ns) => *ns,
                _ => 0,
            })
            .sum()
    };
    match phases.iter().map(work).max().filter(|w| *w > s.runtime_ns as i64) {
        Some(w) => Err(format!(
            "dl-runtime {} µs is shorter than the work of {} µs: SCHED_DEADLINE would throttle every job; give \
             dl-runtime at least the work",
            s.runtime_ns / 1000,
            w / 1000
        )),
        None => Ok(()),
    }
}

/// A phase's locks: each `unlock` and each `wait`/`sync` with the mutex held, no mutex locked
/// twice, none held at the phase's end (a phase loop starts and ends holding nothing).
fn check_locks(events: &[Event], resources: &[Resource]) -> Result<(), String> {
    let mut held: Vec<usize> = Vec::new();
    let name = |r: usize| resources[r].name.clone();
    for e in events {
        match *e {
            Event::Lock(m) if held.contains(&m) => {
                return Err(format!("event 'lock': '{}' is locked twice (a deadlock)", name(m)))
            }
            Event::Lock(m) => held.push(m),
            Event::Unlock(m) => match held.iter().position(|h| *h == m) {
                Some(i) => {
                    held.remove(i);
                }
                None => return Err(format!("event 'unlock': '{}' is not locked before it in the phase", name(m))),
            },
            Event::Wait { mutex, .. } | Event::Sync { mutex, .. } if !held.contains(&mutex) => {
                return Err(format!(
                    "event '{}': mutex '{}' is not locked before it in the phase",
                    e.name(),
                    name(mutex)
                ))
            }
            _ => {}
        }
    }
    match held.first() {
        Some(m) => Err(format!("mutex '{}' is still locked at the phase's end; unlock it in the phase", name(*m))),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(json: &str) -> Result<UseCase, String> {
        let mut text = json.to_string();
        json_strip_comments::strip(&mut text).unwrap();
        parse(serde_json::from_str(&text).map_err(|e| e.to_string())?, &CpuSet::from_cpus([0, 1]))
    }

    #[test]
    fn fifo_tasks_that_never_wait_are_the_busy_ones_the_starvation_rule_counts() {
        let uc = case(
            r#"{ "tasks": {
                "spin": { "policy": "SCHED_FIFO", "cpus": [0], "run": 1000 },
                "free": { "policy": "SCHED_RR", "instance": 2, "runtime": 1000 },
                "periodic": { "policy": "SCHED_FIFO", "run": 1000, "timer": { "ref": "t", "period": 2000 } },
                "fair": { "run": 1000 } } }"#,
        )
        .unwrap();
        let plan = crate::probes::rt_app::Plan::new("f".into(), uc);
        assert_eq!(plan.busy_rt_threads(), (CpuSet::from_cpus([0]), 2));
    }

    #[test]
    fn events_keep_their_file_order_and_repeated_keys_all_run() {
        let uc = case(
            r#"{ "tasks": { "t": { "run": 10, "lock": "m", "run": 20, "unlock": "m", "sleep": 0,
                 "timer": { "ref": "x", "period": 100 }, } } }"#,
        )
        .unwrap();
        let e = &uc.threads[0].phases[0].events;
        assert_eq!(e.iter().map(Event::name).collect::<Vec<_>>(), ["run", "lock", "run", "unlock", "sleep", "timer"]);
        assert_eq!((e[0], e[2], e[4]), (Event::Run(10_000), Event::Run(20_000), Event::Sleep(0)));
        assert_eq!(uc.threads[0].loops, None, "events in the task: the thread repeats until the run ends");
    }

    #[test]
    fn phases_loop_per_thread_loop_and_a_task_s_instances_are_numbered_with_their_own_unique_timers() {
        let uc = case(
            r#"{ "tasks": { "t": { "instance": 2, "loop": 4, "priority": -5, "phases": {
                "a": { "run": 1, "timer": { "ref": "unique", "period": 10 } },
                "b": { "loop": 3, "cpus": [1], "timer": { "ref": "unique", "period": 10, "mode": "absolute" } } } } } }"#,
        )
        .unwrap();
        let t = &uc.threads;
        assert_eq!((t[0].name.as_str(), t[1].name.as_str(), t[1].task.as_str()), ("t-0", "t-1", "t"));
        assert_eq!((t[0].loops, t[0].phases[0].loops, t[0].phases[1].loops), (Some(4), 1, 3));
        assert_eq!(t[0].sched.nice, -5, "SCHED_OTHER's priority is its nice value");
        assert_eq!(t[0].phases[1].cpus, Some(CpuSet::from_cpus([1])));
        let timer = |i: usize| match t[i].phases[0].events[1] {
            Event::Timer { res, .. } => res,
            _ => panic!(),
        };
        assert_ne!(timer(0), timer(1), "a unique timer is each instance's own");
        assert!(matches!(uc.resources[timer(0)].kind, ResourceKind::Timer { relative: true }), "relative by default");
    }

    #[test]
    fn one_name_is_one_resource_per_kind_and_a_barrier_counts_its_users() {
        let uc = case(
            r#"{ "tasks": {
                "a": { "lock": "q", "wait": { "ref": "q", "mutex": "q" }, "unlock": "q", "barrier": "B" },
                "b": { "instance": 2, "lock": "q", "signal": "q", "unlock": "q", "barrier": "B", "resume": "a", "suspend": "" } } }"#,
        )
        .unwrap();
        let kinds: Vec<(&str, ResourceKind)> = uc.resources.iter().map(|r| (r.name.as_str(), r.kind)).collect();
        assert!(kinds.contains(&("q", ResourceKind::Mutex)) && kinds.contains(&("q", ResourceKind::Condition)));
        assert!(kinds.contains(&("B", ResourceKind::Barrier { users: 3 })), "{kinds:?}");
        // An empty suspend is the task's own name, as rt-app's workgen fills it in.
        assert!(kinds.contains(&("b", ResourceKind::Suspension)), "{kinds:?}");
    }

    #[test]
    fn keys_rt_app_ignores_are_ignored_with_a_warning_and_bad_values_are_refused() {
        let uc = case(
            r#"{ "global": { "frag": 1, "calibration": 128 }, "resources": {},
                 "tasks": { "t": { "exec": 5000, "lock_order": ["a"], "sleep": false, "run": 5 } } }"#,
        )
        .unwrap();
        let said = uc.ignored.join("\n");
        for k in ["global.frag", "global.calibration 128", "'exec'", "'lock_order'", "'sleep'", "'resources'"] {
            assert!(said.contains(k), "{k} in {said}");
        }
        assert_eq!(uc.threads[0].phases[0].events, vec![Event::Run(5000)]);
        for (json, says) in [
            (r#"{ "tasks": { "t": { "policy": "SCHED_DEADLINE", "run": 1 } } }"#, "needs dl-runtime"),
            (r#"{ "tasks": { "t": { "priority": 30, "run": 1 } } }"#, "nice value"),
            (r#"{ "tasks": { "t": { "lock": "m", "lock": "m", "unlock": "m" } } }"#, "a deadlock"),
            (r#"{ "global": { "duration": 0 }, "tasks": { "t": { "run": 1 } } }"#, "global.duration 0"),
            (r#"{ "global": { "calibration": "CPU7" }, "tasks": { "t": { "run": 1 } } }"#, "CPU 7"),
            (r#"{ "tasks": { "t": { "timer": { "ref": "x", "period": 0 } } } }"#, "period 0"),
            (r#"{ "tasks": { "t": { "mem": 2147483648 } } }"#, "1 GiB"),
            (r#"{ "tasks": {} }"#, "no thread"),
        ] {
            let e = case(json).unwrap_err();
            assert!(e.contains(says), "{json}: {e}");
        }
    }
}
