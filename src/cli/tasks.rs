//! Task sets: several periodic tasks in one run, each with its own name, period, work,
//! deadline, scheduling, CPU and start offset. Three ways in, one result: `--task
//! 'name=ctl,period=1ms,work=200us,policy=fifo:80,cpu=1'` (repeatable), `--tasks FILE` (TOML,
//! `[[task]]` tables with the same keys) and `--rt-app FILE.json` ([`super::rt_app`]).

use crate::measure::work::{WorkKind, WorkSpec};
use crate::probes::ThreadPlan;
use crate::rt::affinity::CpuSet;
use crate::rt::sched::{Policy, SchedParams};
use crate::units::{time_ns, DefaultUnit};
use std::path::Path;

/// One periodic task as described, before it becomes a measuring thread.
#[derive(Clone, Debug, PartialEq)]
pub struct TaskSpec {
    /// Its name (unique in the set).
    pub name: String,
    /// Period (ns).
    pub period_ns: i64,
    /// Work per period and what it is fixed in (`None`: the empty loop).
    pub work: Option<(WorkKind, i64)>,
    /// Deadline relative to the release (ns); `None`: the period.
    pub deadline_ns: Option<i64>,
    /// Scheduling (SCHED_DEADLINE's runtime, deadline and period included).
    pub sched: SchedParams,
    /// The CPU it is pinned to (`None`: free to move).
    pub cpu: Option<usize>,
    /// Its first release's offset from the set's common start (ns).
    pub offset_ns: i64,
}

/// The keys a task takes, for error messages.
pub const KEYS: &str =
    "name, period, work, kind, deadline, policy, nice, cpu, offset, dl-runtime, dl-deadline, dl-period";

/// A task's name, checked.
fn task_name(v: &str) -> Result<String, String> {
    if v.is_empty() || v.len() > 64 || !v.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)) {
        return Err(format!("name={v}: use 1 to 64 letters, digits, '-', '_' or '.'"));
    }
    Ok(v.to_string())
}

/// What a task's work is fixed in.
fn work_kind(v: &str) -> Result<WorkKind, String> {
    match v {
        "fixed" => Ok(WorkKind::Fixed),
        "time" => Ok(WorkKind::Time),
        _ => Err(format!("kind={v}: use fixed (calibrated work) or time (busy wall-clock time)")),
    }
}

/// SCHED_DEADLINE's runtime, deadline and period (`dl` as given; the deadline defaults to
/// the period, the period to the task's) set in `sched`, or refused; given to another policy,
/// refused.
fn deadline_params(
    name: &str,
    sched: &mut SchedParams,
    dl: [Option<i64>; 3],
    period_ns: i64,
    work: Option<i64>,
) -> Result<(), String> {
    let [dl_runtime, dl_deadline, dl_period] = dl;
    if sched.policy != Policy::Deadline {
        if dl.iter().any(Option::is_some) {
            return Err(format!("task {name}: dl-runtime/dl-deadline/dl-period need policy=deadline"));
        }
        return Ok(());
    }
    let runtime = dl_runtime.ok_or_else(|| {
        format!("task {name}: policy=deadline needs dl-runtime=TIME, the CPU time reserved each period (e.g. the work plus a margin)")
    })?;
    let dl_period = dl_period.unwrap_or(period_ns);
    let dl_deadline = dl_deadline.unwrap_or(dl_period);
    if !(runtime <= dl_deadline && dl_deadline <= dl_period) || runtime < 1024 {
        return Err(format!(
            "task {name}: SCHED_DEADLINE needs 1024 ns <= runtime <= deadline <= period, got {runtime} ns, {dl_deadline} ns, {dl_period} ns"
        ));
    }
    if let Some(w) = work.filter(|w| *w > runtime) {
        return Err(format!(
            "task {name}: dl-runtime {} is shorter than work {}: SCHED_DEADLINE would throttle every job; give \
             dl-runtime at least the work",
            crate::units::duration(runtime),
            crate::units::duration(w)
        ));
    }
    sched.runtime_ns = runtime as u64;
    sched.deadline_ns = dl_deadline as u64;
    sched.period_ns = dl_period as u64;
    Ok(())
}

