//! From inputs (runs, sweeps, samples files) to the series of each plot kind, with captions.

use super::{cdf, describe, histogram, sweep, timeseries, Caption};
use crate::import::input::{Content, Input};
use crate::result::{RunResult, Stats, ThreadResult};

/// The kind of picture.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Kind {
    /// Latency histogram: µs across (logarithmic, so body and tail both show), samples (log) up, one line per thread, max marked
    Histogram,
    /// The same with a linear latency axis (OSADL's look: the tail sets the scale)
    HistogramLinear,
    /// Tail percentiles: latency against p50 … p99.999 on a log "1 − P" axis
    Cdf,
    /// Latency over time: every sample of a samples file (rtlab run --samples), or the largest latency per second of a run's JSON
    Timeseries,
    /// A sweep directory: p50/p99/p99.9/max against the swept axis, throughput on the right
    Sweep,
    /// Noise over time from noise runs (rtlab noise): µs of noise per second of each CPU
    Noise,
}

/// Which times a histogram or CDF draws.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Of {
    /// Wakeup latency (default)
    #[default]
    Latency,
    /// Response time of working tasks: completion − release (rtlab run --work, rt-app logs)
    Response,
    /// Run time of working tasks: completion − wakeup
    Run,
    /// Latency and response time of each curve in one picture
    Both,
    /// A watched thread's IRQ, thread and wakeup (return-to-user) latency side by side
    /// (rtlab watch; rtla timerlat's IRQ/Thr/Usr)
    Stages,
    /// An rt-app use case's hand-off latencies: one curve per releasing task, woken task and
    /// resource (rtlab run --rt-app)
    Handoffs,
    /// An rt-app use case's lock waits: one curve per task and mutex (rtlab run --rt-app)
    LockWaits,
}

impl Of {
    /// The quantity's name on an axis.
    pub fn quantity(self) -> &'static str {
        match self {
            Of::Latency => "Latency",
            Of::Response => "Response time",
            Of::Run => "Run time",
            Of::Both => "Latency and response time",
            Of::Stages => "IRQ, thread and wakeup latency",
            Of::Handoffs => "Hand-off latency",
            Of::LockWaits => "Lock wait",
        }
    }
}

/// What a curve stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum By {
    /// One curve per measuring thread (default for one run)
    Thread,
    /// One curve per input, all its threads together (default for several inputs; a sweep gives one per point)
    Input,
}

/// Why a picture was not drawn.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RenderError {
    /// The inputs do not hold what this kind of picture needs (a usage error).
    Unfit(String),
    /// Drawing failed.
    Draw(String),
}

impl From<RenderError> for crate::error::Error {
    fn from(e: RenderError) -> Self {
        match e {
            RenderError::Unfit(m) => crate::error::Error::Usage(m),
            RenderError::Draw(m) => crate::error::Error::Runtime(m),
        }
    }
}

