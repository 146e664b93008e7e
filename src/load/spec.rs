//! Load specifications: `KIND[:key=value,…]`, e.g. `cpu:workers=2,policy=idle`,
//! `messaging:workers=4,fds=10,size=100,transport=pipe`, `memory:size=64M`, `io:block=1M`,
//! `command:policy=batch,cmd=stress-ng --cpu 2` (`cmd=` takes the rest of the spec).

use crate::rt::affinity::CpuSet;
use crate::rt::sched::{Policy, SchedParams};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

/// What a load does.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Kind {
    /// Busy computation: the Leibniz series for π in floating point (RealtimeTests' pi loop)
    /// or an integer mix; ops = terms or iterations.
    Cpu {
        /// Integer variant.
        int: bool,
        /// Busy only `burst_ns` of every `every_ns`, on an absolute schedule (a periodic task
        /// of known size: the ground truth of a noise or latency measurement); `None`: always.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        duty: Option<Duty>,
    },
    /// hackbench's model: per group, `fds` senders each write `size`-byte messages to every
    /// one of `fds` receivers over socketpairs or pipes; ops = messages delivered.
    Messaging {
        /// Senders and receivers per group.
        fds: usize,
        /// Message size (bytes).
        size: usize,
        /// Pipes instead of socketpairs.
        pipe: bool,
    },
    /// Copies within a working set, thrashing the caches; ops = bytes copied.
    Memory {
        /// Working set per worker (bytes).
        bytes: usize,
    },
    /// Writes `block`-byte blocks with fsync into a temporary directory; ops = bytes written.
    Io {
        /// Block size (bytes).
        block: usize,
        /// Directory the temporary directory is created in.
        dir: PathBuf,
    },
    /// An external command run through `sh -c`, restarted if it ends early; ops = starts.
    Command {
        /// The command line.
        cmd: String,
    },
}

/// A periodic burst: busy for `burst_ns`, then asleep until the next multiple of `every_ns`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Duty {
    /// Busy time per period (ns).
    pub burst_ns: i64,
    /// Period (ns).
    pub every_ns: i64,
}

/// A load's scheduling: `other` with a nice value, `batch`, `idle`, `fifo:N`, `rr:N`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LoadSched {
    /// Policy.
    pub policy: Policy,
    /// Priority (fifo/rr).
    pub priority: u32,
    /// Nice value (other/batch).
    pub nice: i32,
}

impl LoadSched {
    /// The kernel parameters.
    pub fn params(self) -> SchedParams {
        SchedParams { nice: self.nice, ..SchedParams::simple(self.policy, self.priority) }
    }

    /// True for SCHED_FIFO and SCHED_RR.
    pub fn is_realtime(self) -> bool {
        self.policy.is_realtime_priority()
    }
}

impl fmt::Display for LoadSched {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_realtime() {
            write!(f, "{}:{}", self.policy, self.priority)
        } else if self.nice != 0 {
            write!(f, "{} nice {}", self.policy, self.nice)
        } else {
            write!(f, "{}", self.policy)
        }
    }
}

/// `other`, `batch`, `idle`, `fifo:N` or `rr:N`.
pub fn sched_text(s: LoadSched) -> String {
    s.params().label()
}

/// Parses `other`, `batch`, `idle`, `fifo:N`, `rr:N`.
pub fn parse_sched(s: &str) -> Result<LoadSched, String> {
    let (policy, priority) = crate::rt::sched::parse_policy(s)?;
    if policy == Policy::Deadline {
        return Err("loads cannot use SCHED_DEADLINE; use fifo:N, rr:N, other, batch or idle".into());
    }
    Ok(LoadSched { policy, priority, nice: 0 })
}

/// One load: what it does, how many workers, how they are scheduled and where.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LoadSpec {
    /// What it does.
    #[serde(flatten)]
    pub kind: Kind,
    /// Workers (threads; groups for messaging).
    pub workers: usize,
    /// Scheduling.
    pub sched: LoadSched,
    /// CPUs the workers may run on.
    pub cpus: Option<String>,
    /// Run each worker in its own process instead of a thread.
    pub process: bool,
    /// The spec as written.
    pub text: String,
}

