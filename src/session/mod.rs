//! The one pipeline: any probe ([`crate::probes`]) with the same loads, observers (live view,
//! samples file, checkpoints, progress), stop conditions (`--loops`, `--duration`, signals, a
//! break), and one RunResult builder. `rtlab run`, `rtlab sweep` and `rtlab cyclictest` all
//! measure through [`run`] (the latter two without loads or files: [`measure`] adds them).

pub mod explain;
pub mod observers;
pub mod plan;
pub mod signals;

use crate::doctor::{DoctorReport, Examination};
use crate::measure::ring::{Cursor, Sample, SampleRing};
use crate::measure::series::{IntervalReading, LatencySeries, SeriesRecorder, INTERVAL_NS};
use crate::measure::stats::{Exceedance, Live, LiveSnapshot, Summary};
use crate::measure::work::WorkLive;
use crate::probes::{Finished, ProbeError, ProbeSpec, Sinks, Started, ThreadOutcome, ThreadStatus};
use crate::result::build::{Obtained, ProbeFigures, ProbeRun};
use crate::result::warning::Warning;
use crate::result::{EndReason, RunResult, Runtime, SampleLog, SampleLogs};
use crate::rt::affinity::CpuSet;
use crate::sysinfo::Environment;
pub use plan::{os_config, Plan, REFRESH, SAMPLE_RING};
pub use signals::Signals;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// How often the pipeline checks stop conditions and signals (it wakes exactly at the end of
/// a `--duration` when that is sooner).
const POLL: Duration = Duration::from_millis(50);

/// Receives the pipeline's lifecycle events (the live view, the loads, the samples file, the
/// checkpoints, cyclictest's display: each implements only what it needs).
pub trait Observer {
    /// Probes are released; `threads` are what they obtained; `dma_latency_us` is the PM QoS
    /// request held, if any.
    fn started(&mut self, _threads: &[ThreadStatus], _dma_latency_us: Option<i32>) {}
    /// The wall-clock instant the probes' schedule starts (every sample's `at_ns` counts
    /// from it), told just before [`Observer::started`].
    fn schedule_start(&mut self, _start: SystemTime) {}
    /// About once a second while measuring.
    fn tick(&mut self, _threads: &[ThreadStatus], _live: &[LiveSnapshot], _elapsed: Duration) {}
    /// SIGUSR1: print the current table (to stderr).
    fn status_requested(&mut self, _threads: &[ThreadStatus], _live: &[LiveSnapshot], _elapsed: Duration) {}
    /// The run is ending and the probes are told to stop; anything that could keep them from
    /// running (a higher-priority load) must stop now, before they are joined.
    fn stopping(&mut self) {}
    /// A checkpoint of the running measurement (every `Plan::checkpoint`): statistics as of
    /// the probes' last publication, end reason `Checkpoint`.
    fn checkpoint(&mut self, _partial: &Output) {}
    /// Samples streamed from slot `thread`'s ring (only with `Plan::sample_ring`).
    fn samples(&mut self, _thread: usize, _samples: &[Sample]) {}
    /// Probes are joined; `live` holds their final values.
    fn finished(&mut self, _threads: &[ThreadStatus], _live: &[LiveSnapshot]) {}
    /// A warning, as soon as it is known (the setup's before the first sample).
    fn warning(&mut self, _warning: &Warning) {}
    /// What slot `slot`'s live cells added in the interval that ends at `reading.at_ns` (once
    /// a second while measuring, and a last one at the end; a simulated run's, on its virtual
    /// clock, all at the end).
    /// `stage` names a watched stage's cells (`irq`, `thread`, `user`), `None` the slot's own.
    fn interval(&mut self, _slot: usize, _stage: Option<&'static str>, _reading: &IntervalReading) {}
}

/// Every event to every observer, in order.
pub struct Fanout<'a>(pub Vec<&'a mut dyn Observer>);

impl Observer for Fanout<'_> {
    fn started(&mut self, t: &[ThreadStatus], dma: Option<i32>) {
        self.0.iter_mut().for_each(|o| o.started(t, dma));
    }
    fn schedule_start(&mut self, start: SystemTime) {
        self.0.iter_mut().for_each(|o| o.schedule_start(start));
    }
    fn tick(&mut self, t: &[ThreadStatus], l: &[LiveSnapshot], e: Duration) {
        self.0.iter_mut().for_each(|o| o.tick(t, l, e));
    }
    fn status_requested(&mut self, t: &[ThreadStatus], l: &[LiveSnapshot], e: Duration) {
        self.0.iter_mut().for_each(|o| o.status_requested(t, l, e));
    }
    fn stopping(&mut self) {
        self.0.iter_mut().for_each(|o| o.stopping());
    }
    fn checkpoint(&mut self, partial: &Output) {
        self.0.iter_mut().for_each(|o| o.checkpoint(partial));
    }
    fn samples(&mut self, thread: usize, s: &[Sample]) {
        self.0.iter_mut().for_each(|o| o.samples(thread, s));
    }
    fn finished(&mut self, t: &[ThreadStatus], l: &[LiveSnapshot]) {
        self.0.iter_mut().for_each(|o| o.finished(t, l));
    }
    fn warning(&mut self, w: &Warning) {
        self.0.iter_mut().for_each(|o| o.warning(w));
    }
    fn interval(&mut self, slot: usize, stage: Option<&'static str>, r: &IntervalReading) {
        self.0.iter_mut().for_each(|o| o.interval(slot, stage, r));
    }
}