/// Draws the SVG of `kind` for `inputs`; `title` replaces the default title.
pub fn render(
    kind: Kind,
    inputs: &[Input],
    by: Option<By>,
    threshold_ns: Option<i64>,
    title: Option<&str>,
    of: Of,
) -> Result<String, RenderError> {
    if of != Of::Latency && !matches!(kind, Kind::Histogram | Kind::HistogramLinear | Kind::Cdf) {
        return Err(RenderError::Unfit(format!(
            "--of {} applies to --kind histogram, histogram-linear and cdf",
            clap::ValueEnum::to_possible_value(&of).map_or_else(String::new, |v| v.get_name().to_string())
        )));
    }
    let by = by.unwrap_or_else(|| By::auto(inputs));
    let unfit = RenderError::Unfit;
    let title_or = |t: &str| title.map_or_else(|| t.to_string(), String::from);
    let drawn = match kind {
        Kind::Histogram | Kind::HistogramLinear => {
            let s = histogram_series(inputs, by, of).map_err(unfit)?;
            // Noise runs' samples are gaps in busy loops, not wakeups.
            let noise = inputs.iter().all(|i| i.run().is_some_and(|r| r.kind == crate::result::Kind::Noise));
            let (title, quantity) = if noise {
                ("Noise gap histogram".to_string(), "Noise gap")
            } else {
                (format!("{} histogram", of.quantity()), of.quantity())
            };
            histogram::svg(&caption(&title_or(&title), inputs), &s, kind == Kind::HistogramLinear, quantity)
        }
        Kind::Noise => {
            let tracks: Vec<super::noise::Track> = inputs
                .iter()
                .filter_map(|i| i.run().map(|r| (i, r)))
                .flat_map(|(i, r)| super::noise::tracks(r, if inputs.len() > 1 { Some(i.name.as_str()) } else { None }))
                .collect();
            if tracks.is_empty() {
                return Err(unfit(
                    "--kind noise draws noise runs (rtlab noise --json FILE); no input holds one".to_string(),
                ));
            }
            super::noise::svg(&caption(&title_or("Noise over time"), inputs), &tracks)
        }
        Kind::Cdf => {
            let s = cdf_series(inputs, by, of).map_err(unfit)?;
            cdf::svg(&caption(&title_or(&format!("{} percentiles (tail)", of.quantity())), inputs), &s, of.quantity())
        }
        Kind::Timeseries => {
            let [one] = inputs else {
                return Err(unfit(format!(
                    "--kind timeseries draws one samples file; {} inputs were given",
                    inputs.len()
                )));
            };
            let (tracks, end, resolution) = timeseries_tracks(one).map_err(unfit)?.ok_or_else(|| {
                unfit(format!(
                    "{}: --kind timeseries needs a samples file or a run measured by rtlab (its JSON keeps latency per second); record one with rtlab run --samples FILE or --json FILE",
                    one.path.display()
                ))
            })?;
            timeseries::svg(&caption(&title_or("Latency over time"), inputs), &tracks, end, threshold_ns, resolution)
        }
        Kind::Sweep => {
            let [one] = inputs else {
                return Err(unfit(format!(
                    "--kind sweep draws one sweep directory; {} inputs were given",
                    inputs.len()
                )));
            };
            let data = sweep_data(one).ok_or_else(|| {
                unfit(format!(
                    "{}: --kind sweep needs a sweep directory (rtlab sweep -o DIR) or its sweep.json",
                    one.path.display()
                ))
            })?;
            if data.groups.is_empty() {
                return Err(unfit(format!("{}: the sweep has no finished point yet", one.path.display())));
            }
            let what = if data.response { "response time" } else { "latency" };
            let title = title_or(&format!("Sweep: {what} and throughput against {}", data.axis));
            sweep::svg(&caption(&title, inputs), &data)
        }
    };
    drawn.map_err(RenderError::Draw)
}

impl By {
    /// Threads for a single run, inputs otherwise.
    pub fn auto(inputs: &[Input]) -> By {
        match inputs {
            [one] if one.run().is_some() => By::Thread,
            _ => By::Input,
        }
    }
}

/// `thread 0 (CPU 2)`, or a task's name: `ctl (CPU 2)`.
pub fn thread_label(t: &ThreadResult) -> String {
    if let Some(w) = &t.watch {
        return format!("{}:{}", w.comm, w.tid);
    }
    match (&t.name, t.cpu) {
        (Some(n), Some(c)) => format!("{n} (CPU {c})"),
        (Some(n), None) => n.clone(),
        _ => label_of(t.thread, t.cpu),
    }
}

fn label_of(thread: usize, cpu: Option<usize>) -> String {
    match cpu {
        Some(c) => format!("thread {thread} (CPU {c})"),
        None => format!("thread {thread}"),
    }
}

