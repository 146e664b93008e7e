//! The worst case to expect (`--predict DURATION`): the largest latency a run of DURATION would
//! show, predicted from a result's series of per-interval maxima with extreme value theory
//! (`measure/evt.rs`), or why the run does not allow one.

use super::{RunResult, Stats};
use crate::measure::evt::{self, Forecast};
use crate::measure::series::LatencySeries;
use crate::units::Unit;
use serde::{Deserialize, Serialize};

/// The method, in words, as the result names it.
pub const METHOD: &str =
    "block maxima, GEV fitted by probability-weighted moments, parametric bootstrap predictive interval";

/// A prediction of the largest latency over a horizon, or why none was made.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Prediction {
    /// The horizon (ns): `--predict`.
    pub horizon_ns: i64,
    /// How the prediction was made.
    pub method: String,
    /// The interval's confidence (two-sided): 0.90, so the maximum stays below its upper end
    /// with 95 % probability.
    pub confidence: f64,
    /// The block length used (ns; when refused, the longest tried).
    pub block_ns: i64,
    /// Blocks fitted (when refused, the longest blocks' count).
    pub blocks: usize,
    /// The prediction; `None` when the run does not allow one (`refused` says why).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forecast: Option<Expected>,
    /// Why no prediction was made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
}

/// The maximum to expect over the horizon, the fit it comes from, and the checks it passed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Expected {
    /// The maximum to expect (ns): the predictive distribution's median.
    pub expected_ns: i64,
    /// The interval's lower end (ns).
    pub low_ns: i64,
    /// The interval's upper end (ns).
    pub high_ns: i64,
    /// The fitted GEV's location (ns).
    pub location_ns: f64,
    /// Its scale (ns).
    pub scale_ns: f64,
    /// Its shape ξ: above 0 a heavy tail, 0 Gumbel's, below 0 a bounded one.
    pub shape: f64,
    /// The Anderson–Darling p-value of the fit (parametric bootstrap).
    pub fit_p: f64,
    /// Mann–Kendall's p-value of no trend in the intervals' maxima.
    pub trend_p: f64,
    /// The block maxima's lag-1 rank autocorrelation.
    pub lag1: f64,
    /// The return level: the fit's median maximum over the horizon (ns), and its interval.
    pub level_ns: [i64; 3],
    /// How long a run would need for the return level's interval to be within ±10 % of it
    /// (ns); `None` when this one already is.
    pub run_for_ns: Option<i64>,
}

/// Gives each thread's statistics, and all threads' (but `control`'s), a prediction over
/// `horizon_ns` from their series; all threads' from the largest of their maxima interval by
/// interval, when their series are alike. Statistics without a series get none; a result with
/// no series at all gets all's refusal ([`NO_SERIES`]).
pub fn attach(r: &mut RunResult, horizon_ns: i64) {
    attach_last(r, horizon_ns, i64::MAX);
}

/// [`attach`] from the whole intervals of each series' last `last_ns` only (a monitor's
/// window: its result's series are the whole run's).
pub fn attach_last(r: &mut RunResult, horizon_ns: i64, last_ns: i64) {
    let control = r.runtime.as_ref().and_then(|rt| rt.control.as_ref()).map(|c| c.thread);
    let mut subjects: Vec<&LatencySeries> = Vec::new();
    for t in r.threads.iter_mut() {
        if let Some(s) = t.series.as_ref() {
            t.stats.prediction = Some(predict(&maxima(s, last_ns), s.interval_ns, horizon_ns));
            if Some(t.thread) != control {
                subjects.push(s);
            }
        }
    }
    let alike = subjects
        .first()
        .filter(|f| subjects.iter().all(|s| s.interval_ns == f.interval_ns && s.max_ns.len() == f.max_ns.len()));
    if let Some(first) = alike {
        let mut all = (*first).clone();
        for s in &subjects[1..] {
            for (m, x) in all.max_ns.iter_mut().zip(&s.max_ns) {
                *m = (*m).max(*x);
            }
        }
        r.all.stats.prediction = Some(predict(&maxima(&all, last_ns), all.interval_ns, horizon_ns));
    } else if subjects.is_empty() {
        r.all.stats.prediction = Some(Prediction { refused: Some(NO_SERIES.into()), ..unmade(horizon_ns, 0, 0) });
    }
}

/// Why a result without series gets no prediction.
pub const NO_SERIES: &str =
    "this result holds no maxima per second to predict from (a file of cyclictest's, or rtlab's before series)";

