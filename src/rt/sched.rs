//! Scheduling policies through `sched_setattr`/`sched_getattr` (the only interface that also
//! covers SCHED_DEADLINE).

use serde::{Deserialize, Serialize};
use std::fmt;
use std::io;
use std::str::FromStr;

/// A Linux scheduling policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Policy {
    /// SCHED_OTHER (CFS/EEVDF), the default time-sharing policy.
    Other,
    /// SCHED_BATCH: time-sharing, treated as CPU-bound.
    Batch,
    /// SCHED_IDLE: runs only when nothing else wants the CPU.
    Idle,
    /// SCHED_FIFO: real-time, first in first out, priorities 1..=99.
    Fifo,
    /// SCHED_RR: real-time round robin, priorities 1..=99.
    Rr,
    /// SCHED_DEADLINE: earliest deadline first with runtime/deadline/period.
    Deadline,
}

impl Policy {
    /// Every policy, in the order `--help` lists them.
    pub const ALL: [Policy; 6] =
        [Policy::Other, Policy::Batch, Policy::Idle, Policy::Fifo, Policy::Rr, Policy::Deadline];

    /// The kernel's number for the policy.
    pub fn raw(self) -> u32 {
        (match self {
            Policy::Other => libc::SCHED_OTHER,
            Policy::Batch => libc::SCHED_BATCH,
            Policy::Idle => libc::SCHED_IDLE,
            Policy::Fifo => libc::SCHED_FIFO,
            Policy::Rr => libc::SCHED_RR,
            Policy::Deadline => 6,
        }) as u32
    }

    /// The policy for a kernel number, if rtlab knows it.
    pub fn from_raw(raw: u32) -> Option<Policy> {
        Policy::ALL.into_iter().find(|p| p.raw() == raw)
    }

    /// True for SCHED_FIFO and SCHED_RR, the policies with static priorities.
    pub fn is_realtime_priority(self) -> bool {
        matches!(self, Policy::Fifo | Policy::Rr)
    }

    /// The valid static priority range for the policy (0..=0 for the others).
    pub fn priority_range(self) -> (u32, u32) {
        if self.is_realtime_priority() {
            (1, 99)
        } else {
            (0, 0)
        }
    }

    /// The lower-case name used on the command line and in results.
    pub fn name(self) -> &'static str {
        match self {
            Policy::Other => "other",
            Policy::Batch => "batch",
            Policy::Idle => "idle",
            Policy::Fifo => "fifo",
            Policy::Rr => "rr",
            Policy::Deadline => "deadline",
        }
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Policy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "other" | "normal" => Ok(Policy::Other),
            "batch" => Ok(Policy::Batch),
            "idle" => Ok(Policy::Idle),
            "fifo" => Ok(Policy::Fifo),
            "rr" => Ok(Policy::Rr),
            "deadline" | "dl" => Ok(Policy::Deadline),
            _ => Err(format!("unknown policy '{s}': use one of other, batch, idle, fifo, rr, deadline")),
        }
    }
}

/// Parses a policy with its priority: `fifo:80`, `rr:10` (1 to 99, required), `other`,
/// `batch`, `idle`, `deadline` (no priority). Errors are a sentence naming the value.
pub fn parse_policy(s: &str) -> Result<(Policy, u32), String> {
    let (name, prio) = s.split_once(':').map_or((s, None), |(n, p)| (n, Some(p)));
    let policy: Policy = name.parse()?;
    let priority = match (policy.is_realtime_priority(), prio) {
        (true, Some(p)) => p
            .parse::<u32>()
            .ok()
            .filter(|p| (1..=99).contains(p))
            .ok_or_else(|| format!("priority '{p}' in '{s}' is not 1 to 99; e.g. {name}:80"))?,
        (true, None) => return Err(format!("'{s}' needs a priority: write {name}:N, e.g. {name}:80")),
        (false, Some(_)) => return Err(format!("'{s}': {name} takes no priority")),
        (false, None) => 0,
    };
    Ok((policy, priority))
}

