//! The grid of a sweep: its axes parsed, and expanded into points.

use crate::load::spec::{parse_sched, sched_text, LoadSched, LoadSpec};
use crate::measure::probe::Method;
use crate::rt::sched::Policy;
use std::fmt::Write as _;

/// Most points a sweep may have.
pub const MAX_POINTS: usize = 10_000;
/// Most load workers a sweep point may ask for.
pub const MAX_WORKERS: usize = 4096;

/// Parses counts: `5`, `0..20` (inclusive), `0..20:2` (with a step), `0,2,4`. The size of every
/// range is checked before anything is built.
pub fn parse_counts(s: &str) -> Result<Vec<usize>, String> {
    let bad = || format!("'{s}' is not a count list; use e.g. 0..20, 0..20:2 or 0,2,4");
    let too_many = || {
        format!("'{s}' asks for more than {MAX_POINTS} points or {MAX_WORKERS} workers; use a smaller range or a step")
    };
    let mut out = Vec::new();
    for item in s.split(',') {
        let item = item.trim();
        if let Some((range, step)) = item.split_once("..") {
            let (hi, step) = match step.split_once(':') {
                Some((h, st)) => (h, st.parse::<usize>().map_err(|_| bad())?),
                None => (step, 1),
            };
            let (lo, hi): (usize, usize) = (range.parse().map_err(|_| bad())?, hi.parse().map_err(|_| bad())?);
            if step == 0 || lo > hi {
                return Err(format!("'{item}' is empty or has step 0; write e.g. 0..20:2"));
            }
            if hi > MAX_WORKERS || (hi - lo) / step + 1 > MAX_POINTS - out.len() {
                return Err(too_many());
            }
            out.extend((lo..=hi).step_by(step));
        } else {
            out.push(item.parse().map_err(|_| bad())?);
        }
        if out.len() > MAX_POINTS || out.last().is_some_and(|w| *w > MAX_WORKERS) {
            return Err(too_many());
        }
    }
    Ok(out)
}

/// A probe policy on a sweep axis: `fifo:99`, `rr:99`, `other`, `batch`, `idle`, `deadline`.
pub fn parse_probe(s: &str) -> Result<(Policy, Option<u32>), String> {
    let (name, prio) = s.split_once(':').map_or((s, None), |(n, p)| (n, Some(p)));
    let policy: Policy = name.parse()?;
    let prio = prio
        .map(|p| {
            p.parse::<u32>()
                .ok()
                .filter(|p| (1..=99).contains(p))
                .ok_or_else(|| format!("priority '{p}' in '{s}' is not 1 to 99"))
        })
        .transpose()?;
    if prio.is_some() && !policy.is_realtime_priority() {
        return Err(format!("'{s}': {policy} takes no priority"));
    }
    Ok((policy, prio))
}

/// The axes asked for (each `None` when not swept).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Axes {
    /// Load kinds.
    pub load_kinds: Option<Vec<String>>,
    /// Load policies.
    pub load_policies: Option<Vec<LoadSched>>,
    /// Probe policies.
    pub probe_policies: Option<Vec<(Policy, Option<u32>)>>,
    /// Methods.
    pub methods: Option<Vec<Method>>,
    /// Deadlines of working tasks (ns).
    pub deadlines: Option<Vec<i64>>,
    /// Work per period (ns).
    pub works: Option<Vec<i64>>,
    /// Load workers (innermost).
    pub workers: Option<Vec<usize>>,
    /// The workers axis counts CPU-bound workers inside the probe's runtime (BEAM processes,
    /// tokio tasks), not the first load's.
    pub workers_in_runtime: bool,
}

/// One point of the grid.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    /// Position (0-based).
    pub index: usize,
    /// `(axis, value)` for every swept axis, outermost first.
    pub axes: Vec<(String, String)>,
    /// The loads of this point.
    pub loads: Vec<LoadSpec>,
    /// Probe policy and priority, when swept.
    pub probe: Option<(Policy, Option<u32>)>,
    /// Method, when swept.
    pub method: Option<Method>,
    /// Deadline (ns), when swept.
    pub deadline: Option<i64>,
    /// Work per period (ns), when swept.
    pub work: Option<i64>,
    /// Workers: the first load's, or the runtime's own with `Axes::workers_in_runtime`.
    pub workers: usize,
}