/// The maxima (ns) of a series' whole intervals in its last `last_ns`, in time order: intervals
/// without samples and a last interval shorter than the others are left out.
fn maxima(s: &LatencySeries, last_ns: i64) -> Vec<f64> {
    let last = usize::try_from(last_ns / s.interval_ns.max(1)).unwrap_or(usize::MAX);
    let whole = usize::try_from(s.span_ns / s.interval_ns.max(1)).unwrap_or(0).min(s.max_ns.len());
    s.max_ns[whole.saturating_sub(last)..whole].iter().flatten().map(|m| *m as f64).collect()
}

/// A prediction over `horizon_ns` from `blocks` blocks of `block_ns`, its outcome not yet set.
fn unmade(horizon_ns: i64, block_ns: i64, blocks: usize) -> Prediction {
    Prediction {
        horizon_ns,
        method: METHOD.into(),
        confidence: evt::CONFIDENCE,
        block_ns,
        blocks,
        forecast: None,
        refused: None,
    }
}

/// The prediction from `maxima` of intervals of `interval_ns`.
fn predict(maxima: &[f64], interval_ns: i64, horizon_ns: i64) -> Prediction {
    let horizon = horizon_ns as f64 / interval_ns as f64;
    match evt::predict(maxima, horizon, evt::PRECISION) {
        Ok(f) => Prediction {
            forecast: Some(expected(&f, interval_ns)),
            ..unmade(horizon_ns, interval_ns * f.per_block as i64, f.blocks)
        },
        Err(why) => {
            let longest = evt::block_lengths(maxima.len()).last().unwrap_or(1);
            Prediction {
                refused: Some(why.to_string()),
                ..unmade(horizon_ns, interval_ns * longest as i64, maxima.len() / longest)
            }
        }
    }
}

/// A forecast in the result's terms.
fn expected(f: &Forecast, interval_ns: i64) -> Expected {
    let ns = |x: f64| x.round().clamp(0.0, i64::MAX as f64) as i64;
    let block_ns = interval_ns as f64 * f.per_block as f64;
    Expected {
        expected_ns: ns(f.expected),
        low_ns: ns(f.interval.0),
        high_ns: ns(f.interval.1),
        location_ns: f.fit.location,
        scale_ns: f.fit.scale,
        shape: f.fit.shape,
        fit_p: f.gof.1,
        trend_p: f.trend_p,
        lag1: f.lag1,
        level_ns: [ns(f.level.0), ns(f.level.1), ns(f.level.2)],
        run_for_ns: f.blocks_needed.map(|b| ns(b * block_ns)),
    }
}

/// The summary's line: `worst case to expect in 24 h: 1234.0 µs [900.0, 2100.0] (90 %; GEV
/// shape 0.12 over 180 blocks of 1 s; to know it within ±10 %: run about 3.0 h, ±5 %: run about
/// 12.0 h)`, or why none is given; `None` without a prediction.
pub fn describe(stats: &Stats, u: Unit) -> Option<String> {
    let p = stats.prediction.as_ref()?;
    let horizon = crate::units::horizon(p.horizon_ns);
    let Some(f) = &p.forecast else {
        return Some(format!("worst case to expect in {horizon}: none given: {}", p.refused.as_deref().unwrap_or("")));
    };
    // The return level's interval narrows as 1/√blocks: the run each precision needs.
    let [level, lo, hi] = f.level_ns.map(|v| v as f64);
    let half = (hi - lo) / 2.0 / level.max(1.0);
    let measured_s = p.blocks as f64 * p.block_ns as f64 / 1e9;
    let need = |pct: f64| match half / (pct / 100.0) {
        r if r <= 1.0 => format!("±{pct:.0} %: known"),
        r => format!("±{pct:.0} %: run about {}", crate::units::span(measured_s * r * r)),
    };
    let run = format!("to know it within {}, {}", need(10.0), need(5.0));
    Some(format!(
        "worst case to expect in {horizon}: {} {} [{}, {}] ({:.0} %; GEV shape {:.2} over {} of {}; {run})",
        u.fmt(f.expected_ns),
        u.label(),
        u.fmt(f.low_ns),
        u.fmt(f.high_ns),
        p.confidence * 100.0,
        f.shape,
        crate::units::count(p.blocks as u64, "block"),
        crate::units::duration(p.block_ns),
    ))
}