/// What a thread asks the scheduler for (or what `sched_getattr` says it has).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SchedParams {
    /// The policy.
    pub policy: Policy,
    /// Static priority (FIFO/RR), 0 otherwise.
    pub priority: u32,
    /// Nice value (OTHER/BATCH).
    pub nice: i32,
    /// SCHED_DEADLINE runtime in ns.
    pub runtime_ns: u64,
    /// SCHED_DEADLINE relative deadline in ns.
    pub deadline_ns: u64,
    /// SCHED_DEADLINE period in ns.
    pub period_ns: u64,
}

impl SchedParams {
    /// How results write it: `fifo:95`, `rr:10`, `other`, `batch`, `idle`, `deadline`.
    pub fn label(&self) -> String {
        if self.policy.is_realtime_priority() {
            format!("{}:{}", self.policy, self.priority)
        } else {
            self.policy.to_string()
        }
    }

    /// Parameters for a policy with a static priority and no deadline parameters.
    pub fn simple(policy: Policy, priority: u32) -> Self {
        SchedParams { policy, priority, nice: 0, runtime_ns: 0, deadline_ns: 0, period_ns: 0 }
    }
}

/// The kernel's `sched_attr` for `p`.
pub(crate) fn raw_attr(p: &SchedParams) -> libc::sched_attr {
    libc::sched_attr {
        size: std::mem::size_of::<libc::sched_attr>() as u32,
        sched_policy: p.policy.raw(),
        sched_flags: 0,
        sched_nice: p.nice,
        sched_priority: p.priority,
        sched_runtime: p.runtime_ns,
        sched_deadline: p.deadline_ns,
        sched_period: p.period_ns,
    }
}

/// Applies `params` to the calling thread with `sched_setattr(0, …)`.
pub fn set_current_thread(params: &SchedParams) -> io::Result<()> {
    let attr = raw_attr(params);
    // SAFETY: `attr` is a fully initialised sched_attr whose `size` field is its own size;
    // pid 0 means the calling thread.
    let rc = unsafe { libc::syscall(libc::SYS_sched_setattr, 0, &attr as *const _, 0u32) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Reads the calling thread's scheduling parameters with `sched_getattr(0, …)`.
pub fn current_thread() -> io::Result<SchedParams> {
    of_thread(0)
}

/// Reads thread `tid`'s scheduling parameters (`sched_getattr`; 0: the calling thread).
pub fn of_thread(tid: i32) -> io::Result<SchedParams> {
    let mut attr = raw_attr(&SchedParams::simple(Policy::Other, 0));
    let size = attr.size;
    // SAFETY: `attr` is writable and `size` tells the kernel how much of it to fill.
    let rc = unsafe { libc::syscall(libc::SYS_sched_getattr, tid, &mut attr as *mut _, size, 0u32) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    let policy = Policy::from_raw(attr.sched_policy)
        .ok_or_else(|| io::Error::other(format!("unknown scheduling policy {}", attr.sched_policy)))?;
    Ok(SchedParams {
        policy,
        priority: attr.sched_priority,
        nice: attr.sched_nice,
        runtime_ns: attr.sched_runtime,
        deadline_ns: attr.sched_deadline,
        period_ns: attr.sched_period,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_policy_round_trips_through_its_kernel_number_and_name() {
        for p in Policy::ALL {
            assert_eq!(Policy::from_raw(p.raw()), Some(p));
            assert_eq!(p.name().parse::<Policy>(), Ok(p));
        }
        assert_eq!("normal".parse::<Policy>(), Ok(Policy::Other));
        assert!("fast".parse::<Policy>().unwrap_err().contains("'fast'"));
    }

    #[test]
    fn the_policy_set_on_a_thread_is_the_one_read_back() {
        // SCHED_BATCH needs no privilege; the read-back must see it, then SCHED_OTHER again.
        std::thread::spawn(|| {
            set_current_thread(&SchedParams::simple(Policy::Batch, 0)).unwrap();
            assert_eq!(current_thread().unwrap().policy, Policy::Batch);
            set_current_thread(&SchedParams::simple(Policy::Other, 0)).unwrap();
            assert_eq!(current_thread().unwrap().policy, Policy::Other);
        })
        .join()
        .unwrap();
    }
}