/// The statistics of `of` for one thread or aggregate (`None` where the task does no work),
/// with what to add to the curve's label.
fn of_stats<'a>(
    stats: &'a Stats,
    work: Option<&'a crate::result::WorkResult>,
    watch: Option<&'a crate::result::watch::WatchThread>,
    of: Of,
) -> Vec<(&'static str, &'a Stats)> {
    if of == Of::Stages {
        let mut v: Vec<(&str, &Stats)> = Vec::new();
        if let Some(w) = watch {
            v.extend(w.irq.as_ref().map(|s| (" IRQ", s)));
            v.extend(w.thread.as_ref().map(|s| (" Thr", s)));
        }
        v.push((" Usr", stats));
        return v;
    }
    match (of, work) {
        (Of::Latency, _) => vec![("", stats)],
        (Of::Response, Some(w)) => vec![("", &w.response)],
        (Of::Run, Some(w)) => vec![("", &w.run)],
        (Of::Both, Some(w)) => vec![(" latency", stats), (" response", &w.response)],
        (Of::Both, None) => vec![(" latency", stats)],
        _ => vec![],
    }
}

/// True when some run of `inputs` has IRQ or thread latencies to draw (`--of stages`).
pub fn has_stages(inputs: &[Input]) -> bool {
    inputs.iter().any(|input| {
        let runs: Vec<&RunResult> = match &input.content {
            Content::Run(r) => vec![r.as_ref()],
            Content::Sweep(_, points) => points.iter().map(|p| &p.result).collect(),
        };
        runs.iter()
            .flat_map(|r| &r.threads)
            .any(|t| t.watch.as_ref().is_some_and(|w| w.irq.is_some() || w.thread.is_some()))
    })
}

/// Every `(label, stats)` to draw, in order.
pub fn curves(inputs: &[Input], by: By, of: Of) -> Vec<(String, &Stats)> {
    let several = inputs.len() > 1;
    let mut out = Vec::new();
    for input in inputs {
        let runs: Vec<(String, &RunResult)> = match &input.content {
            Content::Run(r) => vec![(input.name.clone(), r.as_ref())],
            Content::Sweep(_, points) => points
                .iter()
                .map(|p| {
                    let axes: Vec<String> = p.point.axes.iter().map(|(k, v)| format!("{k}={v}")).collect();
                    let label = if several { format!("{} {}", input.name, axes.join(" ")) } else { axes.join(" ") };
                    (label, &p.result)
                })
                .collect(),
        };
        let is_sweep = matches!(input.content, Content::Sweep(..));
        for (label, r) in runs {
            if matches!(of, Of::Handoffs | Of::LockWaits) {
                let prefix = if several || is_sweep { format!("{label}: ") } else { String::new() };
                out.extend(rt_app_curves(r, of).into_iter().map(|(l, s)| (format!("{prefix}{l}"), s)));
                continue;
            }
            match by {
                By::Input => {
                    for (suffix, s) in of_stats(&r.all.stats, r.all.work.as_ref(), None, of) {
                        out.push((format!("{label}{suffix}"), s));
                    }
                }
                By::Thread => {
                    for t in &r.threads {
                        let l =
                            if several || is_sweep { format!("{label}: {}", thread_label(t)) } else { thread_label(t) };
                        for (suffix, s) in of_stats(&t.stats, t.work.as_ref(), t.watch.as_ref(), of) {
                            out.push((format!("{l}{suffix}"), s));
                        }
                    }
                }
            }
        }
    }
    out
}

/// A use case's hand-off or lock-wait statistics with their labels.
fn rt_app_curves(r: &RunResult, of: Of) -> Vec<(String, &Stats)> {
    let Some(a) = &r.rt_app else { return Vec::new() };
    if of == Of::Handoffs {
        a.handoffs.iter().map(|h| (format!("{} → {} ({} {})", h.from, h.to, h.via, h.resource), &h.stats)).collect()
    } else {
        a.lock_waits.iter().map(|w| (format!("{} on {}", w.task, w.mutex), &w.stats)).collect()
    }
}

