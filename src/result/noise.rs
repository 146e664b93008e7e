//! What a noise run (`rtlab noise`, `kind: noise`) records besides the statistics of its
//! gaps: its settings ([`NoiseConfig`]) and, per CPU, the time measured, the time lost and
//! where it went ([`NoiseFigures`]).

use crate::rt::sched::Policy;
use crate::trace::noise::NoiseSources;
use serde::{Deserialize, Serialize};

/// What a RunResult measured.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// Wakeup latency of periodic tasks (`rtlab run`, `cyclictest`, imports): a sample is a wakeup.
    #[default]
    Wakeup,
    /// OS noise seen by busy threads (`rtlab noise`): a sample is a gap in a busy loop.
    Noise,
    /// Threads of any program watched through the kernel's events (`rtlab watch`): a sample is
    /// a period, its latency the return to user space after the release.
    Watch,
}

/// How a noise run measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NoiseConfig {
    /// The busy loop's clock: `tsc` (calibrated against CLOCK_MONOTONIC) or `monotonic`
    /// (`clock_gettime`).
    pub counter: String,
    /// Why the TSC was not used, when it was not.
    pub counter_why: Option<String>,
    /// A gap of at least this is noise (ns).
    pub threshold_ns: i64,
    /// Busy part of each period (ns).
    pub runtime_ns: i64,
    /// Duty-cycle period (ns); equal to `runtime_ns` when the loop never sleeps.
    pub period_ns: i64,
    /// Pre-heat before measuring (ns): the CPU leaves its low-power states and the counter is
    /// calibrated and the loop timed over it.
    pub warmup_ns: i64,
    /// Policy asked.
    pub policy: Policy,
    /// Priority asked.
    pub priority: u32,
    /// CPUs measured.
    pub cpus: String,
    /// Run length (s), if limited.
    pub duration_s: Option<f64>,
    /// mlockall asked.
    pub mlockall: bool,
    /// mlockall obtained.
    pub mlockall_obtained: bool,
    /// Gaps of at least this were attributed from the CPUs' trace events (ns); `null`: off.
    pub attribution_threshold_ns: Option<i64>,
    /// Verdict: fail when a single noise exceeds this (ns).
    pub max_noise_ns: Option<i64>,
    /// True when something was obtained below what was asked (see warnings).
    pub degraded: bool,
    /// What `NoiseFigures::noise_us_floor` floors each gap to (µs): 1, or rtla osnoise hist's
    /// `-b` bucket.
    #[serde(default = "one")]
    pub edge_us: u64,
}

fn one() -> u64 {
    1
}

/// Noise over time: per interval since the start, the noise and the number of noises.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NoiseSeries {
    /// Interval (ns): 1 s, doubled for runs longer than an hour.
    pub interval_ns: i64,
    /// Noise per interval (ns).
    pub noise_ns: Vec<u64>,
    /// Noises per interval.
    pub count: Vec<u32>,
    /// Time the series covers from the start (ns): the last interval ends there and may be
    /// shorter than the others (0 in files written before it was recorded: full intervals).
    #[serde(default)]
    pub span_ns: i64,
}

/// One CPU's noise.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NoiseFigures {
    /// The counter's rate as calibrated (MHz; 1000 for `monotonic`).
    pub counter_mhz: f64,
    /// The loop's iteration time (ns) over the pre-heat: the smallest gap it could see.
    pub loop_ns: f64,
    /// Clock reads.
    pub iterations: u64,
    /// Time in the busy loop (ns).
    pub runtime_ns: i64,
    /// Total noise (ns): Σ of the gaps of at least the threshold.
    pub noise_ns: u64,
    /// Share of the runtime the thread had: (runtime − noise) / runtime, in percent.
    pub available_pct: f64,
    /// Noise per second of runtime (ns/s).
    pub noise_per_s_ns: f64,
    /// Noises per second of runtime.
    pub noises_per_s: f64,
    /// Σ ⌊gap / edge⌋ · edge over the noises, in µs, the edge being `NoiseConfig::edge_us`
    /// (1 µs: what oslat's average needs; rtla osnoise hist's `-b`: its buckets' lower edges).
    pub noise_us_floor: u64,
    /// Steal time of the CPU over the run (`/proc/stat`, 10 ms ticks; ns), where known.
    pub steal_ns: Option<i64>,
    /// The noise by source, when attributed from trace events.
    pub sources: Option<NoiseSources>,
    /// Noise over time.
    pub series: NoiseSeries,
    /// Crossings of rtla osnoise's stop thresholds (`-s`/`-S`; with `continue`, each one).
    #[serde(default)]
    pub stop_hits: u64,
    /// The largest noise of one duty-cycle period (ns): rtla osnoise top's Max Noise (0 in
    /// files written before it was recorded).
    #[serde(default)]
    pub max_period_noise_ns: u64,
    /// Σ over the periods of ⌊the period's noise / 1 µs⌋: rtla osnoise top's Noise, the sum of
    /// its per-period samples (0 in files written before it was recorded).
    #[serde(default)]
    pub noise_us_by_period: u64,
}

impl NoiseFigures {
    /// Fills the derived figures (% available, rates) from the measured ones and the number of
    /// `noises`.
    pub fn derive(mut self, noises: u64) -> NoiseFigures {
        let rt = self.runtime_ns.max(1) as f64;
        self.available_pct = ((self.runtime_ns as f64 - self.noise_ns as f64) * 100.0 / rt).clamp(0.0, 100.0);
        self.noise_per_s_ns = self.noise_ns as f64 * 1e9 / rt;
        self.noises_per_s = noises as f64 * 1e9 / rt;
        self
    }
}
