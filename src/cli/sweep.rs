//! `rtlab sweep`: a grid of runs.

use super::run::{RunArgs, RuntimeKind};
use super::UsageError;
use crate::commands::run::RunOptions;
use crate::commands::sweep::{Printout, SweepOptions};
use crate::load::LoadSched;
use crate::measure::probe::Method;
use crate::result::RunResult;
use crate::rt::sched::Policy;
use crate::sweep::{expand, Axes, Point};
use clap::Args;
use std::path::PathBuf;

/// A list of counts (`0..20`, `0..20:2`, `0,2,4`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Counts(pub Vec<usize>);

/// Parses a counts axis (`0..20`, `0..20:2`, `0,2,4`).
pub(super) fn counts(s: &str) -> Result<Counts, String> {
    let c = crate::sweep::parse_counts(s)?;
    if let Some(i) = (1..c.len()).find(|&i| c[..i].contains(&c[i])) {
        return Err(format!("'{s}' gives {} workers twice: each point would run twice; list each value once", c[i]));
    }
    Ok(Counts(c))
}

fn list<T: PartialEq>(s: &str, f: impl Fn(&str) -> Result<T, String>) -> Result<Vec<T>, String> {
    let items: Vec<T> = s.split(',').map(|x| f(x.trim())).collect::<Result<_, _>>()?;
    once_each(s, items)
}

/// `items` of the axis `s`, refused when one is given twice (its point would run twice).
fn once_each<T: PartialEq>(s: &str, items: Vec<T>) -> Result<Vec<T>, String> {
    if let Some(i) = (1..items.len()).find(|&i| items[..i].contains(&items[i])) {
        let word = s.split(',').nth(i).map_or("a value", str::trim);
        return Err(format!("'{s}' gives {word} twice: each point would run twice; list each value once"));
    }
    Ok(items)
}

/// A comma-separated axis (a newtype, so clap takes it as one value).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct List<T>(pub Vec<T>);

/// Parses a load-kind axis.
pub(super) fn kinds(s: &str) -> Result<List<String>, String> {
    list(s, |k| match k {
        "cpu" | "messaging" | "memory" | "io" => Ok(k.to_string()),
        _ => Err(format!("load kind '{k}' cannot be swept; use cpu, messaging, memory or io")),
    })
    .map(List)
}

/// Parses a load-policy axis.
pub(super) fn load_policies(s: &str) -> Result<List<LoadSched>, String> {
    once_each(s, crate::sweep::parse_load_policies(s)?).map(List)
}

/// Parses a probe-policy axis.
pub(super) fn probe_policies(s: &str) -> Result<List<(Policy, Option<u32>)>, String> {
    list(s, crate::sweep::parse_probe).map(List)
}

/// Parses an axis of times (plain numbers are µs), each greater than zero.
fn times(s: &str) -> Result<List<i64>, String> {
    list(s, super::parse::latency).map(List)
}

/// Parses an axis of work amounts (plain numbers are µs), each at most 100 ms.
fn works(s: &str) -> Result<List<i64>, String> {
    list(s, super::parse::work).map(List)
}

fn methods(s: &str) -> Result<List<Method>, String> {
    list(s, |m| {
        <Method as clap::ValueEnum>::from_str(m, true)
            .map_err(|_| format!("method '{m}': use abs, rel, nanosleep, sleep or posix-timer"))
    })
    .map(List)
}

/// Run a grid of configurations and write every result into a directory.
///
/// Every point runs for -D (or -l) with the `rtlab run` options given here; the axes vary the
/// load workers (--workers), the load kind, the load policy, the probe policy and the method.
/// DIR gets sweep.csv (RealtimeTests' columns with a true stdev, plus p99, p99.9, missed and
/// throughput), sweep.json and points/NNN-….json, rewritten after every point; --resume skips
/// points already done.
#[derive(Args, Debug, Clone)]
pub struct SweepArgs {
    /// Directory for sweep.csv, sweep.json and points/
    #[arg(long = "out", value_name = "DIR", required = true)]
    pub out: PathBuf,