fn size(v: &str, key: &str) -> Result<usize, String> {
    let t = v.trim();
    let (num, mul) = match t.chars().last() {
        Some('k' | 'K') => (&t[..t.len() - 1], 1 << 10),
        Some('m' | 'M') => (&t[..t.len() - 1], 1 << 20),
        Some('g' | 'G') => (&t[..t.len() - 1], 1 << 30),
        _ => (t, 1),
    };
    num.parse::<usize>()
        .ok()
        .and_then(|n| n.checked_mul(mul))
        .filter(|n| *n > 0)
        .ok_or_else(|| format!("{key}='{v}' is not a size; use e.g. {key}=64K, {key}=16M"))
}

/// A time of 1 µs to 1 s (plain number = µs), for a burst's length and period.
fn period_ns(v: &str, key: &str) -> Result<i64, String> {
    crate::units::time_ns(v, crate::units::DefaultUnit::Micros)
        .ok()
        .filter(|ns| (1_000..=1_000_000_000).contains(ns))
        .ok_or_else(|| format!("{key}='{v}' is not a time from 1us to 1s; e.g. {key}=200us"))
}

fn count(v: &str, key: &str, max: usize) -> Result<usize, String> {
    v.parse::<usize>()
        .ok()
        .filter(|n| *n <= max)
        .ok_or_else(|| format!("{key}='{v}' is not a whole number up to {max}"))
}

impl LoadSpec {
    /// This spec with another number of workers (a sweep axis).
    pub fn with_workers(&self, workers: usize) -> LoadSpec {
        LoadSpec { workers, ..self.clone() }.rendered()
    }

    /// This spec with another scheduling (a sweep axis).
    pub fn with_sched(&self, sched: LoadSched) -> LoadSpec {
        LoadSpec { sched, ..self.clone() }.rendered()
    }

    /// This spec with another kind at its default options, keeping workers, scheduling, CPUs
    /// and mode (a sweep axis).
    pub fn with_kind(&self, kind: &str) -> Result<LoadSpec, String> {
        let kind = kind.parse::<LoadSpec>()?.kind;
        Ok(LoadSpec { kind, ..self.clone() }.rendered())
    }

    fn rendered(mut self) -> LoadSpec {
        self.text = self.render();
        self
    }

    /// The spec in canonical form (`KIND:key=value,…`, defaults left out).
    pub fn render(&self) -> String {
        let mut items: Vec<String> = Vec::new();
        let name = match &self.kind {
            Kind::Cpu { int, duty } => {
                if *int {
                    items.push("variant=int".into());
                }
                if let Some(d) = duty {
                    items.push(format!("burst={}ns", d.burst_ns));
                    items.push(format!("every={}ns", d.every_ns));
                }
                "cpu"
            }
            Kind::Messaging { fds, size, pipe } => {
                items.push(format!("fds={fds}"));
                items.push(format!("size={size}"));
                if *pipe {
                    items.push("transport=pipe".into());
                }
                "messaging"
            }
            Kind::Memory { bytes } => {
                items.push(format!("size={bytes}"));
                "memory"
            }
            Kind::Io { block, dir } => {
                items.push(format!("block={block}"));
                items.push(format!("dir={}", dir.display()));
                "io"
            }
            Kind::Command { .. } => "command",
        };
        items.insert(0, format!("workers={}", self.workers));
        if self.sched.policy != Policy::Other {
            items.push(format!("policy={}", sched_text(self.sched)));
        }
        if self.sched.nice != 0 {
            items.push(format!("nice={}", self.sched.nice));
        }
        if let Some(c) = &self.cpus {
            items.push(format!("cpus={c}"));
        }
        if self.process {
            items.push("mode=process".into());
        }
        if let Kind::Command { cmd } = &self.kind {
            items.push(format!("cmd={cmd}"));
        }
        format!("{name}:{}", items.join(","))
    }

    /// The CPU set, parsed.
    pub fn cpu_set(&self) -> Option<CpuSet> {
        self.cpus.as_deref().and_then(|c| CpuSet::parse(c).ok())
    }

    /// True for loads that keep a CPU busy all the time (what RT throttling protects against).
    pub fn is_busy(&self) -> bool {
        !matches!(self.kind, Kind::Io { .. } | Kind::Cpu { duty: Some(_), .. })
    }
}

impl FromStr for LoadSpec {
    type Err = String;