/// An observer that shows nothing.
#[derive(Debug, Default)]
pub struct Silent;
impl Observer for Silent {}

/// What a run measured, before it is turned into a RunResult.
#[derive(Debug)]
pub struct Output {
    /// Per slot.
    pub threads: Vec<ThreadOutcome>,
    /// Wall-clock start (schedule start).
    pub start: SystemTime,
    /// Wall-clock end (probes joined).
    pub end: SystemTime,
    /// Why it ended.
    pub end_reason: EndReason,
    /// mlockall succeeded.
    pub mlocked: bool,
    /// The PM QoS request held, in µs.
    pub dma_latency_held: Option<i32>,
    /// Warnings in the order they arose.
    pub warnings: Vec<Warning>,
    /// The breaktrace event: slot index and sample.
    pub break_hit: Option<(usize, Exceedance)>,
    /// Whether a trace marker was written for it.
    pub tracemark_written: bool,
    /// The probe's runtime failed mid-run: why (the results are partial).
    pub failure: Option<String>,
    /// What the runtime says of itself.
    pub runtime: Option<Runtime>,
    /// Loads that ran inside the runtime.
    pub runtime_loads: Vec<crate::load::LoadResult>,
    /// cyclictest's compatibility mode: the result keeps the logged samples.
    pub cyclictest_compat: bool,
    /// What the doctor found over the run's first second (`None`: not examined).
    pub doctor: Option<DoctorReport>,
    /// `--explain`: why the late samples were late, largest first.
    pub explanations: Vec<crate::trace::Explanation>,
    /// `--explain`: how the explaining went.
    pub explain: Option<crate::trace::ExplainSummary>,
    /// A noise run's attribution per slot (`None` where it was off).
    pub noise_sources: Vec<Option<crate::trace::noise::NoiseSources>>,
    /// `--explain`: every late sample explained so far, by cause: `(cause, spikes, ns)` (in
    /// checkpoints, for `rtlab monitor`).
    pub causes: Vec<(String, u64, i64)>,
    /// What a watch run watched (`rtlab watch`).
    pub watch: Option<crate::result::watch::WatchRun>,
    /// An rt-app use case's own figures.
    pub rt_app: Option<crate::result::rt_app::RtAppFigures>,
    /// Latency over time per slot (`None` for a simulated or noise run, whose samples are
    /// not in this clock's time or have a series of their own).
    pub series: Vec<Option<LatencySeries>>,
    /// What rtlab's process had used when its measuring threads ended (`None` in checkpoints).
    pub usage: Option<crate::rt::process::Usage>,
}

impl Output {
    /// The run's cost: the process's `usage` and its measuring threads' CPU time, known when
    /// every slot's thread was rtlab's and read its own.
    fn cost(&self, u: crate::rt::process::Usage) -> crate::result::Cost {
        let own: Vec<i64> = self.threads.iter().filter_map(|t| t.cpu_ns).collect();
        crate::result::Cost {
            peak_rss_kib: u.peak_rss_kib,
            user_cpu_s: u.user_ns as f64 / 1e9,
            system_cpu_s: u.system_ns as f64 / 1e9,
            measuring_cpu_s: (!own.is_empty() && own.len() == self.threads.len())
                .then(|| own.iter().sum::<i64>() as f64 / 1e9),
        }
    }

    /// The builder's input: `base` (command line, environment, configuration, threshold)
    /// completed with what this run measured.
    pub fn record(&self, base: ProbeRun) -> ProbeRun {
        let config = base.config.map(|mut c| {
            c.mlockall_obtained = self.mlocked;
            c.dma_latency_held = self.dma_latency_held.is_some();
            c
        });
        let mut environment = base.environment;
        if self.doctor.is_some() {
            environment.doctor = self.doctor.clone();
        }
        ProbeRun {
            environment,
            probes: self
                .threads
                .iter()
                .map(|t| ProbeFigures {
                    thread: t.plan.index,
                    cpu: t.plan.cpu,
                    interval_ns: t.plan.interval_ns,
                    summary: t.summary.clone(),
                    drift_ns: t.drift_ns,
                    samples_lost: None,
                    obtained: t.sched.map(|sched| Obtained {
                        sched,
                        cpus_allowed: t.cpus_allowed.clone().unwrap_or_default(),
                        last_cpu: t.last_cpu,
                        timer_slack_ns: t.timer_slack_ns,
                    }),
                    break_hit: t.outcome.break_hit,
                    logs: self.cyclictest_compat.then(|| SampleLogs {
                        schedule_start_ns: t.outcome.start_ns,
                        overflows: SampleLog::of(&t.summary.outliers),
                        spikes: SampleLog::of(&t.summary.over),
                    }),
                    noise: t.noise.clone().map(|mut n| {
                        n.sources = self.noise_sources.get(t.plan.index).cloned().flatten();
                        n
                    }),
                    name: t.plan.name.clone(),
                    work: t.work.clone(),
                    watch: t.watch.clone(),
                    series: self.series.get(t.plan.index).cloned().flatten(),
                })
                .collect(),
            start: Some(self.start),
            end: Some(self.end),
            duration_s: None,
            end_reason: self.end_reason,
            warnings: self.warnings.clone(),
            tracemark_written: self.tracemark_written,
            runtime: self.runtime.clone(),
            config,
            explanations: self.explanations.clone(),
            explain: self.explain.clone(),
            noise: base.noise.map(|mut n| {
                n.mlockall_obtained = self.mlocked;
                n
            }),
            watch: self.watch.clone(),
            rt_app: self.rt_app.clone(),
            cost: self.usage.map(|u| self.cost(u)),
            ..base
        }
    }
}