impl TaskSpec {
    /// Parses one `--task` value: comma-separated `key=value` pairs.
    pub fn parse(text: &str, default_sched: SchedParams) -> Result<TaskSpec, String> {
        let mut pairs = Vec::new();
        for item in text.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            let (k, v) = item.split_once('=').ok_or_else(|| {
                format!("--task '{text}': '{item}' is not key=value; e.g. --task 'name=ctl,period=1ms,work=200us'")
            })?;
            pairs.push((k.trim().to_string(), v.trim().to_string()));
        }
        TaskSpec::from_pairs(&pairs, default_sched).map_err(|e| format!("--task '{text}': {e}"))
    }

    /// A task from its keys and values (a `--task` value or one `[[task]]` table).
    pub fn from_pairs(pairs: &[(String, String)], default_sched: SchedParams) -> Result<TaskSpec, String> {
        let mut seen: Vec<&str> = Vec::new();
        let (mut name, mut period, mut work, mut kind, mut deadline) = (None, None, None, WorkKind::Fixed, None);
        let (mut sched, mut cpu, mut offset, mut nice) = (default_sched, None, 0, None);
        let (mut dl_runtime, mut dl_deadline, mut dl_period) = (None, None, None);
        let time = |k: &str, v: &str| -> Result<i64, String> {
            let ns = time_ns(v, DefaultUnit::Micros).map_err(|e| format!("{k}={v}: {e}"))?;
            if ns <= 0 {
                return Err(format!("{k}={v} must be greater than zero"));
            }
            Ok(ns)
        };
        for (k, v) in pairs {
            if seen.contains(&k.as_str()) {
                return Err(format!("'{k}' is given twice; give each key once"));
            }
            seen.push(k);
            match k.as_str() {
                "name" => name = Some(task_name(v)?),
                "period" => period = Some(super::parse::interval(v).map_err(|e| format!("period: {e}"))?),
                "work" => work = Some(crate::measure::work::check_amount(&format!("work={v}"), time(k, v)?)?),
                "kind" => kind = work_kind(v)?,
                "deadline" => deadline = Some(time(k, v)?),
                "policy" => sched = policy(v)?,
                "nice" => {
                    nice = Some(
                        v.parse()
                            .ok()
                            .filter(|n| (-20..=19).contains(n))
                            .ok_or(format!("nice={v} is not -20 to 19"))?,
                    )
                }
                "cpu" => {
                    cpu = Some(v.parse::<usize>().map_err(|_| format!("cpu={v} is not a CPU number; e.g. cpu=1"))?)
                }
                "offset" => {
                    offset = time_ns(v, DefaultUnit::Micros).map_err(|e| format!("offset={v}: {e}"))?;
                }
                "dl-runtime" => dl_runtime = Some(time(k, v)?),
                "dl-deadline" => dl_deadline = Some(time(k, v)?),
                "dl-period" => dl_period = Some(time(k, v)?),
                _ => return Err(format!("unknown key '{k}'; a task takes {KEYS}")),
            }
        }
        let name = name.ok_or("every task needs a name (name=ctl)")?;
        let period_ns = period.ok_or_else(|| format!("task {name} needs a period (period=1ms)"))?;
        if work.is_none() && seen.contains(&"kind") {
            return Err(format!("task {name}: kind= needs work=TIME"));
        }
        if work.is_none() && deadline.is_some() {
            return Err(format!(
                "task {name}: deadline= needs work=TIME (a deadline bounds each job's response); to bound the \
                 wakeup latency itself use --max-latency"
            ));
        }
        if let Some(n) = nice {
            if sched.policy.is_realtime_priority() || sched.policy == Policy::Deadline {
                return Err(format!("task {name}: nice= applies to policy other or batch, not {}", sched.policy));
            }
            sched.nice = n;
        }
        deadline_params(&name, &mut sched, [dl_runtime, dl_deadline, dl_period], period_ns, work)?;
        if !(0..=3_600_000_000_000).contains(&offset) {
            return Err(format!("task {name}: offset must be from 0 to 1h"));
        }
        Ok(TaskSpec {
            name,
            period_ns,
            work: work.map(|w| (kind, w)),
            deadline_ns: deadline,
            sched,
            cpu,
            offset_ns: offset,
        })
    }

    /// The task's measuring thread: index `index`, `warmup_cycles` discarded, misses counted
    /// in windows of `window` releases.
    pub fn thread(&self, index: usize, warmup_cycles: u64, window: u32) -> ThreadPlan {
        ThreadPlan {
            index,
            cpu: self.cpu,
            sched: self.sched,
            interval_ns: self.period_ns,
            warmup_cycles,
            name: Some(self.name.clone()),
            work: self.work.map(|(kind, amount_ns)| WorkSpec {
                kind,
                amount_ns,
                deadline_ns: self.deadline_ns.unwrap_or(self.period_ns),
                miss_window: window,
            }),
            offset_ns: self.offset_ns,
        }
    }
}