impl Point {
    /// A file-name-safe label, e.g. `003-workers=2`.
    pub fn label(&self) -> String {
        let mut s = format!("{:03}", self.index);
        for (k, v) in &self.axes {
            let _ = write!(s, "-{k}={}", v.replace([':', '/', ' '], "_"));
        }
        s
    }
}

/// Expands the grid: load kind × load policy × probe policy × method × deadline × work ×
/// workers, workers innermost (so a sweep over workers reads like RealtimeTests' table). `template` are the
/// `--load` specs (a `cpu` load when there is none and a load axis is swept).
pub fn expand(axes: &Axes, template: &[LoadSpec]) -> Result<Vec<Point>, String> {
    let len = |v: Option<usize>| v.unwrap_or(1).max(1) as u128;
    let size = len(axes.load_kinds.as_ref().map(Vec::len))
        * len(axes.load_policies.as_ref().map(Vec::len))
        * len(axes.probe_policies.as_ref().map(Vec::len))
        * len(axes.methods.as_ref().map(Vec::len))
        * len(axes.deadlines.as_ref().map(Vec::len))
        * len(axes.works.as_ref().map(Vec::len))
        * len(axes.workers.as_ref().map(Vec::len));
    if size > MAX_POINTS as u128 {
        return Err(format!(
            "the axes make {size} points, more than {MAX_POINTS}; sweep fewer values (each point runs for its own -D)"
        ));
    }
    let needs_load = (axes.workers.is_some() && !axes.workers_in_runtime)
        || axes.load_kinds.is_some()
        || axes.load_policies.is_some();
    let template: Vec<LoadSpec> =
        if template.is_empty() && needs_load { vec!["cpu".parse().expect("a valid spec")] } else { template.to_vec() };
    let one = |v: Option<Vec<String>>| v.unwrap_or_else(|| vec![String::new()]);
    let kinds = one(axes.load_kinds.clone());
    let lpols: Vec<Option<LoadSched>> =
        axes.load_policies.as_ref().map_or(vec![None], |v| v.iter().copied().map(Some).collect());
    let ppols: Vec<Option<(Policy, Option<u32>)>> =
        axes.probe_policies.as_ref().map_or(vec![None], |v| v.iter().copied().map(Some).collect());
    let methods: Vec<Option<Method>> =
        axes.methods.as_ref().map_or(vec![None], |v| v.iter().copied().map(Some).collect());
    let workers: Vec<Option<usize>> =
        axes.workers.as_ref().map_or(vec![None], |v| v.iter().copied().map(Some).collect());
    let some = |v: &Option<Vec<i64>>| v.as_ref().map_or(vec![None], |v| v.iter().copied().map(Some).collect());
    let (deadlines, works) = (some(&axes.deadlines), some(&axes.works));
    // Work and deadline in µs, as numbers: a numeric axis is drawn to scale.
    let us = |ns: i64| crate::units::Unit::Micros.fmt(ns).trim_end_matches(".0").to_string();
    let mut combos: Vec<(Option<Method>, Option<i64>, Option<i64>)> = Vec::new();
    for m in &methods {
        for d in &deadlines {
            for wk in &works {
                combos.push((*m, *d, *wk));
            }
        }
    }
    let mut points = Vec::new();
    for kind in &kinds {
        for lp in &lpols {
            for pp in &ppols {
                for (m, deadline, work) in &combos {
                    for w in &workers {
                        let mut loads = template.clone();
                        let mut labels = Vec::new();
                        if !kind.is_empty() {
                            loads[0] = loads[0].with_kind(kind)?;
                            labels.push(("load_kind".to_string(), kind.clone()));
                        }
                        if let Some(lp) = lp {
                            loads = loads.iter().map(|l| l.with_sched(*lp)).collect();
                            labels.push(("load_policy".to_string(), sched_text(*lp)));
                        }
                        if let Some((p, prio)) = pp {
                            labels
                                .push(("probe_policy".to_string(), prio.map_or(p.to_string(), |n| format!("{p}:{n}"))));
                        }
                        if let Some(m) = m {
                            labels.push(("method".to_string(), m.name().to_string()));
                        }
                        if let Some(d) = deadline {
                            labels.push(("deadline_us".to_string(), us(*d)));
                        }
                        if let Some(wk) = work {
                            labels.push(("work_us".to_string(), us(*wk)));
                        }
                        if let Some(w) = w {
                            if !axes.workers_in_runtime {
                                loads[0] = loads[0].with_workers(*w);
                            }
                            labels.push(("workers".to_string(), w.to_string()));
                        }
                        let workers = match (w, axes.workers_in_runtime) {
                            (Some(w), true) => *w,
                            _ => loads.first().map_or(0, |l| l.workers),
                        };
                        points.push(Point {
                            index: points.len(),
                            axes: labels,
                            loads,
                            probe: *pp,
                            method: *m,
                            deadline: *deadline,
                            work: *work,
                            workers,
                        });
                    }
                }
            }
        }
    }
    Ok(points)
}

