//! What a measurement is asked to do: the probe, its length, what to record and what runs
//! around it.

use crate::doctor::Sysroot;
use crate::load::LoadSpec;
use crate::measure::histogram::Layout;
use crate::probes::{os_thread, ProbeSpec};
use crate::result::Config;
use crate::rt::affinity::CpuSet;
use crate::rt::sched::Policy;
use std::path::PathBuf;
use std::time::Duration;

/// How often `rtlab run`'s live display is refreshed.
pub const REFRESH: Duration = Duration::from_secs(1);
/// Samples a slot's ring holds for the `--samples` writer.
pub const SAMPLE_RING: usize = 1 << 16;

/// Everything a measurement needs: the probe, how long, what to record, and around it.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The probe.
    pub probe: ProbeSpec,
    /// Samples per slot (`None`: until stopped).
    pub loops: Option<u64>,
    /// Run length (`None`: until stopped).
    pub duration: Option<Duration>,
    /// Histogram layout.
    pub layout: Layout,
    /// The verdict's threshold: count samples above this (ns).
    pub max_latency_ns: Option<i64>,
    /// The verdict's response-time threshold (ns): `--max-response`.
    pub max_response_ns: Option<i64>,
    /// The verdict's deadline-miss limit: `--max-misses N` or `M/K`.
    pub max_misses: Option<crate::result::verdict::MissLimit>,
    /// Any downgrade is an error.
    pub strict: bool,
    /// How often the observer's `tick` is called.
    pub refresh: Duration,
    /// Hand the observer a checkpoint this often.
    pub checkpoint: Option<Duration>,
    /// Stream every sample through a ring of this capacity to the observer (`--samples`, `-v`).
    pub sample_ring: Option<usize>,
    /// Background loads outside the probe.
    pub loads: Vec<LoadSpec>,
    /// `--samples` target.
    pub samples: Option<PathBuf>,
    /// `--hlog`: the interval log and its interval.
    pub hlog: Option<super::observers::HlogPlan>,
    /// The configuration to record (OS threads; `None` for runtime probes).
    pub config: Option<Config>,
    /// Examine the machine with the doctor over the run's first second and record the findings
    /// (`None`: do not; the root is `/` except in tests).
    pub doctor: Option<Sysroot>,
    /// `--explain`: record the measured CPUs' events and explain late samples.
    pub explain: Option<super::explain::ExplainPlan>,
    /// Bounds (ns) at or below which the probes count samples exactly, whatever the histogram's
    /// buckets (`rtlab monitor`'s `le` bounds and exceedance thresholds).
    pub cuts_ns: Vec<u64>,
}

impl Plan {
    /// A plan for `probe` with the defaults of `rtlab run`: no limit, no threshold, no files.
    pub fn new(probe: ProbeSpec, layout: Layout) -> Plan {
        Plan {
            probe,
            loops: None,
            duration: None,
            layout,
            max_latency_ns: None,
            max_response_ns: None,
            max_misses: None,
            strict: false,
            refresh: REFRESH,
            checkpoint: None,
            sample_ring: None,
            loads: Vec::new(),
            samples: None,
            hlog: None,
            config: None,
            doctor: Some(Sysroot::default()),
            explain: None,
            cuts_ns: Vec::new(),
        }
    }

    /// The OS-thread plan, if the probe is OS threads.
    pub fn os(&self) -> Option<&os_thread::Plan> {
        match &self.probe {
            ProbeSpec::Os(p) => Some(p),
            _ => None,
        }
    }

    /// The CPUs the probe measures: those its slots are pinned to, and every online CPU of the
    /// examined machine when a slot is free to move (a runtime's task, an unpinned thread).
    pub fn measured_cpus(&self, root: &Sysroot) -> CpuSet {
        let slots = self.probe.slots();
        let pinned: Vec<usize> = slots.iter().filter_map(|s| s.cpu).collect();
        if pinned.len() == slots.len() && !pinned.is_empty() {
            return CpuSet::from_cpus(pinned);
        }
        crate::doctor::online_cpus(root).unwrap_or_else(|_| crate::rt::affinity::online_cpus())
    }