/// `fifo:80`, `rr:10`, `other`, `batch`, `idle` or `deadline`.
pub fn policy(v: &str) -> Result<SchedParams, String> {
    let (policy, priority) = crate::rt::sched::parse_policy(v).map_err(|e| format!("policy={v}: {e}"))?;
    Ok(SchedParams::simple(policy, priority))
}

/// Reads a TOML task set: `[[task]]` tables with the keys of `--task` (times as strings,
/// `"1ms"`, or numbers of µs).
pub fn read_toml(path: &Path, default_sched: SchedParams) -> Result<Vec<TaskSpec>, String> {
    let text = crate::import::read_text_input(path).map_err(|(_, e)| format!("--tasks {}: {e}", path.display()))?;
    let doc: toml::Table =
        text.parse().map_err(|e: toml::de::Error| format!("--tasks {}: not TOML: {}", path.display(), e.message()))?;
    let shown = path.display();
    for key in doc.keys() {
        if key != "task" {
            return Err(format!("--tasks {shown}: unknown table '{key}'; a task set is a list of [[task]] tables"));
        }
    }
    let tasks = doc.get("task").and_then(|t| t.as_array()).ok_or_else(|| {
        format!("--tasks {shown}: no [[task]] table; write e.g. [[task]] name = \"ctl\" period = \"1ms\"")
    })?;
    tasks
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let table = t.as_table().ok_or_else(|| format!("--tasks {shown}: task {} is not a table", i + 1))?;
            let pairs = table
                .iter()
                .map(|(k, v)| {
                    let value = match v {
                        toml::Value::String(s) => s.clone(),
                        toml::Value::Integer(n) => n.to_string(),
                        toml::Value::Float(f) => f.to_string(),
                        _ => return Err(format!("--tasks {shown}: task {}: {k} must be a string or a number", i + 1)),
                    };
                    Ok((k.clone(), value))
                })
                .collect::<Result<Vec<_>, String>>()?;
            TaskSpec::from_pairs(&pairs, default_sched).map_err(|e| format!("--tasks {shown}: task {}: {e}", i + 1))
        })
        .collect()
}

/// Checks a task set before it runs: names unique, CPUs online, and the RT CPU time it asks
/// within what RT throttling allows (`rt_share`: sched_rt_runtime_us / sched_rt_period_us;
/// `None` when throttling is off) on each CPU — unless `force`.
pub fn check(tasks: &[TaskSpec], online: &CpuSet, rt_share: Option<f64>, force: bool) -> Result<(), String> {
    if tasks.is_empty() {
        return Err("the task set is empty; give at least one task".into());
    }
    if tasks.len() > 4096 {
        return Err(format!("{} tasks are too many; use at most 4096", tasks.len()));
    }
    for (i, t) in tasks.iter().enumerate() {
        if tasks[..i].iter().any(|o| o.name == t.name) {
            return Err(format!("task name '{}' is used twice; give every task its own name", t.name));
        }
        if let Some(c) = t.cpu.filter(|c| !online.contains(*c)) {
            return Err(format!("task {}: cpu={c} does not exist or is offline; online CPUs are {online}", t.name));
        }
        if t.sched.policy == Policy::Deadline && t.cpu.is_some() {
            return Err(format!(
                "task {}: SCHED_DEADLINE tasks cannot be pinned (the kernel admits them only with their root domain's affinity); drop cpu=",
                t.name
            ));
        }
    }
    if rt_share.is_none() {
        return refuse_busy(tasks, online, force);
    }
    let (Some(share), false) = (rt_share, force) else { return Ok(()) };
    // Busy RT time per CPU: pinned tasks on their CPU; free ones spread over all of them.
    let (pinned, free) = rt_demand(tasks, online);
    for (cpu, u) in pinned.iter().enumerate().filter(|(c, _)| online.contains(*c)) {
        if *u > share {
            return Err(format!(
                "the FIFO/RR tasks pinned to CPU {cpu} ask for {:.0} % of it, more than the {:.0} % RT throttling allows \
                 (sched_rt_runtime_us): the kernel would stall them every second; lighten the tasks, or pass --force",
                u * 100.0,
                share * 100.0
            ));
        }
    }
    let total: f64 = pinned.iter().sum::<f64>() + free;
    if total > share * online.len() as f64 {
        return Err(format!(
            "the FIFO/RR tasks ask for {:.0} % of a CPU in all, more than the {:.0} % RT throttling allows on {} CPUs; \
             lighten the tasks, or pass --force",
            total * 100.0,
            share * online.len() as f64 * 100.0,
            online.len()
        ));
    }
    let dl: f64 = tasks
        .iter()
        .filter(|t| t.sched.policy == Policy::Deadline)
        .map(|t| t.sched.runtime_ns as f64 / t.sched.period_ns as f64)
        .sum();
    if dl > share * online.len() as f64 {
        return Err(format!(
            "the SCHED_DEADLINE tasks reserve {:.0} % of a CPU, more than the kernel admits ({:.0} % on {} CPUs); \
             lower their dl-runtime",
            dl * 100.0,
            share * online.len() as f64 * 100.0,
            online.len()
        ));
    }
    Ok(())
}