/// Parses a load policy list for the axis.
pub fn parse_load_policies(s: &str) -> Result<Vec<LoadSched>, String> {
    s.split(',').map(|p| parse_sched(p.trim())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_and_deadline_axes_sit_inside_the_method_and_outside_the_workers() {
        let axes = Axes {
            probe_policies: Some(vec![(Policy::Fifo, Some(80)), (Policy::Other, None)]),
            works: Some(vec![50_000, 1_500_000]),
            deadlines: Some(vec![2_000_000]),
            ..Axes::default()
        };
        let points = expand(&axes, &[]).unwrap();
        let labels: Vec<String> = points.iter().map(Point::label).collect();
        assert_eq!(
            labels,
            [
                "000-probe_policy=fifo_80-deadline_us=2000-work_us=50",
                "001-probe_policy=fifo_80-deadline_us=2000-work_us=1500",
                "002-probe_policy=other-deadline_us=2000-work_us=50",
                "003-probe_policy=other-deadline_us=2000-work_us=1500"
            ]
        );
        assert_eq!((points[1].work, points[1].deadline), (Some(1_500_000), Some(2_000_000)));
        assert!(points.iter().all(|p| p.loads.is_empty()), "a work axis needs no load");
    }

    #[test]
    fn counts_take_ranges_steps_and_lists() {
        assert_eq!(parse_counts("0..3").unwrap(), vec![0, 1, 2, 3]);
        assert_eq!(parse_counts("0..20:5").unwrap(), vec![0, 5, 10, 15, 20]);
        assert_eq!(parse_counts("1,3,8").unwrap(), vec![1, 3, 8]);
        assert_eq!(parse_counts("7").unwrap(), vec![7]);
        for bad in ["", "a..b", "3..1", "0..4:0", "1,,2", "-1", "0..99999", "0..99999999999", "0..18446744073709551615"]
        {
            assert!(parse_counts(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_grid_is_the_cartesian_product_with_workers_innermost() {
        let axes = Axes {
            load_policies: Some(parse_load_policies("other,idle").unwrap()),
            methods: Some(vec![Method::Abs, Method::Rel]),
            workers: Some(vec![0, 1, 2]),
            ..Axes::default()
        };
        let pts = expand(&axes, &[]).unwrap();
        assert_eq!(pts.len(), 2 * 2 * 3);
        assert_eq!(
            pts[0].axes,
            vec![
                ("load_policy".into(), "other".into()),
                ("method".into(), "abs".into()),
                ("workers".into(), "0".into())
            ]
        );
        assert_eq!(pts[1].loads[0].text, "cpu:workers=1");
        assert_eq!(pts[4].method, Some(Method::Rel));
        assert_eq!(pts[11].loads[0].text, "cpu:workers=2,policy=idle");
        assert_eq!(pts[11].label(), "011-load_policy=idle-method=rel-workers=2");
    }

    #[test]
    fn probe_policies_and_kinds_are_checked() {
        assert_eq!(parse_probe("fifo:99").unwrap(), (Policy::Fifo, Some(99)));
        assert_eq!(parse_probe("other").unwrap(), (Policy::Other, None));
        assert!(parse_probe("other:5").is_err());
        assert!(parse_probe("fifo:100").is_err());
        let axes = Axes { load_kinds: Some(vec!["gpu".into()]), ..Axes::default() };
        assert!(expand(&axes, &[]).unwrap_err().contains("gpu"));
    }
}
