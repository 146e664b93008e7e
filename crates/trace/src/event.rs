//! One line of a tracefs text stream (`trace_pipe`) turned into an event.

/// A short text of an event (a task's name, a timer's address, a callback, an IRQ's name):
/// kept inline up to 24 bytes, so decoding and copying events allocates nothing.
pub type Name = compact_str::CompactString;

/// What happened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `sched_switch`: the CPU went from one task to another (pid 0 is idle).
    Switch {
        /// The task that stopped running.
        prev_pid: i32,
        /// Its command name.
        prev_comm: Name,
        /// Its kernel priority (0-99 real-time, 100-139 fair, -1 deadline).
        prev_prio: i32,
        /// Its state (`R`, `R+`: preempted; `S`, `D`: it slept).
        prev_state: Name,
        /// The task that runs now.
        next_pid: i32,
        /// Its command name.
        next_comm: Name,
        /// Its kernel priority.
        next_prio: i32,
    },
    /// `sched_waking`: a task is being woken (on the CPU that wakes it).
    Waking {
        /// The task woken.
        pid: i32,
        /// Its command name.
        comm: Name,
        /// Its kernel priority.
        prio: i32,
    },
    /// `irq_handler_entry`.
    IrqEntry {
        /// IRQ number.
        irq: u32,
        /// Device name.
        name: Name,
    },
    /// `irq_handler_exit`.
    IrqExit {
        /// IRQ number.
        irq: u32,
    },
    /// `softirq_entry`.
    SoftirqEntry {
        /// `NET_RX`, `TIMER`, …
        name: Name,
    },
    /// `softirq_exit`.
    SoftirqExit {
        /// `NET_RX`, `TIMER`, …
        name: Name,
    },
    /// `hrtimer_expire_entry`: a timer's callback starts.
    HrtimerEntry {
        /// The timer's address (as printed).
        timer: Name,
        /// Its callback (`hrtimer_wakeup` for a sleeping task).
        function: Name,
        /// The expiry time the kernel used (ns, CLOCK_MONOTONIC), exact.
        now_ns: Option<i64>,
    },
    /// `hrtimer_expire_exit`.
    HrtimerExit,
    /// `hrtimer_start`: the current task (or an interrupt) arms a timer.
    HrtimerStart {
        /// The timer's address (as printed; the same text as its `hrtimer_expire_entry`).
        timer: Name,
        /// Its callback (`hrtimer_wakeup` for a task that sleeps on it).
        function: Name,
        /// The latest expiry (ns on the timer's clock): the soft expiry plus the timer slack.
        expires_ns: i64,
        /// The expiry asked for (ns on the timer's clock).
        softexpires_ns: i64,
        /// The expiry was given relative to the arming (`REL`), not as an instant (`ABS`).
        relative: bool,
    },
    /// `raw_syscalls:sys_exit`: the current task returns to user space from a system call.
    SysExit {
        /// The system call's number.
        nr: i64,
    },
    /// `sched_process_exit`: a task (thread) exits.
    Exit {
        /// The thread that exits.
        pid: i32,
    },
    /// `sched_process_fork`: a task creates a task (a process or a thread).
    Fork {
        /// The new task.
        child_pid: i32,
        /// Its command name.
        child_comm: Name,
    },
    /// `task_rename`: a task changes its command name.
    Rename {
        /// The task.
        pid: i32,
        /// Its new name.
        comm: Name,
    },
    /// An architecture interrupt (`irq_vectors`: `local_timer`, `reschedule`,
    /// `call_function`, `irq_work`, …) starts.
    VectorEntry {
        /// `local_timer`, `reschedule`, …
        name: Name,
    },
    /// An architecture interrupt ends.
    VectorExit {
        /// `local_timer`, `reschedule`, …
        name: Name,
    },
    /// `nmi_handler`: an NMI handler ran for `delta_ns`, ending at the event's time.
    Nmi {
        /// The handler.
        handler: Name,
        /// How long it ran (ns).
        delta_ns: i64,
    },
    /// `workqueue_execute_start`: a kworker runs a work item.
    WorkStart {
        /// The work function.
        function: Name,
    },
    /// Any other event (kept for the count and the timeline).
    Other {
        /// Its name.
        name: Name,
    },
}