/// The FIFO/RR tasks' busy share of a CPU: per CPU for those pinned, and in all for the others.
fn rt_demand(tasks: &[TaskSpec], online: &CpuSet) -> (Vec<f64>, f64) {
    let mut pinned = vec![0f64; online.cpus().iter().max().map_or(1, |m| m + 1)];
    let mut free = 0f64;
    for t in tasks.iter().filter(|t| t.sched.policy.is_realtime_priority()) {
        let u = t.work.map_or(0.0, |(_, w)| w as f64 / t.period_ns as f64);
        match t.cpu {
            Some(c) => pinned[c] += u,
            None => free += u,
        }
    }
    (pinned, free)
}

/// With RT throttling off, the FIFO/RR tasks that would keep every CPU busy (pinned ones whose
/// work fills their CPU, and as many CPUs' worth of unpinned work as the rest) are refused by
/// the rule `noise` and `load` keep too.
fn refuse_busy(tasks: &[TaskSpec], online: &CpuSet, force: bool) -> Result<(), String> {
    let (pinned, free) = rt_demand(tasks, online);
    let full = CpuSet::from_cpus(pinned.iter().enumerate().filter(|(_, u)| **u >= 1.0).map(|(c, _)| c));
    let unpinned = free.floor() as usize;
    let fix = "lighten the tasks or leave a CPU free";
    match crate::rt::privileges::refuse_rt_starvation(
        "FIFO/RR tasks busy",
        (&full, unpinned),
        online,
        Some(-1),
        (force, fix),
    ) {
        Some(why) => Err(why),
        None => Ok(()),
    }
}