/// Errors that end a run before it measures.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The probe could not start.
    #[error(transparent)]
    Probe(#[from] ProbeError),
    /// The loads could not start.
    #[error("{0}")]
    Load(String),
}

impl From<SessionError> for crate::error::Error {
    /// What the probe's setup found cannot be measured here is a usage error (exit 2); any
    /// other failure to start is a runtime one.
    fn from(e: SessionError) -> Self {
        match e {
            SessionError::Probe(ProbeError::Usage(m)) => crate::error::Error::Usage(m),
            e => crate::error::Error::Runtime(e.to_string()),
        }
    }
}

/// What a result needs that the pipeline does not know.
#[derive(Clone, Debug)]
pub struct Provenance {
    /// argv.
    pub command_line: Vec<String>,
    /// The machine.
    pub environment: Environment,
}

/// The builder's input for `plan` before anything is measured.
pub fn base_record(plan: &Plan, provenance: Provenance) -> ProbeRun {
    ProbeRun {
        probes: Vec::new(),
        start: None,
        end: None,
        duration_s: None,
        end_reason: EndReason::Unknown,
        missed_known: true,
        command_line: provenance.command_line,
        environment: provenance.environment,
        source: None,
        threshold_ns: plan.threshold_ns(),
        config: plan.config.clone(),
        warnings: Vec::new(),
        simulated: plan.probe.simulated(),
        tracemark_written: false,
        runtime: None,
        explanations: Vec::new(),
        explain: None,
        kind: plan.probe.kind(),
        noise: plan.noise_config(),
        max_response_ns: plan.max_response_ns,
        max_misses: plan.max_misses,
        watch: None,
        rt_app: None,
        cost: None,
    }
}

/// Runs `plan`'s probe, reporting to `observer`, stopping on `signals`; no loads and no files
/// (see [`measure`]).
pub fn run(plan: &Plan, observer: &mut dyn Observer, signals: &Signals) -> Result<Output, SessionError> {
    // The doctor's counters start before the probe so its first second is sampled whole.
    let exam = plan.doctor.clone().map(|root| {
        let cpus = plan.measured_cpus(&root);
        Examination::begin(root, cpus)
    });
    let mut early = Vec::new();
    let (explainer, explain_summary) = start_explainer(plan, &mut early);
    let mut probe = plan.probe.create();
    let stop = Arc::new(AtomicBool::new(false));
    let wires = Wires::new(plan, probe.slots());
    let started = probe.start(&wires.sinks(plan, &stop, signals))?;
    let mut running = Running::new(plan, wires, explainer, exam, started, early, observer);
    let end_reason = running.measure(probe.as_mut(), observer, signals);
    stop.store(true, Relaxed);
    observer.stopping();
    probe.stop();
    Ok(running.finish(probe.join(), end_reason, explain_summary, observer))
}

/// The live figures the probe publishes, one of each per slot: latency cells, sample rings
/// (with `Plan::sample_ring`) and a working task's response cells.
struct Wires {
    lives: Vec<Arc<Live>>,
    rings: Vec<Option<Arc<SampleRing>>>,
    works: Vec<Option<Arc<WorkLive>>>,
}

impl Wires {
    fn new(plan: &Plan, n: usize) -> Wires {
        let lives: Vec<Arc<Live>> = (0..n).map(|_| Arc::new(Live::with_cuts(plan.layout, &plan.cuts_ns))).collect();
        let slots = plan.probe.slots();
        let rings = (0..n)
            .map(|i| {
                let working = slots.get(i).is_some_and(|s| s.work.is_some());
                plan.sample_ring
                    .map(|c| Arc::new(if working { SampleRing::with_response(c) } else { SampleRing::new(c) }))
            })
            .collect();
        let works = (0..n)
            .map(|i| {
                slots.get(i).and_then(|s| s.work).map(|spec| Arc::new(WorkLive::new(spec, plan.layout, &plan.cuts_ns)))
            })
            .collect();
        Wires { lives, rings, works }
    }