    fn from_str(text: &str) -> Result<LoadSpec, String> {
        let (kind_name, rest) = text.split_once(':').unwrap_or((text, ""));
        let bad_kind = || format!("unknown load '{kind_name}' in '{text}': use cpu, messaging, memory, io or command");
        let mut workers = 1usize;
        let mut sched = LoadSched { policy: Policy::Other, priority: 0, nice: 0 };
        let mut cpus = None;
        let mut process = false;
        let mut int = false;
        let (mut burst, mut every) = (None, None);
        let (mut fds, mut msg, mut pipe) = (20usize, 100usize, false);
        let mut bytes = 64usize << 20;
        let (mut block, mut dir) = (1usize << 20, std::env::temp_dir());
        let mut cmd = None;
        let mut rest = rest;
        let mut seen: Vec<&str> = Vec::new();
        while !rest.is_empty() {
            if let Some(c) = rest.strip_prefix("cmd=") {
                cmd = Some(c.to_string());
                break;
            }
            let (item, tail) = rest.split_once(',').unwrap_or((rest, ""));
            rest = tail;
            let (key, value) = item
                .split_once('=')
                .ok_or_else(|| format!("'{item}' in '{text}' is not key=value; e.g. cpu:workers=2,policy=idle"))?;
            if seen.contains(&key) {
                return Err(format!("'{key}' is given twice in '{text}'; give each key once"));
            }
            seen.push(key);
            match (kind_name, key) {
                (_, "workers") => workers = count(value, key, 4096)?,
                (_, "policy") => {
                    sched =
                        LoadSched { nice: sched.nice, ..parse_sched(value).map_err(|e| format!("{e} (in '{text}')"))? }
                }
                (_, "nice") => {
                    sched.nice = value
                        .parse::<i32>()
                        .ok()
                        .filter(|n| (-20..=19).contains(n))
                        .ok_or_else(|| format!("nice='{value}' is not -20 to 19"))?
                }
                (_, "cpus") => {
                    CpuSet::parse(value)?;
                    cpus = Some(value.to_string());
                }
                (_, "mode") => {
                    process = match value {
                        "process" | "processes" => true,
                        "thread" | "threads" => false,
                        _ => return Err(format!("mode='{value}' must be thread or process")),
                    }
                }
                ("cpu", "variant") => {
                    int = match value {
                        "int" | "integer" => true,
                        "float" | "pi" => false,
                        _ => return Err(format!("variant='{value}' must be float or int")),
                    }
                }
                ("cpu", "burst") => burst = Some(period_ns(value, key)?),
                ("cpu", "every") => every = Some(period_ns(value, key)?),
                ("messaging", "fds") => {
                    fds = count(value, key, 1000)?;
                    if fds == 0 {
                        return Err(format!(
                            "fds=0 in '{text}': a messaging group needs at least 1 sender and receiver; e.g. fds=20"
                        ));
                    }
                }
                ("messaging", "size") => msg = size(value, key)?,
                ("messaging", "transport") => {
                    pipe = match value {
                        "pipe" | "pipes" => true,
                        "socket" | "socketpair" | "sockets" => false,
                        _ => return Err(format!("transport='{value}' must be socket or pipe")),
                    }
                }
                ("memory", "size") => bytes = size(value, key)?,
                ("io", "block") => block = size(value, key)?,
                ("io", "dir") => dir = PathBuf::from(value),
                ("cpu" | "messaging" | "memory" | "io" | "command", k) => {
                    return Err(format!("'{k}' is not an option of {kind_name} loads (in '{text}')"))
                }
                _ => return Err(bad_kind()),
            }
        }
        if sched.nice != 0 && !matches!(sched.policy, Policy::Other | Policy::Batch) {
            return Err(format!("nice applies to other and batch, not {} (in '{text}')", sched.policy));
        }
        if cmd.is_some() && kind_name != "command" {
            return Err(format!("cmd= belongs to command loads, not {kind_name} (in '{text}')"));
        }
        let kind = match kind_name {
            "cpu" => Kind::Cpu {
                int,
                duty: match (burst, every) {
                    (None, None) => None,
                    (Some(burst_ns), Some(every_ns)) if burst_ns < every_ns => Some(Duty { burst_ns, every_ns }),
                    (Some(_), Some(_)) => {
                        return Err(format!(
                            "burst= must be shorter than every= (in '{text}'); e.g. burst=200us,every=10ms"
                        ))
                    }
                    _ => {
                        return Err(format!("burst= and every= go together (in '{text}'); e.g. burst=200us,every=10ms"))
                    }
                },
            },
            "messaging" | "hackbench" => Kind::Messaging { fds, size: msg, pipe },
            "memory" => Kind::Memory { bytes },
            "io" => {
                if !dir.is_dir() {
                    return Err(format!("io load: dir '{}' is not a directory", dir.display()));
                }
                Kind::Io { block, dir }
            }
            "command" => Kind::Command {
                cmd: cmd.filter(|c| !c.trim().is_empty()).ok_or_else(|| {
                    format!("'{text}' has no cmd=…; e.g. command:cmd=stress-ng --cpu 2 (cmd= comes last)")
                })?,
            },
            _ => return Err(bad_kind()),
        };
        Ok(LoadSpec { kind, workers, sched, cpus, process, text: text.to_string() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_with_defaults_and_options() {
        let s: LoadSpec = "cpu:workers=2,policy=idle".parse().unwrap();
        assert_eq!((s.kind, s.workers, s.sched.policy), (Kind::Cpu { int: false, duty: None }, 2, Policy::Idle));
        let s: LoadSpec = "messaging:workers=4,fds=10,size=1K,transport=pipe,policy=fifo:49".parse().unwrap();
        assert_eq!(s.kind, Kind::Messaging { fds: 10, size: 1024, pipe: true });
        assert_eq!((s.sched.policy, s.sched.priority), (Policy::Fifo, 49));
        let s: LoadSpec = "memory:size=16M,cpus=0".parse().unwrap();
        assert_eq!((s.kind, s.cpus.as_deref()), (Kind::Memory { bytes: 16 << 20 }, Some("0")));
        let s: LoadSpec = "command:policy=batch,nice=5,cmd=stress-ng --cpu 2, --timeout 0".parse().unwrap();
        assert_eq!(s.kind, Kind::Command { cmd: "stress-ng --cpu 2, --timeout 0".into() });
        assert_eq!(s.sched.nice, 5);
        assert_eq!("cpu".parse::<LoadSpec>().unwrap().workers, 1);
    }

    #[test]
    fn the_canonical_form_parses_back_to_the_same_spec() {
        for text in [
            "cpu",
            "cpu:variant=int,workers=3,policy=fifo:49,cpus=0",
            "messaging:workers=2,transport=pipe,size=1K",
            "memory:size=8M,policy=batch,nice=5,mode=process",
            "command:workers=2,policy=idle,cmd=sleep 1, 2",
        ] {
            let s: LoadSpec = text.parse().unwrap();
            let again: LoadSpec = s.render().parse().unwrap();
            assert_eq!(
                (&again.kind, again.workers, again.sched, &again.cpus, again.process),
                (&s.kind, s.workers, s.sched, &s.cpus, s.process),
                "{text}"
            );
        }
        let s: LoadSpec = "cpu:workers=2,policy=idle".parse().unwrap();
        assert_eq!(s.with_workers(5).text, "cpu:workers=5,policy=idle");
        assert_eq!(s.with_kind("messaging").unwrap().text, "messaging:workers=2,fds=20,size=100,policy=idle");
        assert_eq!(s.with_sched(parse_sched("fifo:49").unwrap()).text, "cpu:workers=2,policy=fifo:49");
    }

    #[test]
    fn bad_specs_name_the_problem() {
        for (bad, says) in [
            ("gpu", "unknown load 'gpu'"),
            ("cpu:workers=two", "workers='two'"),
            ("cpu:policy=fifo", "needs a priority"),
            ("cpu:policy=fifo:100", "1 to 99"),
            ("cpu:policy=idle:3", "takes no priority"),
            ("cpu:policy=fifo:5,nice=3", "nice applies"),
            ("cpu:size=1M", "not an option of cpu"),
            ("memory:size=0", "size='0'"),
            ("command", "no cmd="),
            ("cpu:cpus=9-1", "runs backwards"),
            ("cpu:workers", "not key=value"),
            ("io:dir=/nonexistent", "not a directory"),
            ("cpu:policy=deadline", "SCHED_DEADLINE"),
            ("cpu:workers=2,workers=3", "'workers' is given twice"),
            ("messaging:fds=0", "fds=0"),
        ] {
            let e = bad.parse::<LoadSpec>().unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }
}