    /// Load workers axis: 0..20, 0..20:2 or 0,2,4 (applies to the first --load; cpu if none)
    #[arg(long = "workers", value_name = "COUNTS", value_parser = counts)]
    pub workers: Option<Counts>,

    /// Load kind axis: cpu,messaging,memory,io
    #[arg(long = "load-kind", value_name = "KINDS", value_parser = kinds)]
    pub load_kinds: Option<List<String>>,

    /// Load policy axis: other,batch,idle,fifo:N,rr:N
    #[arg(long = "load-policy", value_name = "POLICIES", value_parser = load_policies)]
    pub load_policies: Option<List<LoadSched>>,

    /// Probe policy axis: fifo:99,rr:99,other,…
    #[arg(long = "probe-policy", value_name = "POLICIES", value_parser = probe_policies)]
    pub probe_policies: Option<List<(Policy, Option<u32>)>>,

    /// Method axis: abs,rel,nanosleep,sleep,posix-timer
    #[arg(long = "methods", value_name = "METHODS", value_parser = methods)]
    pub methods: Option<List<Method>>,

    /// Work-per-period axis: 50us,200us,1ms,5ms (each point runs --work TIME; see --work-kind)
    #[arg(long = "works", value_name = "TIMES", value_parser = works)]
    pub works: Option<List<i64>>,

    /// Deadline axis of working tasks: 500us,1ms (each point runs --deadline TIME)
    #[arg(long = "deadlines", value_name = "TIMES", value_parser = times)]
    pub deadlines: Option<List<i64>>,

    /// Keep the points already in DIR and run only the missing ones
    #[arg(long)]
    pub resume: bool,

    /// Run every point N times, interleaved in rounds (A B, B A, A B …: the order flips each
    /// round so the machine's drift hits all alike), and compare each point's runs with the
    /// first point's (as `rtlab compare A… --vs B…`)
    #[arg(long = "rounds", value_name = "N", default_value = "1", value_parser = clap::value_parser!(u16).range(1..=1000))]
    pub rounds: u16,

    /// The options of every point (see `rtlab run --help`)
    #[command(flatten)]
    pub run: RunArgs,
}

impl SweepOptions {
    /// Validates the sweep: its length, its axes against the runtime, every point's options,
    /// and with `--resume` that the points already in DIR were measured the same way.
    pub fn from_cli(args: SweepArgs) -> Result<SweepOptions, UsageError> {
        args.validate()
    }

    /// `rtlab beam sweep`: `rtlab sweep --runtime beam --workers COUNTS` with RealtimeTests'
    /// printout on stdout.
    pub fn from_beam(args: super::beam::BeamSweepArgs) -> Result<SweepOptions, UsageError> {
        args.into_sweep()
    }
}

fn usage(m: impl Into<String>) -> UsageError {
    UsageError(m.into())
}

impl SweepArgs {
    /// Refuses the axes and options a runtime of the sweep cannot take: the OS threads' axes,
    /// and the runtime's own worker count when `--workers` sweeps it.
    fn check_runtimes(&self, kinds: &[RuntimeKind]) -> Result<(), UsageError> {
        if self.run.runtime.control && kinds.iter().all(|k| *k == RuntimeKind::Os) {
            return Err(usage(
                "--control measures an OS thread beside a runtime's probe; add a runtime to --runtime (e.g. os,go,node)",
            ));
        }
        for &runtime in kinds.iter().filter(|k| **k != RuntimeKind::Os) {
            let name = runtime.name();
            for (flag, given) in
                [("--probe-policy", self.probe_policies.is_some()), ("--methods", self.methods.is_some())]
            {
                if given {
                    return Err(usage(format!(
                        "{flag} sweeps OS threads' scheduling and sleep method; with --runtime {name} the probe runs on the runtime's own SCHED_OTHER threads; drop {flag}"
                    )));
                }
            }
            let r = &self.run.runtime;
            let own = match runtime {
                RuntimeKind::Tokio => ("--tokio-hogs", r.tokio_hogs > 0),
                RuntimeKind::Beam => ("--beam-workers", r.beam_workers.is_some()),
                _ => ("--runtime-workers", r.runtime_workers.is_some()),
            };
            if self.workers.is_some() && own.1 {
                return Err(usage(format!("--workers sweeps {} with --runtime {name}; drop {}", own.0, own.0)));
            }
        }
        Ok(())
    }

