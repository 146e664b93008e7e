//! A run's intervals (`measure/uncertainty.rs`) from what its result holds: the threads' series
//! of per-second histograms, or, for a run too short for blocks, their histograms.

use super::{EndReason, Stats, ThreadResult};
use crate::measure::hdr;
use crate::measure::histogram::Layout;
use crate::measure::series::LatencySeries;
use crate::measure::uncertainty::{blocks_of, bootstrap, order_statistics, summed, Block, Uncertainty};
use crate::measure::uncertainty::{Bound, Method, MIN_BLOCKS};
use crate::units::Unit;
use std::collections::BTreeMap;

/// Gives each thread's statistics their intervals, and `all`'s (the threads but `control`, a
/// runtime's control thread): from the series of per-second histograms when they hold enough
/// blocks (all's: the threads' blocks summed, when their series are alike), else from the
/// histograms. Each series is read once. Nothing for a checkpoint (`end`): a run still going
/// (a monitor's status each second, `--checkpoint`'s files) is not reread whole at each one.
pub fn attach(threads: &mut [ThreadResult], all: &mut Stats, control: Option<usize>, end: EndReason) {
    if end == EndReason::Checkpoint {
        return;
    }
    let mut subject_blocks: Vec<Option<(Vec<Block>, i64)>> = Vec::new();
    for t in threads.iter_mut() {
        let blocks = layout_of(&t.stats).zip(t.series.as_ref()).and_then(|(l, s)| blocks(s, l));
        t.stats.uncertainty =
            blocks.as_ref().and_then(|(b, ns)| bootstrap(b, *ns)).or_else(|| from_histogram(&t.stats));
        if Some(t.thread) != control {
            subject_blocks.push(blocks);
        }
    }
    let alike = subject_blocks
        .into_iter()
        .collect::<Option<Vec<_>>>()
        .filter(|s| s.first().is_some_and(|(f, ns)| s.iter().all(|(b, n)| b.len() == f.len() && n == ns)));
    all.uncertainty = layout_of(all)
        .and(alike)
        .and_then(|s| {
            let block_ns = s[0].1;
            bootstrap(&summed(&s.into_iter().map(|(b, _)| b).collect::<Vec<_>>()), block_ns)
        })
        .or_else(|| from_histogram(all));
}

/// The layout of the run's histograms, which the interval histograms are read back into.
fn layout_of(stats: &Stats) -> Option<Layout> {
    let h = stats.histogram.as_ref()?;
    (stats.cycles > 0).then_some(())?;
    Layout::new(h.bucket_ns, h.range_ns).ok()
}

/// A series' intervals merged into blocks of the run's buckets, and the blocks' length; `None`
/// for a series with fewer intervals than the bootstrap needs blocks, whose intervals are then
/// not decoded at all (a run of a few seconds: each decoded interval is a histogram of up to
/// 200 KiB, allocated at the end of the run for nothing).
fn blocks(s: &LatencySeries, layout: Layout) -> Option<(Vec<Block>, i64)> {
    (s.histograms.len() >= MIN_BLOCKS).then(|| blocks_of(s.histograms.len(), intervals(s, layout), s.interval_ns))
}

/// A series' intervals, one by one, as blocks of the run's buckets: each value an interval
/// histogram holds is its bucket's largest (`hdr::of_added`), within the HdrHistogram's
/// precision, so its lowest equivalent value lies in that bucket. An interval without samples
/// (or whose text does not decode) is an empty block: it counts in the time.
fn intervals(s: &LatencySeries, layout: Layout) -> impl Iterator<Item = Block> + '_ {
    s.histograms.iter().zip(&s.max_ns).map(move |(text, max)| {
        let Some(h) = (!text.is_empty()).then(|| hdr::decode(text).ok()).flatten() else {
            return Block::default();
        };
        let mut sum: BTreeMap<u64, u64> = BTreeMap::new();
        for v in h.iter_recorded() {
            let at = h.lowest_equivalent(v.value_iterated_to());
            *sum.entry(layout.bounds(layout.index(at)).1).or_default() += v.count_at_value();
        }
        Block { buckets: sum.into_iter().collect(), max_ns: max.unwrap_or(0) }
    })
}