/// The caption: `title`, then the one input's description or the inputs' names.
pub fn caption(title: &str, inputs: &[Input]) -> Caption {
    let subtitle = match inputs {
        [one] => match &one.content {
            Content::Run(r) => format!("{} — {}", one.name, describe(r)),
            Content::Sweep(_, points) => {
                let d = points
                    .first()
                    .map(|p| {
                        let mut r = p.result.clone();
                        r.loads.clear();
                        let per_point = r.duration_s.take().map(|d| format!(" · {d:.1} s per point"));
                        describe(&r) + &per_point.unwrap_or_default()
                    })
                    .unwrap_or_default();
                format!("{} — {} · {d}", one.name, crate::units::count(points.len() as u64, "point"))
            }
        },
        _ => {
            let names: Vec<&str> = inputs.iter().map(|i| i.name.as_str()).collect();
            format!("{} inputs: {}", inputs.len(), names.join(", "))
        }
    };
    Caption { title: title.to_string(), subtitle }
}

/// Histogram series; an error names the input without a histogram.
pub fn histogram_series(inputs: &[Input], by: By, of: Of) -> Result<Vec<histogram::Series>, String> {
    let out: Vec<histogram::Series> =
        curves(inputs, by, of).into_iter().filter_map(|(l, s)| histogram::Series::of(l, s)).collect();
    if out.is_empty() {
        return Err(no_histogram(inputs, of));
    }
    Ok(out)
}

/// CDF series; an error names the input without a histogram.
pub fn cdf_series(inputs: &[Input], by: By, of: Of) -> Result<Vec<cdf::Series>, String> {
    let out: Vec<cdf::Series> = curves(inputs, by, of).into_iter().filter_map(|(l, s)| cdf::Series::of(l, s)).collect();
    if out.is_empty() {
        return Err(no_histogram(inputs, of));
    }
    Ok(out)
}

fn no_histogram(inputs: &[Input], of: Of) -> String {
    let names: Vec<String> = inputs.iter().map(|i| i.path.display().to_string()).collect();
    let why = match of {
        Of::Handoffs | Of::LockWaits => format!(
            "no {}: they come from rt-app use cases that resume, signal or lock (rtlab run --rt-app FILE --json F)",
            if of == Of::Handoffs { "hand-offs" } else { "lock waits" }
        ),
        Of::Response | Of::Run => "no working task: response and run times come from rtlab run --work (or --task, \
                                   --rt-app) and rt-app logs"
            .into(),
        _ => "no histogram (cyclictest without -h/-H, or no samples); record one with rtlab run, or cyclictest -h 1000"
            .into(),
    };
    format!("{} {} {why}", names.join(", "), if names.len() == 1 { "has" } else { "have" })
}

/// The sweep picture's data from a sweep input.
pub fn sweep_data(input: &Input) -> Option<sweep::Sweep> {
    let Content::Sweep(_, points) = &input.content else { return None };
    let axis = points.first().and_then(|p| p.point.axes.last()).map_or_else(|| "point".to_string(), |a| a.0.clone());
    let mut groups: Vec<sweep::Group> = Vec::new();
    for p in points {
        let axes = &p.point.axes;
        let (outer, x) = match axes.split_last() {
            Some((last, outer)) => (outer, last.1.clone()),
            None => (&axes[..0], p.point.index.to_string()),
        };
        let label: Vec<String> = outer.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let label = label.join(" ");
        let row = sweep::Row::of(x, &p.result);
        match groups.iter_mut().find(|g| g.label == label) {
            Some(g) => g.rows.push(row),
            None => groups.push(sweep::Group { label, rows: vec![row] }),
        }
    }
    // Throughputs share an axis only when they count the same work: loads of one kind (not
    // each runtime's own workers, whose units of work differ).
    let kinds: Vec<&str> = points.iter().filter_map(|p| p.result.loads.first().map(|l| l.kind.as_str())).collect();
    let comparable = kinds.windows(2).all(|w| w[0] == w[1]);
    let throughput_unit =
        points.iter().find_map(|p| p.result.loads.first().map(|l| l.unit.clone())).filter(|_| comparable);
    let response = !points.is_empty() && points.iter().all(|p| p.result.all.work.is_some());
    let metrics = sweep::Sweep::metrics_for(groups.len());
    Some(sweep::Sweep { axis, groups, throughput_unit, response, metrics })
}