    /// What the probe writes into, and the stop conditions it checks itself.
    fn sinks(&self, plan: &Plan, stop: &Arc<AtomicBool>, signals: &Signals) -> Sinks {
        Sinks {
            lives: self.lives.clone(),
            rings: self.rings.clone(),
            work: self.works.clone(),
            max_response_ns: plan.max_response_ns,
            stop: Arc::clone(stop),
            interrupt: Arc::clone(&signals.stop),
            loops: plan.loops,
            duration: plan.duration,
            max_latency_ns: plan.max_latency_ns,
            strict: plan.strict,
        }
    }
}

/// A session while its probe measures: what it reads from the probe and what it learnt.
struct Running<'p> {
    plan: &'p Plan,
    wires: Wires,
    cursors: Vec<Cursor>,
    explainer: Option<explain::Explainer>,
    exam: Option<Examination>,
    doctor: Option<DoctorReport>,
    warnings: Vec<Warning>,
    statuses: Vec<ThreadStatus>,
    stages: Vec<Option<Arc<WorkLive>>>,
    /// Latency over time, read from the live cells once a second (a simulated run's samples
    /// are on a virtual clock; a noise run keeps its own series).
    series: Vec<Option<SeriesRecorder>>,
    readings: Readings,
    keep_series: bool,
    started: Instant,
    schedule_start: Instant,
    own_duration: bool,
    start: SystemTime,
    mlocked: bool,
    dma_latency_us: Option<i32>,
    runtime: Option<Runtime>,
}

