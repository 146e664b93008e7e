//! A noise run's summary, rtla osnoise's way: one row per CPU (runtime, noise, % of the CPU
//! available, the largest single noise, noise per second, counts by source), the largest
//! interferers per CPU, the largest noises explained, and the verdict.

use crate::result::RunResult;
use crate::trace::noise::Source;
use crate::units::{duration, si, Unit};

/// The summary of a noise result (empty for other results).
pub fn summary(r: &RunResult, u: Unit) -> String {
    let Some(cfg) = &r.noise else { return String::new() };
    let l = u.label();
    let first = r.threads.iter().find_map(|t| t.noise.as_ref());
    let mut out = format!(
        "noise on CPU {} at {}, a gap of at least {} is noise; counter {}{}; {}\n",
        cfg.cpus,
        if cfg.policy.is_realtime_priority() {
            format!("SCHED_{} {}", cfg.policy.name().to_uppercase(), cfg.priority)
        } else {
            format!("SCHED_{}", cfg.policy.name().to_uppercase())
        },
        duration(cfg.threshold_ns),
        cfg.counter,
        first.map(|n| format!(" {:.3} MHz", n.counter_mhz)).unwrap_or_default(),
        if cfg.runtime_ns < cfg.period_ns {
            format!("busy {} of every {}", duration(cfg.runtime_ns), duration(cfg.period_ns))
        } else {
            "busy all the time".into()
        }
    );
    let attributed = r.threads.iter().any(|t| t.noise.as_ref().is_some_and(|n| n.sources.is_some()));
    let mut header: Vec<String> = [
        "CPU",
        "Runtime",
        &format!("Noise {l}"),
        "% CPU Aval",
        &format!("Max Single {l}"),
        "at",
        &format!("Noise/s {l}"),
        "Noises/s",
        &format!("p99 {l}"),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    if attributed {
        header.extend(Source::ALL.iter().map(|s| s.label().to_string()));
    }
    header.push("Steal".into());
    let mut rows = Vec::new();
    for t in &r.threads {
        let Some(n) = &t.noise else { continue };
        let s = &t.stats;
        let mut row = vec![
            t.cpu.map_or("-".into(), |c| c.to_string()),
            format!("{:.3} s", n.runtime_ns as f64 / 1e9),
            u.fmt(n.noise_ns.min(i64::MAX as u64) as i64),
            format!("{:.5}", n.available_pct),
            u.fmt_opt(s.max_ns),
            s.max_at_ns.map_or("-".into(), |a| format!("+{:.3} s", a as f64 / 1e9)),
            u.fmt_f(n.noise_per_s_ns),
            si(n.noises_per_s),
            s.percentiles_ns.get("99").copied().flatten().map_or("-".into(), |v| u.fmt(v)),
        ];
        if attributed {
            match &n.sources {
                Some(src) => row.extend(Source::ALL.iter().map(|s| src.of(*s).count.to_string())),
                None => row.extend(Source::ALL.iter().map(|_| "-".to_string())),
            }
        }
        row.push(n.steal_ns.map_or("-".into(), duration));
        rows.push(row);
    }
    out += &super::table::grid(&header, &rows, 1);
    for t in &r.threads {
        let Some(n) = &t.noise else { continue };
        let cpu = t.cpu.map_or("-".into(), |c| c.to_string());
        out += &format!(
            "CPU {cpu}: {} reads, {:.1} ns each (the smallest gap it can see), {} noises",
            si(n.iterations as f64),
            n.loop_ns,
            t.stats.cycles
        );
        if let Some(src) = &n.sources {
            if src.attributed < src.gaps {
                out += &format!(
                    " ({} of {} attributed{})",
                    src.attributed,
                    src.gaps,
                    if src.lost_events > 0 {
                        format!(", {} trace events lost", src.lost_events)
                    } else {
                        String::new()
                    }
                );
            }
            let top: Vec<String> = src
                .top
                .iter()
                .take(5)
                .map(|x| format!("{} {} {}× {}", x.source.label(), x.name, x.count, duration(x.ns)))
                .collect();
            if !top.is_empty() {
                out += &format!("; most: {}", top.join(" · "));
            }
            if src.hw.count > 0 {
                out += &format!("; HW {}× {}", src.hw.count, duration(src.hw.ns));
            }
        }
        out.push('\n');
    }
    match &r.explain {
        Some(x) if x.unavailable.is_some() => {
            out += &format!("not attributed: {}\n", x.unavailable.as_deref().unwrap_or_default());
        }
        Some(_) if !r.explanations.is_empty() => {
            out += "largest noises:\n";
            for (i, e) in r.explanations.iter().take(3).enumerate() {
                out += &super::explain::aligned(e, i == 0);
            }
        }
        _ => {}
    }
    if r.verdict.threshold_ns.is_some() {
        out += &r.verdict.message;
        out.push('\n');
    }
    out
}