/// One event on one CPU.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// When (ns, CLOCK_MONOTONIC through the `mono` trace clock; the text has µs).
    pub ts_ns: i64,
    /// The CPU it happened on.
    pub cpu: usize,
    /// The task current when it happened.
    pub pid: i32,
    /// Its command name.
    pub comm: Name,
    /// What happened.
    pub kind: Kind,
}

impl std::fmt::Display for Event {
    /// The event as a `trace_pipe` line with nanoseconds, which [`parse`] reads back: recorded
    /// events become fixtures for the analyses.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let comm = if self.comm.is_empty() { "<...>" } else { &self.comm };
        let ts = format!("{}.{:09}", self.ts_ns.div_euclid(1_000_000_000), self.ts_ns.rem_euclid(1_000_000_000));
        write!(f, "{comm}-{} [{:03}] {ts}: ", self.pid, self.cpu)?;
        match &self.kind {
            Kind::Switch { prev_pid, prev_comm, prev_prio, prev_state, next_pid, next_comm, next_prio } => write!(
                f,
                "sched_switch: prev_comm={prev_comm} prev_pid={prev_pid} prev_prio={prev_prio} prev_state={prev_state} ==> next_comm={next_comm} next_pid={next_pid} next_prio={next_prio}"
            ),
            Kind::Waking { pid, comm, prio } => write!(f, "sched_waking: comm={comm} pid={pid} prio={prio}"),
            Kind::IrqEntry { irq, name } => write!(f, "irq_handler_entry: irq={irq} name={name}"),
            Kind::IrqExit { irq } => write!(f, "irq_handler_exit: irq={irq} ret=handled"),
            Kind::SoftirqEntry { name } => write!(f, "softirq_entry: vec=0 [action={name}]"),
            Kind::SoftirqExit { name } => write!(f, "softirq_exit: vec=0 [action={name}]"),
            Kind::HrtimerEntry { timer, function, now_ns } => {
                write!(f, "hrtimer_expire_entry: hrtimer={timer} function={function}")?;
                now_ns.map_or(Ok(()), |n| write!(f, " now={n}"))
            }
            Kind::HrtimerExit => write!(f, "hrtimer_expire_exit: hrtimer=0"),
            Kind::HrtimerStart { timer, function, expires_ns, softexpires_ns, relative } => write!(
                f,
                "hrtimer_start: hrtimer={timer} function={function} expires={expires_ns} softexpires={softexpires_ns} mode={}",
                if *relative { "REL" } else { "ABS" }
            ),
            Kind::SysExit { nr } => write!(f, "sys_exit: NR {nr} = 0"),
            Kind::Exit { pid } => write!(f, "sched_process_exit: comm={comm} pid={pid} prio=120"),
            Kind::Fork { child_pid, child_comm } => {
                write!(f, "sched_process_fork: comm={comm} pid={} child_comm={child_comm} child_pid={child_pid}", self.pid)
            }
            Kind::Rename { pid, comm } => write!(f, "task_rename: pid={pid} oldcomm={comm} newcomm={comm}"),
            Kind::VectorEntry { name } => write!(f, "{name}_entry: vector=0"),
            Kind::VectorExit { name } => write!(f, "{name}_exit: vector=0"),
            Kind::Nmi { handler, delta_ns } => write!(f, "nmi_handler: {handler}() delta_ns: {delta_ns} handled: 1"),
            Kind::WorkStart { function } => write!(f, "workqueue_execute_start: work struct 0: function {function}"),
            Kind::Other { name } => write!(f, "{name}: "),
        }
    }
}