/// Threads of a samples file drawn as tracks of their own; more are drawn as one.
pub const MAX_TRACKS: usize = 32;

/// The tracks of a samples file, streamed twice (time span, then bins): memory does not grow
/// with the file.
pub fn timeseries_tracks(
    input: &Input,
) -> Result<Option<(Vec<timeseries::Track>, i64, timeseries::Resolution)>, String> {
    let Some(path) = &input.samples else { return Ok(input.run().and_then(series_tracks)) };
    let open = || crate::import::input::open_samples(path).map_err(|e| format!("{}: {e}", path.display()));
    let mut r = open()?;
    let mut t_end = 0i64;
    while let Some(rec) = r.next_record().map_err(|e| format!("{}: {e}", path.display()))? {
        t_end = t_end.max(rec.wake_ns);
    }
    let mut r = open()?;
    // Many threads are drawn as one track: a thousand lines say nothing a single one does not,
    // and each costs the picture its own path.
    let together = r.header().threads.len() > MAX_TRACKS;
    let labels = if together {
        vec![format!("all {} threads", r.header().threads.len())]
    } else {
        r.header().threads.iter().map(|t| label_of(t.thread, t.cpu)).collect()
    };
    let mut b = timeseries::Binner::new(labels, t_end);
    while let Some(rec) = r.next_record().map_err(|e| format!("{}: {e}", path.display()))? {
        b.add(if together { 0 } else { rec.thread as usize }, rec.wake_ns, rec.latency_ns);
    }
    let (tracks, end) = b.finish();
    Ok(Some((tracks, end, timeseries::Resolution::Samples)))
}

/// Whether `r` can draw latency over time from its series (a run measured by rtlab).
pub fn has_series(r: &RunResult) -> bool {
    r.threads.iter().any(|t| t.series.as_ref().is_some_and(|s| s.max_ns.iter().any(Option::is_some)))
}

/// Latency over time from the series of a run's threads: each interval's largest latency, and
/// the p50–p99 band of its histogram where the series keeps one.
fn series_tracks(r: &RunResult) -> Option<(Vec<timeseries::Track>, i64, timeseries::Resolution)> {
    if !has_series(r) {
        return None;
    }
    let with: Vec<&ThreadResult> = r.threads.iter().filter(|t| t.series.is_some()).collect();
    let together = with.len() > MAX_TRACKS;
    let labels = if together {
        vec![format!("all {} threads", with.len())]
    } else {
        with.iter().map(|t| thread_label(t)).collect()
    };
    let series = || with.iter().filter_map(|t| t.series.as_ref());
    let end = series().map(|s| s.span_ns).max().unwrap_or(0);
    let interval = series().map(|s| s.interval_ns).max().unwrap_or(crate::measure::series::INTERVAL_NS);
    let mut b = timeseries::Binner::new(labels, end);
    for (i, t) in with.iter().enumerate() {
        let Some(s) = &t.series else { continue };
        let track = if together { 0 } else { i };
        for (k, (max, samples)) in s.max_ns.iter().zip(&s.samples).enumerate() {
            if let Some(max) = max {
                let start = k as i64 * s.interval_ns;
                let len = s.interval_ns.min(s.span_ns - start);
                b.add_interval(track, start, len, *samples, *max);
                // Threads drawn together have no band: their intervals' merge is not in time order.
                if let (false, Some(h)) = (together, s.histogram(k)) {
                    b.add_histogram(track, start, len, &h);
                }
            }
        }
        // The run knows when its largest latency happened, closer than its interval.
        if let (false, Some(max), Some(at)) = (together, t.stats.max_ns, t.stats.max_at_ns) {
            b.mark_max(track, max, at);
        }
    }
    let (tracks, end) = b.finish();
    Some((tracks, end, timeseries::Resolution::Intervals(interval)))
}