/// The share of each CPU RT tasks may use, from sched_rt_runtime_us and sched_rt_period_us
/// (`None`: throttling is off).
pub fn rt_share(privileges: &crate::rt::privileges::Privileges) -> Option<f64> {
    let runtime = privileges.sched_rt_runtime_us?;
    if runtime < 0 {
        return None;
    }
    let period = std::fs::read_to_string("/proc/sys/kernel/sched_rt_period_us")
        .ok()
        .and_then(|s| s.trim().parse::<f64>().ok())
        .filter(|p| *p > 0.0)
        .unwrap_or(1_000_000.0);
    Some(runtime as f64 / period)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fifo() -> SchedParams {
        SchedParams::simple(Policy::Fifo, 95)
    }

    #[test]
    fn a_task_takes_every_documented_key() {
        let t = TaskSpec::parse(
            "name=ctl,period=1ms,work=200us,kind=time,deadline=800us,policy=rr:80,cpu=1,offset=250us",
            fifo(),
        )
        .unwrap();
        assert_eq!(
            (t.name.as_str(), t.period_ns, t.work, t.deadline_ns),
            ("ctl", 1_000_000, Some((WorkKind::Time, 200_000)), Some(800_000))
        );
        assert_eq!((t.sched.policy, t.sched.priority, t.cpu, t.offset_ns), (Policy::Rr, 80, Some(1), 250_000));
        let p = t.thread(3, 0, 10);
        assert_eq!(p.work.unwrap().deadline_ns, 800_000);
        let d = TaskSpec::parse("name=dl,period=10ms,work=1ms,policy=deadline,dl-runtime=2ms", fifo()).unwrap();
        assert_eq!((d.sched.runtime_ns, d.sched.deadline_ns, d.sched.period_ns), (2_000_000, 10_000_000, 10_000_000));
        let o = TaskSpec::parse("name=bg,period=5ms,policy=other,nice=5", fifo()).unwrap();
        assert_eq!((o.sched.policy, o.sched.nice, o.work), (Policy::Other, 5, None));
    }

    #[test]
    fn malformed_tasks_are_refused_naming_the_key() {
        for (text, says) in [
            ("name=a,period=1ms,colour=red", "unknown key 'colour'"),
            ("name=a,period=1ms,work=0", "work=0 must be greater than zero"),
            ("name=a,period=1ms,deadline=-5us", "deadline=-5us"),
            ("name=a,period", "'period' is not key=value"),
            ("period=1ms", "needs a name"),
            ("name=a", "needs a period"),
            ("name=a,period=1ms,name=b", "given twice"),
            ("name=a,period=1ms,policy=fifo", "needs a priority"),
            ("name=a,period=1ms,policy=deadline", "needs dl-runtime"),
            ("name=a,period=1ms,dl-runtime=100us", "need policy=deadline"),
            ("name=a b,period=1ms", "name=a b"),
        ] {
            let e = TaskSpec::parse(text, fifo()).unwrap_err();
            assert!(e.contains(says), "{text}: {e}");
        }
    }

    #[test]
    fn a_set_asking_more_rt_time_than_throttling_allows_is_refused_unless_forced() {
        let online = CpuSet::from_cpus([0, 1]);
        let t = |s: &str| TaskSpec::parse(s, fifo()).unwrap();
        let heavy = vec![t("name=a,period=1ms,work=600us,cpu=1"), t("name=b,period=2ms,work=800us,cpu=1")];
        let e = check(&heavy, &online, Some(0.95), false).unwrap_err();
        assert!(e.contains("CPU 1 ask for 100 %") && e.contains("--force"), "{e}");
        check(&heavy, &online, Some(0.95), true).unwrap();
        check(&heavy, &online, None, false).unwrap();
        check(&heavy[..1], &online, Some(0.95), false).unwrap();
        // Without throttling, the rule of noise and load: tasks that keep every CPU busy are
        // refused unless forced; one CPU left is enough.
        let busy = vec![t("name=a,period=1ms,work=1ms,cpu=0"), t("name=b,period=1ms,work=1ms")];
        let e = check(&busy, &online, None, false).unwrap_err();
        assert!(e.contains("sched_rt_runtime_us = -1") && e.contains("--force"), "{e}");
        check(&busy, &online, None, true).unwrap();
        check(&busy[..1], &online, None, false).unwrap();
        let dup = vec![t("name=a,period=1ms"), t("name=a,period=2ms")];
        assert!(check(&dup, &online, None, false).unwrap_err().contains("used twice"));
        let off = vec![t("name=a,period=1ms,cpu=7")];
        assert!(check(&off, &online, None, false).unwrap_err().contains("cpu=7"));
    }

    #[test]
    fn a_toml_task_set_has_the_keys_of_task() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("set.toml");
        std::fs::write(&p, "[[task]]\nname = \"ctl\"\nperiod = \"1ms\"\nwork = 200\npolicy = \"fifo:80\"\ncpu = 1\n\n[[task]]\nname = \"log\"\nperiod = \"10ms\"\nwork = \"2ms\"\npolicy = \"other\"\n").unwrap();
        let tasks = read_toml(&p, fifo()).unwrap();
        assert_eq!(tasks.len(), 2);
        assert_eq!(
            (tasks[0].work, tasks[0].cpu, tasks[0].sched.priority),
            (Some((WorkKind::Fixed, 200_000)), Some(1), 80)
        );
        std::fs::write(&p, "[[task]]\nname = \"ctl\"\nperiod = \"1ms\"\nspeed = 3\n").unwrap();
        let e = read_toml(&p, fifo()).unwrap_err();
        assert!(e.contains("task 1") && e.contains("unknown key 'speed'"), "{e}");
        std::fs::write(&p, "[tasks]\n").unwrap();
        assert!(read_toml(&p, fifo()).unwrap_err().contains("unknown table 'tasks'"));
    }
}