impl<'p> Running<'p> {
    /// The probe has started: its setup's warnings (after what `--explain` found before it)
    /// are told, and the observer learns the start.
    fn new(
        plan: &'p Plan,
        wires: Wires,
        mut explainer: Option<explain::Explainer>,
        exam: Option<Examination>,
        started: Started,
        early: Vec<Warning>,
        observer: &mut dyn Observer,
    ) -> Running<'p> {
        let Started {
            slots,
            mut warnings,
            dma_latency_us,
            mlocked,
            start,
            schedule_start,
            own_duration,
            runtime,
            stages,
        } = started;
        warnings.splice(0..0, early);
        warnings.iter().for_each(|w| observer.warning(w));
        observer.schedule_start(start);
        observer.started(&slots, dma_latency_us);
        if let Some(x) = explainer.as_mut() {
            x.slots(slots.iter().map(|s| (s.cpu, s.tid)).collect(), dma_latency_us);
        }
        let n = wires.lives.len();
        // A noise run keeps a series of its own: its cells are read only for an interval log
        // (its gaps' interval histograms).
        let keep_series =
            !plan.probe.simulated() && (plan.probe.kind() != crate::result::Kind::Noise || plan.hlog.is_some());
        Running {
            plan,
            wires,
            cursors: vec![Cursor::default(); n],
            explainer,
            exam,
            doctor: None,
            warnings,
            statuses: slots,
            stages,
            series: (0..n).map(|_| keep_series.then(SeriesRecorder::new)).collect(),
            readings: Readings::default(),
            keep_series,
            started: Instant::now(),
            schedule_start,
            own_duration,
            start,
            mlocked,
            dma_latency_us,
            runtime,
        }
    }

    fn snapshots(&self) -> Vec<LiveSnapshot> {
        snapshots(&self.wires.lives, &self.wires.works, &self.stages)
    }

    fn drain(&mut self, observer: &mut dyn Observer, upto: Option<&[u64]>) {
        let w = &self.wires;
        drain_rings_upto(&w.rings, &mut self.cursors, observer, self.explainer.as_mut(), &w.lives, upto);
    }

    /// Reads, tells and checks until the run should end, and says why.
    fn measure(
        &mut self,
        probe: &mut dyn crate::probes::Probe,
        observer: &mut dyn Observer,
        signals: &Signals,
    ) -> EndReason {
        let plan = self.plan;
        let mut next_refresh = self.started + plan.refresh;
        let mut next_checkpoint = plan.checkpoint.map(|c| self.started + c);
        loop {
            let now = Instant::now();
            // A probe whose slots fill while it runs (threads that `rtlab watch` finds) says who they are.
            if let Some(s) = probe.statuses() {
                self.statuses = s;
            }
            if probe.finished() {
                // A -b hit is told by the slots' break_hit below; `stop` alone may be cyclictest's
                // -l reached by the first thread.
                return EndReason::Loops;
            }
            if signals.stop.load(Relaxed) {
                return EndReason::Signal;
            }
            if plan.duration.is_some_and(|d| now >= self.schedule_start + d) && !self.own_duration {
                return EndReason::Duration;
            }
            if signals.status.swap(false, Relaxed) {
                observer.status_requested(&self.statuses, &self.snapshots(), now - self.started);
            }
            self.drain(observer, None);
            if self.explainer.as_ref().is_some_and(|x| x.hardware_stop().is_some()) {
                // rtla hwnoise's threshold, crossed by hardware noise once its gap was attributed
                // (the caller stops the probe).
                return EndReason::Breaktrace;
            }
            if self.exam.as_ref().is_some_and(|e| now >= e.started() + crate::doctor::SAMPLE) {
                self.doctor = self
                    .exam
                    .take()
                    .map(|e| examined(e.finish(), plan.probe.simulated(), observer, &mut self.warnings));
            }
            if self.keep_series {
                let cells = Cells { lives: &self.wires.lives, works: &self.wires.works, stages: &self.stages };
                self.readings.due(now - self.started, &cells, &mut self.series, observer);
            }
            if let (Some(at), Some(every)) = (next_checkpoint, plan.checkpoint) {
                if now >= at {
                    self.checkpoint(observer);
                    next_checkpoint = Some(at + every);
                }
            }
            if now >= next_refresh {
                observer.tick(&self.statuses, &self.snapshots(), now - self.started);
                next_refresh = (next_refresh + plan.refresh).max(now);
            }
            let mut wake = (now + POLL).min(next_refresh);
            if self.keep_series {
                wake = wake.min(self.started + self.readings.next());
            }
            if let (Some(d), false) = (plan.duration, self.own_duration) {
                wake = wake.min(self.schedule_start + d);
            }
            std::thread::sleep(wake.saturating_duration_since(Instant::now()));
        }
    }

    /// Tells the observer a checkpoint of the figures published so far.
    fn checkpoint(&mut self, observer: &mut dyn Observer) {
        // A probe preempted in the middle of publishing (by a load above it) makes its
        // figures unreadable for a while: this checkpoint is skipped, the next one comes.
        let Some(summaries) = self.wires.lives.iter().map(|l| l.checkpoint()).collect::<Option<Vec<Summary>>>() else {
            return;
        };
        // The observer gets every sample the checkpoint holds, and none after it, before the
        // checkpoint itself: its window maxima and the checkpoint's figures are of one instant.
        let upto: Vec<u64> = summaries.iter().map(|s| s.cycles).collect();
        self.drain(observer, Some(&upto));
        let partial = Output {
            threads: checkpoint_slots(&self.plan.probe, &self.statuses, summaries, &self.wires.works),
            start: self.start,
            end: SystemTime::now(),
            end_reason: EndReason::Checkpoint,
            mlocked: self.mlocked,
            dma_latency_held: self.dma_latency_us,
            warnings: self.warnings.clone(),
            break_hit: None,
            tracemark_written: false,
            failure: None,
            runtime: self.runtime.clone(),
            runtime_loads: Vec::new(),
            cyclictest_compat: false,
            doctor: self.doctor.clone(),
            explanations: Vec::new(),
            explain: None,
            noise_sources: Vec::new(),
            causes: self.explainer.as_ref().map(|x| x.causes()).unwrap_or_default(),
            watch: None,
            rt_app: None,
            usage: None,
            series: self.series.iter().map(|r| r.as_ref().map(|r| r.series().clone())).collect(),
        };
        observer.checkpoint(&partial);
    }

    /// The threads' series at the end: read one last time; a simulated thread's, which it read
    /// on its virtual clock, taken from it and told to `observer` interval by interval; none for
    /// noise, which keeps its own.
    fn series_of(&mut self, threads: &mut [ThreadOutcome], observer: &mut dyn Observer) -> Vec<Option<LatencySeries>> {
        if self.keep_series {
            let cells = Cells { lives: &self.wires.lives, works: &self.wires.works, stages: &self.stages };
            self.readings.last(self.started.elapsed(), &cells, &mut self.series, observer);
        }
        if self.plan.probe.kind() == crate::result::Kind::Noise {
            Vec::new()
        } else if self.keep_series {
            self.series.drain(..).map(|r| r.map(SeriesRecorder::finish)).collect()
        } else {
            // A simulated thread read its own, on its virtual clock: told now, interval by interval.
            let own: Vec<Option<LatencySeries>> = threads.iter_mut().map(|t| t.series.take()).collect();
            for (slot, s) in own.iter().enumerate() {
                s.iter().flat_map(|s| s.readings()).for_each(|r| observer.interval(slot, None, &r));
            }
            own
        }
    }

    /// The run's output once the probe is joined (`finished`): the last samples drained, the
    /// explanations done, and why it ended.
    fn finish(
        mut self,
        finished: Finished,
        polled: EndReason,
        explain_summary: Option<crate::trace::ExplainSummary>,
        observer: &mut dyn Observer,
    ) -> Output {
        let Finished {
            slots: mut threads,
            warnings: late,
            break_hit,
            tracemark_written,
            failure,
            end_reason: told,
            runtime,
            loads,
            watch,
            rt_app,
            explanations: own_explanations,
            explain: own_explain,
        } = finished;
        // A run shorter than the sample: its findings cover the run.
        if let Some(e) = self.exam.take() {
            self.doctor = Some(examined(e.finish(), self.plan.probe.simulated(), observer, &mut self.warnings));
        }
        late.iter().for_each(|w| observer.warning(w));
        self.warnings.extend(late);
        let end = SystemTime::now();
        self.drain(observer, None);
        let causes = self.explainer.as_ref().map(|x| x.causes()).unwrap_or_default();
        if let Some(x) = self.explainer.as_mut() {
            x.settle();
        }
        let break_hit = break_hit.or(self.explainer.as_ref().and_then(|x| x.hardware_stop()));
        let (explanations, explain, noise_sources) = match self.explainer.take() {
            Some(x) => {
                let (done, summary, sources) = x.finish();
                (done, Some(summary), sources)
            }
            None => (own_explanations, explain_summary.or(own_explain), Vec::new()),
        };
        for (t, c) in threads.iter_mut().zip(&self.cursors) {
            t.samples_lost = c.lost;
        }
        let series = self.series_of(&mut threads, observer);
        observer.finished(&self.statuses, &self.snapshots());
        let end_reason = match (failure.is_some(), break_hit.is_some(), polled) {
            (true, _, _) => EndReason::Failed,
            (false, true, _) => EndReason::Breaktrace,
            (false, false, EndReason::Loops) => told.unwrap_or(EndReason::Loops),
            (false, false, polled) => polled,
        };
        Output {
            threads,
            start: self.start,
            end,
            end_reason,
            mlocked: self.mlocked,
            dma_latency_held: self.dma_latency_us,
            warnings: self.warnings,
            break_hit,
            tracemark_written,
            failure,
            runtime: runtime.or(self.runtime),
            runtime_loads: loads,
            cyclictest_compat: self.plan.os().is_some_and(|o| o.cyclictest_compat),
            doctor: self.doctor,
            explanations,
            explain,
            noise_sources,
            causes,
            watch,
            rt_app,
            series,
            usage: crate::rt::process::usage_self().ok(),
        }
    }
}