/// The value of `key=` in `args`: up to the next ` word=`, or the end.
fn field<'a>(args: &'a str, key: &str) -> Option<&'a str> {
    let pat = format!("{key}=");
    let mut from = 0;
    let start = loop {
        let i = args[from..].find(&pat)? + from;
        if i == 0 || args.as_bytes()[i - 1] == b' ' || args.as_bytes()[i - 1] == b'[' {
            break i + pat.len();
        }
        from = i + 1;
    };
    let rest = &args[start..];
    // The value ends where the next ` key=` begins.
    let mut end = rest.len();
    let bytes = rest.as_bytes();
    for (i, _) in rest.match_indices(' ') {
        let word: String = rest[i + 1..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
        if !word.is_empty() && bytes.get(i + 1 + word.len()) == Some(&b'=') {
            end = i;
            break;
        }
    }
    Some(rest[..end].trim().trim_end_matches(" ==>").trim_end_matches(']'))
}

fn num<T: std::str::FromStr>(args: &str, key: &str) -> Option<T> {
    field(args, key)?.parse().ok()
}

/// `secs.frac` → ns.
pub fn timestamp(t: &str) -> Option<i64> {
    let (s, f) = t.split_once('.')?;
    let secs: i64 = s.parse().ok()?;
    if f.is_empty() || f.len() > 9 || !f.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let frac: i64 = f.parse().ok()?;
    Some(secs * 1_000_000_000 + frac * 10i64.pow(9 - f.len() as u32))
}