    fn validate(self) -> Result<SweepOptions, UsageError> {
        if self.run.duration.is_none() && self.run.loops.is_none() {
            return Err(usage("every sweep point needs a length: give -D (e.g. -D 5s) or -l"));
        }
        if self.run.json.is_some() {
            return Err(usage("--json does not apply to a sweep; every result goes into --out DIR"));
        }
        let kinds = self.run.runtime.runtime.0.clone();
        self.check_runtimes(&kinds)?;
        // Each runtime its own grid, one after the other: the runtime is the outermost axis
        // (named only when there are several), so the picture draws a group per runtime.
        let mut points = Vec::new();
        let mut runtime_of = Vec::new();
        for &runtime in &kinds {
            let axes = Axes {
                load_kinds: self.load_kinds.as_ref().map(|l| l.0.clone()),
                load_policies: self.load_policies.as_ref().map(|l| l.0.clone()),
                probe_policies: self.probe_policies.as_ref().map(|l| l.0.clone()),
                methods: self.methods.as_ref().map(|l| l.0.clone()),
                deadlines: self.deadlines.as_ref().map(|l| l.0.clone()),
                works: self.works.as_ref().map(|l| l.0.clone()),
                workers: self.workers.as_ref().map(|c| c.0.clone()),
                workers_in_runtime: runtime != RuntimeKind::Os,
            };
            for mut p in expand(&axes, &self.run.loads).map_err(usage)? {
                p.index = points.len();
                if kinds.len() > 1 {
                    p.axes.insert(0, ("runtime".to_string(), runtime.name().to_string()));
                }
                runtime_of.push(runtime);
                points.push(p);
            }
        }
        if points.len() > crate::sweep::MAX_POINTS {
            return Err(usage(format!(
                "the axes make {} points, more than {}; sweep fewer values",
                points.len(),
                crate::sweep::MAX_POINTS
            )));
        }
        if self.rounds > 1 && points.len() < 2 {
            return Err(usage(format!(
                "--rounds {} compares points with the first; this sweep has one point: sweep an axis (e.g. --probe-policy fifo:95,other)",
                self.rounds
            )));
        }
        let run = self.run.clone();
        let workers_swept = self.workers.is_some();
        let rounds = usize::from(self.rounds);
        let planned = planned_sweep(self.out, self.resume, self.run.duration, points, |p| {
            let runtime = runtime_of[p.index];
            let mut a = run.clone();
            a.runtime.runtime = super::run::Runtimes(vec![runtime]);
            // OS threads are their own control.
            a.runtime.control &= runtime != RuntimeKind::Os;
            a.loads = p.loads.clone();
            if let Some((policy, prio)) = p.probe {
                a.policy = Some(policy);
                a.priority = prio;
            }
            if let Some(m) = p.method {
                a.method = m;
            }
            if let Some(w) = p.work {
                a.work = Some(w);
            }
            if let Some(d) = p.deadline {
                a.deadlines.deadline = Some(d);
            }
            if workers_swept {
                match runtime {
                    RuntimeKind::Tokio => a.runtime.tokio_hogs = p.workers,
                    RuntimeKind::Beam => a.runtime.beam_workers = Some(p.workers),
                    RuntimeKind::Os => {}
                    _ => a.runtime.runtime_workers = Some(p.workers.min(1024) as u16),
                }
            }
            RunOptions::from_cli(a).map(|o| o.plan)
        })?;
        Ok(SweepOptions { rounds, ..planned })
    }
}