/// When the series' readings are due: one at the end of each whole second since the start,
/// none twice; a loop held up for seconds reads once, into the second it reads in.
#[derive(Debug, Default)]
struct Readings {
    /// Whole seconds read so far.
    done: i64,
    /// Per slot and stage, the readings of a watched thread's stage cells (for the observers).
    stages: std::collections::BTreeMap<(usize, &'static str), SeriesRecorder>,
}

/// The cells a reading reads: every slot's latency cells, and where its stages are published
/// (a working task's cells, or `--stages`' own).
struct Cells<'a> {
    lives: &'a [Arc<Live>],
    works: &'a [Option<Arc<WorkLive>>],
    stages: &'a [Option<Arc<WorkLive>>],
}

impl Readings {
    /// The time since the start of the next reading.
    fn next(&self) -> Duration {
        Duration::from_nanos(((self.done + 1) * INTERVAL_NS) as u64)
    }

    /// Reads every slot's live cells into `series` if a whole second has passed since the
    /// last reading (`elapsed` since the start). A slot whose probe is caught mid-sample for
    /// longer than a checkpoint waits keeps its samples for the next reading.
    fn due(
        &mut self,
        elapsed: Duration,
        cells: &Cells<'_>,
        series: &mut [Option<SeriesRecorder>],
        observer: &mut dyn Observer,
    ) {
        let whole = i64::try_from(elapsed.as_nanos()).unwrap_or(i64::MAX) / INTERVAL_NS;
        if whole <= self.done {
            return;
        }
        self.done = whole;
        self.read(cells, series, whole * INTERVAL_NS, observer);
    }

    /// The last reading, once every sample is in the live cells (`elapsed` since the start).
    /// What the run recorded while it stopped, after the last whole second's reading, belongs
    /// to the interval that reading opened, never to one of its own.
    fn last(
        &mut self,
        elapsed: Duration,
        cells: &Cells<'_>,
        series: &mut [Option<SeriesRecorder>],
        observer: &mut dyn Observer,
    ) {
        let elapsed = i64::try_from(elapsed.as_nanos()).unwrap_or(i64::MAX);
        self.read(cells, series, elapsed.min(self.next().as_nanos() as i64), observer);
        series.iter_mut().flatten().for_each(|r| r.end_at(elapsed));
    }

    /// Reads every slot's live cells into its series, and its stages' cells, as of `at_ns`
    /// since the start, and tells the observer what each added.
    fn read(
        &mut self,
        cells: &Cells<'_>,
        series: &mut [Option<SeriesRecorder>],
        at_ns: i64,
        observer: &mut dyn Observer,
    ) {
        for (slot, (r, l)) in series.iter_mut().zip(cells.lives).enumerate() {
            if let (Some(r), Some(c)) = (r.as_mut(), l.checkpoint()) {
                observer.interval(slot, None, &r.read(&c, at_ns));
            }
            let work = cells.stages.get(slot).cloned().flatten().or_else(|| cells.works.get(slot).cloned().flatten());
            let Some(st) = work.as_deref().and_then(|w| w.stages.as_ref()) else { continue };
            for (name, live) in [("irq", &st.irq), ("thread", &st.thread), ("user", &st.user)] {
                if let Some(c) = live.checkpoint().filter(|c| c.cycles > 0) {
                    let r = self.stages.entry((slot, name)).or_default();
                    observer.interval(slot, Some(name), &r.read(&c, at_ns));
                }
            }
        }
    }
}