/// Parses one line of `trace_pipe` (`  comm-pid  [001] d.h1. 123.456789: name: args`);
/// `None` for comments, blank lines and what does not have that shape.
pub fn parse(line: &str) -> Option<Event> {
    // The CPU field `[NNN]` follows `comm-pid`; a comm may hold spaces and dashes.
    let open = line.match_indices('[').find_map(|(i, _)| {
        let close = line[i..].find(']')? + i;
        let digits = &line[i + 1..close];
        (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())).then_some((i, close))
    })?;
    let (task, cpu) = (line[..open.0].trim(), line[open.0 + 1..open.1].parse::<usize>().ok()?);
    let (comm, pid) = task.rsplit_once('-')?;
    let pid: i32 = pid.parse().ok()?;
    let mut rest = line[open.1 + 1..].trim_start();
    // Flags (`d.h1.`) may be absent with some trace options.
    let first = rest.split_whitespace().next()?;
    if !first.ends_with(':') {
        rest = rest[first.len()..].trim_start();
    }
    let (ts, rest) = rest.split_once(": ")?;
    let ts_ns = timestamp(ts.trim())?;
    let (name, args) = rest.split_once(": ").unwrap_or((rest.trim_end_matches(':'), ""));
    let name = name.trim();
    let kind = match name {
        "sched_switch" => Kind::Switch {
            prev_comm: field(args, "prev_comm")?.into(),
            prev_pid: num(args, "prev_pid")?,
            prev_prio: num(args, "prev_prio")?,
            prev_state: field(args, "prev_state").unwrap_or("").into(),
            next_comm: field(args, "next_comm")?.into(),
            next_pid: num(args, "next_pid")?,
            next_prio: num(args, "next_prio")?,
        },
        "sched_waking" => {
            Kind::Waking { comm: field(args, "comm")?.into(), pid: num(args, "pid")?, prio: num(args, "prio")? }
        }
        "irq_handler_entry" => Kind::IrqEntry { irq: num(args, "irq")?, name: field(args, "name")?.into() },
        "irq_handler_exit" => Kind::IrqExit { irq: num(args, "irq")? },
        "softirq_entry" | "softirq_exit" => {
            let action = field(args, "action").unwrap_or("?").into();
            if name == "softirq_entry" {
                Kind::SoftirqEntry { name: action }
            } else {
                Kind::SoftirqExit { name: action }
            }
        }
        "hrtimer_expire_entry" => Kind::HrtimerEntry {
            timer: field(args, "hrtimer")?.into(),
            function: field(args, "function")?.into(),
            now_ns: num(args, "now"),
        },
        "hrtimer_expire_exit" => Kind::HrtimerExit,
        "hrtimer_start" => Kind::HrtimerStart {
            timer: field(args, "hrtimer")?.into(),
            function: field(args, "function")?.into(),
            expires_ns: num(args, "expires")?,
            softexpires_ns: num(args, "softexpires")?,
            relative: field(args, "mode").is_some_and(|m| m.starts_with("REL")),
        },
        // `NR %ld = %ld`
        "sys_exit" => Kind::SysExit { nr: args.strip_prefix("NR ")?.split_whitespace().next()?.parse().ok()? },
        "sched_process_exit" => Kind::Exit { pid: num(args, "pid")? },
        "sched_process_fork" => {
            Kind::Fork { child_pid: num(args, "child_pid")?, child_comm: field(args, "child_comm")?.into() }
        }
        "task_rename" => Kind::Rename { pid: num(args, "pid")?, comm: field(args, "newcomm")?.into() },
        // `%ps() delta_ns: %lld handled: %d`
        "nmi_handler" => Kind::Nmi {
            handler: args.split("()").next().unwrap_or("?").trim().into(),
            delta_ns: args.split("delta_ns: ").nth(1)?.split_whitespace().next()?.parse().ok()?,
        },
        // `work struct %p: function %ps`
        "workqueue_execute_start" => Kind::WorkStart { function: args.split("function ").nth(1)?.trim().into() },
        n if n.ends_with("_entry") && args.starts_with("vector=") => {
            Kind::VectorEntry { name: n.trim_end_matches("_entry").into() }
        }
        n if n.ends_with("_exit") && args.starts_with("vector=") => {
            Kind::VectorExit { name: n.trim_end_matches("_exit").into() }
        }
        n => Kind::Other { name: n.into() },
    };
    Some(Event { ts_ns, cpu, pid, comm: comm.into(), kind })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_switch_line_gives_both_tasks_and_the_exact_microsecond() {
        let e = parse("           rustc-26271   [001] d..2. 18702.078148: sched_switch: prev_comm=rustc prev_pid=26271 prev_prio=120 prev_state=D ==> next_comm=swapper/1 next_pid=0 next_prio=120").unwrap();
        assert_eq!(e.ts_ns, 18_702_078_148_000);
        assert_eq!((e.cpu, e.pid, e.comm.as_str()), (1, 26271, "rustc"));
        assert_eq!(
            e.kind,
            Kind::Switch {
                prev_pid: 26271,
                prev_comm: "rustc".into(),
                prev_prio: 120,
                prev_state: "D".into(),
                next_pid: 0,
                next_comm: "swapper/1".into(),
                next_prio: 120
            }
        );
    }

    #[test]
    fn comms_with_spaces_and_dashes_and_every_kind_parse() {
        let e =
            parse(" Web Content-a-4242 [003] d.h1. 5.000001: irq_handler_entry: irq=36 name=virtio1-req.0").unwrap();
        assert_eq!((e.comm.as_str(), e.pid, e.cpu), ("Web Content-a", 4242, 3));
        assert_eq!(e.kind, Kind::IrqEntry { irq: 36, name: "virtio1-req.0".into() });
        let k = |l: &str| parse(l).unwrap().kind;
        assert_eq!(
            k("x-1 [000] ..s1. 1.0: softirq_entry: vec=3 [action=NET_RX]"),
            Kind::SoftirqEntry { name: "NET_RX".into() }
        );
        assert_eq!(
            k("x-1 [000] d.h1. 1.0: hrtimer_expire_entry: hrtimer=00000000a1 function=hrtimer_wakeup now=18702080003165"),
            Kind::HrtimerEntry { timer: "00000000a1".into(), function: "hrtimer_wakeup".into(), now_ns: Some(18702080003165) }
        );
        assert_eq!(
            k("x-1 [000] d.h1. 1.0: local_timer_entry: vector=236"),
            Kind::VectorEntry { name: "local_timer".into() }
        );
        assert_eq!(
            k("x-1 [000] d.h1. 1.0: reschedule_exit: vector=253"),
            Kind::VectorExit { name: "reschedule".into() }
        );
        assert_eq!(
            k("x-1 [000] d.Z1. 1.0: nmi_handler: perf_event_nmi_handler() delta_ns: 2000 handled: 1"),
            Kind::Nmi { handler: "perf_event_nmi_handler".into(), delta_ns: 2000 }
        );
        assert_eq!(
            k("x-1 [000] d..4. 1.0: sched_waking: comm=probe pid=77 prio=49 target_cpu=000"),
            Kind::Waking { comm: "probe".into(), pid: 77, prio: 49 }
        );
        assert_eq!(
            k("kworker/1:1-17966 [001] ..... 19370.960043: workqueue_execute_start: work struct 00000000ffad0bd0: function vmstat_update"),
            Kind::WorkStart { function: "vmstat_update".into() }
        );
        assert_eq!(
            k("cyclictest-9 [001] d..1. 1.0: hrtimer_start: hrtimer=0000000012 function=hrtimer_wakeup expires=5000050000 softexpires=5000000000 mode=ABS was_armed=0"),
            Kind::HrtimerStart {
                timer: "0000000012".into(),
                function: "hrtimer_wakeup".into(),
                expires_ns: 5_000_050_000,
                softexpires_ns: 5_000_000_000,
                relative: false
            }
        );
        assert_eq!(k("cyclictest-9 [001] ..... 1.0: sys_exit: NR 230 = 0"), Kind::SysExit { nr: 230 });
        assert_eq!(
            k("x-9 [001] ..... 1.0: sched_process_exit: comm=x pid=9 prio=120 group_dead=false"),
            Kind::Exit { pid: 9 }
        );
        assert_eq!(
            k("x-9 [001] ..... 1.0: sched_process_fork: comm=x pid=9 child_comm=x child_pid=10"),
            Kind::Fork { child_pid: 10, child_comm: "x".into() }
        );
        assert_eq!(
            k("x-9 [001] ..... 1.0: task_rename: pid=9 oldcomm=x newcomm=ctl oom_score_adj=0"),
            Kind::Rename { pid: 9, comm: "ctl".into() }
        );
        assert!(parse("# tracer: nop").is_none());
        // Every kind written as a line reads back as itself, with its nanoseconds.
        for kind in [
            Kind::Switch {
                prev_pid: 7,
                prev_comm: "a b".into(),
                prev_prio: 19,
                prev_state: "R+".into(),
                next_pid: 0,
                next_comm: "swapper/1".into(),
                next_prio: 120,
            },
            Kind::Waking { pid: 7, comm: "ctl".into(), prio: 19 },
            Kind::HrtimerEntry { timer: "ffff01".into(), function: "ffff02".into(), now_ns: Some(5) },
            Kind::HrtimerExit,
            Kind::HrtimerStart {
                timer: "ffff01".into(),
                function: "ffff02".into(),
                expires_ns: 9,
                softexpires_ns: 8,
                relative: true,
            },
            Kind::SysExit { nr: 230 },
            Kind::Exit { pid: 7 },
            Kind::Fork { child_pid: 8, child_comm: "ctl".into() },
            Kind::Rename { pid: 7, comm: "ctl2".into() },
            Kind::IrqEntry { irq: 3, name: "virtio0".into() },
            Kind::SoftirqEntry { name: "TIMER".into() },
            Kind::VectorEntry { name: "local_timer".into() },
        ] {
            let e = Event { ts_ns: 12_345_678_901, cpu: 1, pid: 7, comm: "ctl".into(), kind };
            assert_eq!(parse(&e.to_string()).as_ref(), Some(&e), "{e}");
        }
        assert!(parse("").is_none());
        assert!(parse("garbage [x] 1.0: y").is_none());
    }
}