    /// Where a noise run's own threads run (`--mainaffinity`; `None`: anywhere, or not a noise run).
    pub fn noise_main_affinity(&self) -> Option<&crate::rt::affinity::CpuSet> {
        let ProbeSpec::Noise(n) = &self.probe else { return None };
        n.main_affinity.as_ref()
    }

    /// A noise run's settings as the result records them (`None` for other probes).
    pub fn noise_config(&self) -> Option<crate::result::NoiseConfig> {
        let ProbeSpec::Noise(n) = &self.probe else { return None };
        let t0 = n.threads.first();
        Some(crate::result::NoiseConfig {
            counter: n.counter.name().into(),
            counter_why: n.counter_why.clone(),
            threshold_ns: n.threshold_ns,
            runtime_ns: n.runtime_ns,
            period_ns: n.period_ns,
            warmup_ns: n.warmup.as_nanos().min(i64::MAX as u128) as i64,
            policy: t0.map_or(Policy::Other, |t| t.sched.policy),
            priority: t0.map_or(0, |t| t.sched.priority),
            cpus: CpuSet::from_cpus(n.threads.iter().filter_map(|t| t.cpu)).to_string(),
            duration_s: self.duration.map(|d| d.as_secs_f64()),
            mlockall: n.mlockall,
            mlockall_obtained: false,
            attribution_threshold_ns: self.explain.and_then(|x| x.threshold_ns),
            max_noise_ns: self.max_latency_ns,
            degraded: false,
            edge_us: n.edge_ns / 1000,
        })
    }

    /// The verdict's threshold: `--max-latency`, else `--breaktrace`.
    pub fn threshold_ns(&self) -> Option<i64> {
        self.max_latency_ns.or(self.os().and_then(|o| o.breaktrace_ns))
    }
}

/// The configuration an OS-thread plan describes, as asked (the `*_obtained`/`held` fields are
/// filled from the run; warm-up is the caller's to fill).
pub fn os_config(os: &os_thread::Plan, plan: &Plan) -> Config {
    let t0 = os.threads.first();
    let sched = t0.map(|t| t.sched);
    let pinned = CpuSet::from_cpus(os.threads.iter().filter_map(|t| t.cpu));
    Config {
        method: os.method,
        clock: os.clock,
        threads: os.threads.len(),
        interval_ns: t0.map_or(0, |t| t.interval_ns),
        distance_ns: os.threads.get(1).zip(t0).map_or(0, |(b, a)| b.interval_ns - a.interval_ns),
        loops: plan.loops,
        duration_s: plan.duration.map(|d| d.as_secs_f64()),
        warmup_cycles: None,
        warmup_ns: None,
        policy: sched.map_or(Policy::Other, |s| s.policy),
        priority: sched.map_or(0, |s| s.priority),
        priospread: os.threads.get(1).zip(t0).is_some_and(|(b, a)| b.sched.priority < a.sched.priority),
        deadline: sched.as_ref().and_then(crate::result::build::deadline_of),
        affinity: (!pinned.is_empty()).then(|| pinned.to_string()),
        main_affinity: os.main_affinity.as_ref().map(|c| c.to_string()),
        mlockall: os.mlockall,
        mlockall_obtained: false,
        dma_latency_us: os.dma_latency_us,
        dma_latency_held: false,
        timer_slack_ns: 1,
        bucket_ns: plan.layout.bucket_ns,
        range_ns: plan.layout.range_ns,
        max_latency_ns: plan.max_latency_ns,
        breaktrace_ns: os.breaktrace_ns,
        tracemark: os.tracemark,
        strict: plan.strict,
        degraded: false,
    }
}