/// Starts `--explain`'s recording for `plan`, or says (in `warnings` and in the summary) why
/// it cannot: the run goes on without.
fn start_explainer(
    plan: &Plan,
    warnings: &mut Vec<Warning>,
) -> (Option<explain::Explainer>, Option<crate::trace::ExplainSummary>) {
    let Some(x) = plan.explain else { return (None, None) };
    // A watch explains its own periods, from the events it already reads.
    if matches!(plan.probe, ProbeSpec::Watch(_)) {
        return (None, None);
    }
    let slots = plan.probe.slots();
    let why = if plan.probe.simulated() {
        Some("a simulated probe has no kernel events".to_string())
    } else if plan.os().is_none() && !matches!(plan.probe, ProbeSpec::Noise(_) | ProbeSpec::RtApp(_)) {
        Some("a runtime's task is not a kernel thread of its own; explain OS threads (--runtime os)".to_string())
    } else if plan.os().is_some_and(|o| o.clock == crate::measure::probe::ClockKind::Realtime) {
        Some(
            "the trace's clock is CLOCK_MONOTONIC and the probe sleeps on CLOCK_REALTIME; drop --clock realtime"
                .to_string(),
        )
    } else if slots.iter().any(|s| s.cpu.is_none()) {
        Some("a thread that is not pinned may wake on any CPU; pin the threads (-a)".to_string())
    } else {
        None
    };
    let started = match why {
        Some(w) => Err(w),
        None => {
            let cpus = CpuSet::from_cpus(slots.iter().filter_map(|s| s.cpu));
            // The trace reader goes where the reporting thread is pinned, else off the measured CPUs.
            let reader = plan
                .probe
                .main_affinity()
                .cloned()
                .unwrap_or_else(|| crate::rt::affinity::online_cpus().difference(&cpus));
            let shared = if reader.is_empty() {
                cpus.clone()
            } else {
                CpuSet::from_cpus(reader.cpus().iter().copied().filter(|c| cpus.contains(*c)))
            };
            if !shared.is_empty() {
                warnings.push(Warning::TraceReaderShared { cpus: shared.to_string() });
            }
            explain::Explainer::start(x, &cpus, (!reader.is_empty()).then_some(&reader))
        }
    };
    match started {
        Ok(e) => (Some(e), None),
        Err(why) => {
            warnings.push(Warning::ExplainUnavailable { why: why.clone() });
            (None, Some(explain::unavailable(x, why)))
        }
    }
}

/// The doctor's report, once its alarms (what disturbs the measured CPUs now) are told to
/// `observer` and kept in `warnings`; a simulated probe's samples do not come from this
/// machine, so its run records the findings without alarms.
fn examined(
    report: DoctorReport,
    simulated: bool,
    observer: &mut dyn Observer,
    warnings: &mut Vec<Warning>,
) -> DoctorReport {
    for c in report.alarms().filter(|_| !simulated) {
        let w = Warning::MachineSetup { check: c.id.clone(), detail: c.alarm_sentence() };
        observer.warning(&w);
        warnings.push(w);
    }
    report
}

/// Every slot's live figures, a working task's response and misses included, and a
/// measuring thread's stages (`stages`, one per slot or empty).
fn snapshots(
    lives: &[Arc<Live>],
    works: &[Option<Arc<WorkLive>>],
    stages: &[Option<Arc<WorkLive>>],
) -> Vec<LiveSnapshot> {
    lives
        .iter()
        .zip(works)
        .enumerate()
        .map(|(i, (l, w))| {
            let mut s = l.snapshot();
            if let Some(w) = w {
                w.decorate(&mut s);
            }
            if let Some(Some(c)) = stages.get(i) {
                s.stages = c.stages.as_ref().map(crate::measure::work::StageCells::snapshot);
            }
            s
        })
        .collect()
}

/// The slots of a checkpoint: their plan and setup, with the statistics published so far.
fn checkpoint_slots(
    probe: &ProbeSpec,
    statuses: &[ThreadStatus],
    summaries: Vec<Summary>,
    works: &[Option<Arc<WorkLive>>],
) -> Vec<ThreadOutcome> {
    let os = matches!(probe, ProbeSpec::Os(_));
    let watch = matches!(probe, ProbeSpec::Watch(_));
    statuses
        .iter()
        .zip(summaries)
        .zip(probe.slots())
        .map(|((s, summary), mut tp)| {
            // A watched thread's slot is named after the thread it found (`comm:tid`).
            if watch {
                tp.name = s.watched_comm().map(String::from);
                tp.interval_ns = s.interval_ns;
            }
            ThreadOutcome {
                series: None,
                cpu_ns: None,
                work: works.get(tp.index).and_then(|w| w.as_ref()).and_then(|w| w.checkpoint()),
                sched: (os || watch).then_some(s.sched),
                cpus_allowed: os.then(|| tp.cpu.map(|c| CpuSet::from_cpus([c])).unwrap_or_default()),
                plan: tp,
                last_cpu: None,
                timer_slack_ns: None,
                summary,
                outcome: crate::measure::probe::LoopOutcome {
                    iterations: 0,
                    drift_ns: 0,
                    break_hit: None,
                    start_ns: 0,
                },
                drift_ns: None,
                tid: s.tid,
                samples_lost: 0,
                warnings: Vec::new(),
                noise: None,
                watch: None,
            }
        })
        .collect()
}