/// Order statistics over the histogram's buckets.
fn from_histogram(stats: &Stats) -> Option<Uncertainty> {
    let h = stats.histogram.as_ref()?;
    let max = stats.max_ns?;
    let buckets: Vec<(u64, u64)> = h.buckets.iter().map(|b| (b.hi_ns, b.count)).collect();
    Some(order_statistics(&buckets, stats.cycles, max))
}

/// The figures whose intervals a summary shows: the median, p99, p99.9 and the maximum.
pub const SHOWN: [&str; 4] = ["p50", "p99", "p99.9", "max"];

/// How the intervals were found, in words: `block bootstrap over 41 blocks of 3 s`.
pub fn method_text(x: &Uncertainty, cycles: u64) -> String {
    match x.method {
        Method::BlockBootstrap => format!(
            "block bootstrap over {} of {}",
            crate::units::count(x.blocks.unwrap_or(0) as u64, "block"),
            crate::units::duration(x.block_ns.unwrap_or(0))
        ),
        Method::OrderStatistics => format!(
            "order statistics of {} taken as independent: narrower than the truth",
            crate::units::count(cycles, "sample")
        ),
    }
}

/// Each of [`SHOWN`]'s figures with its interval in `u`, `12.0 [10.0, 15.0]` (`unbounded` for
/// an interval without an upper end, `-` where the figure or its interval is not known).
pub fn cells(stats: &Stats, u: Unit) -> Vec<String> {
    let x = stats.uncertainty.as_ref();
    let bound = |b: &Bound| format!("[{}, {}]", u.fmt(b.low_ns), b.high_ns.map_or("unbounded".into(), |h| u.fmt(h)));
    SHOWN
        .iter()
        .map(|name| {
            let (value, b) = match name.strip_prefix('p') {
                Some(k) => (stats.percentiles_ns.get(k).copied().flatten(), x.and_then(|x| x.percentiles_ns.get(k))),
                None => (stats.max_ns, x.and_then(|x| x.max_ns.as_ref())),
            };
            match (value, b) {
                (Some(v), Some(b)) => format!("{} {}", u.fmt(v), bound(b)),
                _ => "-".into(),
            }
        })
        .collect()
}

/// The summary's line: `95 % intervals, µs (block bootstrap over 41 blocks of 3 s): p50 3.0
/// [3.0, 3.0] · …`; `None` without intervals.
pub fn describe(stats: &Stats, u: Unit) -> Option<String> {
    let x = stats.uncertainty.as_ref()?;
    let parts: Vec<String> =
        SHOWN.iter().zip(cells(stats, u)).filter(|(_, c)| c != "-").map(|(name, c)| format!("{name} {c}")).collect();
    (!parts.is_empty()).then(|| {
        format!(
            "{:.0} % intervals, {} ({}): {}",
            x.confidence * 100.0,
            u.label(),
            method_text(x, stats.cycles),
            parts.join(" · ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(intervals: usize) -> LatencySeries {
        LatencySeries {
            interval_ns: 1_000_000_000,
            samples: vec![0; intervals],
            missed: vec![0; intervals],
            max_ns: vec![None; intervals],
            span_ns: intervals as i64 * 1_000_000_000,
            // Texts that do not decode: a decoded interval would be an empty block.
            histograms: vec!["not an interval".into(); intervals],
        }
    }

    #[test]
    fn a_series_shorter_than_the_bootstraps_blocks_is_not_decoded() {
        let layout = Layout::new(1_000, 1_000_000).unwrap();
        assert!(blocks(&series(MIN_BLOCKS - 1), layout).is_none());
        let (b, ns) = blocks(&series(MIN_BLOCKS), layout).expect("enough intervals for blocks");
        assert_eq!((b.len(), ns), (MIN_BLOCKS, 1_000_000_000));
    }
}