/// A sweep of `points` into `out`: each point's plan from `plan_of` (its error names the
/// point), `--resume` checked against what `out` holds, the swept axes named.
pub(super) fn planned_sweep(
    out: PathBuf,
    resume: bool,
    duration: Option<std::time::Duration>,
    points: Vec<Point>,
    plan_of: impl Fn(&Point) -> Result<crate::session::Plan, UsageError>,
) -> Result<SweepOptions, UsageError> {
    let mut planned = Vec::with_capacity(points.len());
    for p in points {
        let plan = plan_of(&p).map_err(|e| usage(format!("point {} ({}): {}", p.index, p.label(), e.0)))?;
        planned.push((p, plan));
    }
    if resume {
        check_resumable(&out, &planned)?;
    }
    let axis_names = planned.first().map(|(p, _)| p.axes.iter().map(|(k, _)| k.clone()).collect()).unwrap_or_default();
    Ok(SweepOptions { out, resume, points: planned, axis_names, duration, printout: Printout::Csv, rounds: 1 })
}

/// The settings of a configuration that decide what is measured (what was obtained, such as
/// `degraded`, is left out), flattened for comparison.
fn asked_settings(config: &crate::result::Config, loads: &[String]) -> Vec<(String, String)> {
    let mut v = serde_json::to_value(config).unwrap_or_default();
    let mut out = Vec::new();
    if let Some(o) = v.as_object_mut() {
        for k in ["mlockall_obtained", "dma_latency_held", "degraded"] {
            o.remove(k);
        }
        out.extend(o.iter().map(|(k, v)| (k.clone(), v.to_string())));
    }
    out.push(("loads".into(), loads.join(" + ")));
    out
}

/// With `--resume`, refuses (exit 2) to add points to a sweep measured with other options:
/// every point already in DIR must have been measured as this sweep would measure it.
pub(super) fn check_resumable(
    out: &std::path::Path,
    planned: &[(Point, crate::session::Plan)],
) -> Result<(), UsageError> {
    for (p, plan) in planned {
        // With --rounds, a point's first round stands for it.
        let file = ["", "-round=1"]
            .iter()
            .map(|r| out.join("points").join(format!("{}{r}.json", p.label())))
            .find(|f| f.is_file())
            .unwrap_or_default();
        let Ok(text) = std::fs::read_to_string(&file) else { continue };
        let Ok(recorded) = serde_json::from_str::<RunResult>(&text) else { continue };
        let then_runtime =
            recorded.runtime.as_ref().map(|r| (r.kind.as_str(), r.method.as_str(), r.period_ns, r.workers));
        let now_runtime = plan.probe.runtime_settings();
        if then_runtime != now_runtime {
            let show = |r: Option<(&str, &str, i64, usize)>| {
                r.map_or("OS threads".to_string(), |(k, m, p, w)| {
                    format!("{k} {m} every {p} ns with {}", crate::units::count(w as u64, "worker"))
                })
            };
            return Err(usage(format!(
                "--resume: {} was measured with another probe (point {}: {} → {}); resume with the same options, or give a new --out",
                out.display(),
                p.label(),
                show(then_runtime),
                show(now_runtime)
            )));
        }
        let (Some(config), Some(now_config)) = (&recorded.config, &plan.config) else { continue };
        // A simulated point runs no load: there is nothing recorded to compare them with.
        let specs = |v: Vec<String>| if recorded.simulated { Vec::new() } else { v };
        let then = asked_settings(config, &specs(recorded.loads.iter().map(|l| l.spec.clone()).collect()));
        let now = asked_settings(now_config, &specs(plan.loads.iter().map(|l| l.text.clone()).collect()));
        let differences: Vec<String> = now
            .iter()
            .filter_map(|(k, v)| {
                let old = then.iter().find(|(k2, _)| k2 == k).map_or("(none)", |(_, v)| v.as_str());
                (old != v).then(|| format!("{k} {old} → {v}"))
            })
            .collect();
        if !differences.is_empty() {
            return Err(usage(format!(
                "--resume: {} was measured with other options (point {}: {}); resume with the same options, or give a new --out",
                out.display(),
                p.label(),
                differences.join(", ")
            )));
        }
    }
    Ok(())
}