/// Hands the observer (and the explainer) the samples the rings hold: all of them, or for
/// each slot only those before the cycle `upto[slot]`.
fn drain_rings_upto(
    rings: &[Option<Arc<SampleRing>>],
    cursors: &mut [Cursor],
    observer: &mut dyn Observer,
    mut explainer: Option<&mut explain::Explainer>,
    lives: &[Arc<Live>],
    upto: Option<&[u64]>,
) {
    for (i, (ring, cursor)) in rings.iter().zip(cursors.iter_mut()).enumerate() {
        if let Some(r) = ring {
            let mut batch = Vec::new();
            let limit = upto.and_then(|u| u.get(i).copied()).unwrap_or(u64::MAX);
            r.drain_upto(cursor, limit, |s| batch.push(s));
            if !batch.is_empty() {
                if let Some(x) = explainer.as_deref_mut() {
                    x.samples(i, &batch, lives[i].start_ns.load(Relaxed));
                }
                observer.samples(i, &batch);
            }
        }
    }
    if let Some(x) = explainer {
        x.poll(false);
    }
}

/// A measurement with everything around it: the loads, the `--samples` file, the `--json`
/// checkpoints (to `checkpoints`), and the RunResult. `observer` receives the events too.
pub fn measure(
    plan: &Plan,
    provenance: Provenance,
    checkpoints: Option<&std::path::Path>,
    observer: &mut dyn Observer,
    signals: &Signals,
) -> Result<(RunResult, Option<String>), SessionError> {
    let simulated = plan.probe.simulated();
    let base = base_record(plan, provenance);
    // Simulated probes get no real load: their samples would not depend on it.
    let specs = if simulated { Vec::new() } else { plan.loads.clone() };
    let mut loads = observers::Loads::new(specs, Arc::clone(&signals.stop));
    let clock = match plan.os() {
        Some(o) if o.clock == crate::measure::probe::ClockKind::Realtime => "realtime",
        _ => "monotonic",
    };
    let mut writer = plan.samples.as_ref().map(|p| observers::SamplesWriter::new(p, clock, &plan.probe.slots()));
    let mut hlog = plan.hlog.clone().map(|h| observers::HlogWriter::new(h, plan.probe.kind()));
    let mut ckpt = match (checkpoints, plan.checkpoint) {
        (Some(path), Some(_)) => Some(observers::Checkpoints::new(path.to_path_buf(), base.clone())),
        _ => None,
    };
    let out = {
        let mut all: Vec<&mut dyn Observer> = vec![observer, &mut loads];
        if let Some(w) = writer.as_mut() {
            all.push(w);
        }
        if let Some(c) = ckpt.as_mut() {
            all.push(c);
        }
        if let Some(h) = hlog.as_mut() {
            all.push(h);
        }
        run(plan, &mut Fanout(all), signals)
    };
    loads.stopping();
    if let Some(e) = loads.error.take() {
        return Err(SessionError::Load(e));
    }
    let out = out?;
    let mut result = RunResult::build(out.record(base));
    result.loads.extend(out.runtime_loads.iter().cloned());
    result.attach_loads(std::mem::take(&mut loads.results));
    if let (Some(Err(why)), Some(h)) = (hlog.map(observers::HlogWriter::finish), &plan.hlog) {
        let w = Warning::OutputFailed { output: format!("--hlog {}", h.path.display()), why };
        result.warnings.push(w.into());
    }
    if let (Some(w), Some(path)) = (writer, &plan.samples) {
        // One count per slot of the header (a watch's slots may not all have found a thread).
        let mut lost = vec![0u64; plan.probe.slots().len().max(out.threads.len())];
        for t in &out.threads {
            if let Some(l) = lost.get_mut(t.plan.index) {
                *l = t.samples_lost;
            }
        }
        // A full disk costs the samples file, never the --json result or the summary.
        if let Err(why) = w.finish(lost.clone()) {
            let w = Warning::OutputFailed { output: format!("--samples {}", path.display()), why };
            result.warnings.push(w.into());
        }
        for t in result.threads.iter_mut() {
            t.samples_lost = lost.get(t.thread).copied();
        }
        let total: u64 = lost.iter().sum();
        if total > 0 {
            let w = Warning::SamplesLost { count: total, file: path.display().to_string() };
            result.warnings.push(w.into());
        }
    }
    Ok((result, out.failure))
}
