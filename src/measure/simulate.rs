//! The hidden simulation mode: a synthetic probe fed from a seed or a list of samples, run
//! through the real loop and bookkeeping on a virtual clock. It makes end-to-end tests of the
//! command, its files and its verdicts deterministic.

use super::probe::Waiter;
use super::series::{LatencySeries, SeriesRecorder, INTERVAL_NS};
use super::stats::Live;

/// Where simulated latencies come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Simulation {
    /// Pseudo-random latencies from a seed (thread `i` uses `seed + i`).
    Seed(u64),
    /// Given latencies (ns) per thread, replayed in order.
    Samples(Vec<Vec<i64>>),
}

impl Simulation {
    /// Parses `seed:N`; `file:PATH` is read by the one input loader (`cli::parse::simulation`)
    /// and given to [`Simulation::from_text`].
    pub fn parse(spec: &str) -> Result<Simulation, String> {
        if let Some(n) = spec.strip_prefix("seed:") {
            return n
                .parse()
                .map(Simulation::Seed)
                .map_err(|_| format!("invalid simulation seed '{n}': use --simulate seed:42"));
        }
        Err(format!("invalid simulation '{}': use seed:N or file:PATH", crate::units::printable(spec)))
    }

    /// The samples of a samples file's text (`name` says where it came from): one latency in ns
    /// per line, either `VALUE` (thread 0) or `THREAD VALUE`; `#` starts a comment. An error
    /// names the line, never its content (the file may be anything).
    pub fn from_text(name: &str, text: &str) -> Result<Simulation, String> {
        let mut threads: Vec<Vec<i64>> = Vec::new();
        for (no, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let fields: Vec<&str> = line.split_whitespace().collect();
            let bad = || format!("{name}:{}: expected 'VALUE' or 'THREAD VALUE' in ns", no + 1);
            let (t, v) = match fields.as_slice() {
                [v] => (0usize, v.parse::<i64>().map_err(|_| bad())?),
                [t, v] => (t.parse::<usize>().map_err(|_| bad())?, v.parse::<i64>().map_err(|_| bad())?),
                _ => return Err(bad()),
            };
            if t >= 4096 {
                return Err(bad());
            }
            if threads.len() <= t {
                threads.resize(t + 1, Vec::new());
            }
            threads[t].push(v);
        }
        if threads.is_empty() {
            return Err(format!("simulation samples '{name}' hold no sample"));
        }
        Ok(Simulation::Samples(threads))
    }

    /// The number of threads a samples file defines (`None` for a seed).
    pub fn thread_count(&self) -> Option<usize> {
        match self {
            Simulation::Seed(_) => None,
            Simulation::Samples(t) => Some(t.len()),
        }
    }

    /// The source for thread `index`.
    pub fn source(&self, index: usize) -> SampleSource {
        match self {
            Simulation::Seed(s) => SampleSource::Seeded(s.wrapping_add(index as u64)),
            Simulation::Samples(t) => SampleSource::List(t.get(index).cloned().unwrap_or_default(), 0),
        }
    }
}

/// A stream of simulated latencies.
#[derive(Clone, Debug)]
pub enum SampleSource {
    /// splitmix64 state.
    Seeded(u64),
    /// Samples and the position of the next one.
    List(Vec<i64>, usize),
}

impl SampleSource {
    /// How many samples the source can give (`None`: unlimited).
    pub fn len(&self) -> Option<u64> {
        match self {
            SampleSource::Seeded(_) => None,
            SampleSource::List(v, _) => Some(v.len() as u64),
        }
    }

    /// True when the source can give no sample at all.
    pub fn is_empty(&self) -> bool {
        self.len() == Some(0)
    }

    /// The next latency for a period of `interval` ns.
    fn next(&mut self, interval: i64) -> i64 {
        match self {
            SampleSource::List(v, i) => {
                let x = v.get(*i).copied().unwrap_or(0);
                *i += 1;
                x
            }
            SampleSource::Seeded(state) => {
                let r = splitmix64(state);
                // 2-3 µs typical, a 20-200 µs spike once in 1000, a 1.5-3 period overrun
                // once in 100 000.
                let base = 2_000 + (r % 1_000) as i64;
                match (r >> 20) % 100_000 {
                    0 => interval + interval / 2 + ((r >> 40) % (interval as u64 + 1)) as i64,
                    k if k % 1_000 == 1 => 20_000 + ((r >> 40) % 180_000) as i64,
                    _ => base,
                }
            }
        }
    }
}

fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The virtual time at which a simulated run starts (1 s, so times are never negative).
pub const SIM_EPOCH_NS: i64 = 1_000_000_000;

/// A simulated waiter on a virtual clock; `ABS` chooses an absolute or a relative schedule.
/// With [`SimWaiter::reading`] it also keeps the thread's series on that clock, as the pipeline
/// keeps a real thread's on the wall clock: a reading of the live cells at each whole virtual
/// second.
#[derive(Debug)]
pub struct SimWaiter<'a, const ABS: bool> {
    source: SampleSource,
    now: i64,
    series: Option<(&'a Live, SeriesRecorder)>,
    /// The next reading, on the virtual clock.
    next_read: i64,
}

impl<'a, const ABS: bool> SimWaiter<'a, ABS> {
    /// A waiter replaying `source`.
    pub fn new(source: SampleSource) -> Self {
        SimWaiter { source, now: SIM_EPOCH_NS, series: None, next_read: SIM_EPOCH_NS + INTERVAL_NS }
    }

    /// Also reads `live` (the cells the loop records into) once each virtual second.
    pub fn reading(mut self, live: &'a Live) -> Self {
        self.series = Some((live, SeriesRecorder::new()));
        self
    }

    /// The series read, with a last reading of what the run recorded after the last whole second.
    pub fn series(self) -> Option<LatencySeries> {
        let end = self.now - SIM_EPOCH_NS;
        self.series.map(|(live, mut r)| {
            if let Some(c) = live.checkpoint() {
                r.read(&c, end.min(self.next_read - SIM_EPOCH_NS));
            }
            r.end_at(end);
            r.finish()
        })
    }
}

impl<const ABS: bool> Waiter for SimWaiter<'_, ABS> {
    const ABSOLUTE: bool = ABS;
    fn start(&mut self, _: i64, _: Option<i64>) -> i64 {
        self.now
    }
    fn wait(&mut self, next: i64, interval: i64) -> super::probe::Wake {
        let latency = self.source.next(interval);
        let intended = if ABS { next } else { self.now + interval };
        self.now = intended + latency;
        // The cells hold every sample woken before this one: they close the second that ended
        // first (the ones after it, if this wakeup skipped any, had no sample).
        if let (true, Some((live, r))) = (self.now >= self.next_read, self.series.as_mut()) {
            if let Some(c) = live.checkpoint() {
                r.read(&c, self.next_read - SIM_EPOCH_NS);
            }
            self.next_read += ((self.now - self.next_read) / INTERVAL_NS + 1) * INTERVAL_NS;
        }
        super::probe::Wake { intended, now: self.now, overrun: None }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::histogram::Layout;
    use crate::measure::probe::{run_loop, LoopParams};
    use crate::measure::stats::{Live, Recorder};
    use std::sync::atomic::AtomicBool;

    fn run<const ABS: bool>(
        samples: Vec<i64>,
        interval: i64,
        warmup: u64,
    ) -> (crate::measure::stats::Summary, super::super::probe::LoopOutcome) {
        let n = samples.len() as u64 - warmup;
        let live = Live::new(Layout::DEFAULT);
        let mut rec = Recorder::new(&live, None);
        let mut w = SimWaiter::<ABS>::new(SampleSource::List(samples, 0));
        let p = LoopParams {
            interval_ns: interval,
            loops: n,
            warmup_cycles: warmup,
            break_ns: i64::MAX,
            start_at: None,
            origin_ns: None,
            cyclictest_us: false,
        };
        let out = run_loop(&mut w, &p, &mut rec, &AtomicBool::new(false));
        (rec.finish(), out)
    }

    #[test]
    fn a_wakeup_late_by_k_periods_counts_k_missed_periods_and_keeps_the_sample() {
        // interval 1000: waking 2500 late passes the next two deadlines (+1000, +2000) → 2
        // missed; waking exactly on the following deadline (1000 late) misses none.
        let (s, _) = run::<true>(vec![100, 2_500, 100, 1_000, 999], 1_000, 0);
        assert_eq!(s.cycles, 5);
        assert_eq!(s.missed, 2);
        assert_eq!(s.max_ns, Some(2_500));
    }

    #[test]
    fn warm_up_periods_are_measured_but_not_recorded() {
        let (s, out) = run::<true>(vec![90_000, 80_000, 10, 20], 1_000_000, 2);
        assert_eq!((s.cycles, s.max_ns, s.min_ns), (2, Some(20), Some(10)));
        assert_eq!(out.iterations, 4);
    }

    #[test]
    fn relative_sleeping_accumulates_drift_and_absolute_sleeping_does_not() {
        let lat = vec![50_000; 100];
        let (_, abs) = run::<true>(lat.clone(), 1_000_000, 0);
        let (_, rel) = run::<false>(lat, 1_000_000, 0);
        assert_eq!(abs.drift_ns, 50_000);
        assert_eq!(rel.drift_ns, 100 * 50_000);
    }

    #[test]
    fn samples_files_accept_one_or_two_columns_and_reject_garbage() {
        let sim = Simulation::from_text("s.txt", "# comment\n5\n1 7\n\n0 6 # trailing\n").unwrap();
        assert_eq!(sim, Simulation::Samples(vec![vec![5, 6], vec![7]]));
        let e = Simulation::from_text("s.txt", "root:secret:1 2 3\n").unwrap_err();
        assert!(e.contains("s.txt:1:") && !e.contains("secret"), "{e}");
        assert!(Simulation::parse("seed:x").is_err());
        assert_eq!(Simulation::parse("seed:7"), Ok(Simulation::Seed(7)));
    }

    #[test]
    fn a_seed_gives_the_same_latencies_every_time() {
        let a: Vec<i64> = {
            let mut s = Simulation::Seed(3).source(1);
            (0..1000).map(|_| s.next(1_000_000)).collect()
        };
        let b: Vec<i64> = {
            let mut s = Simulation::Seed(3).source(1);
            (0..1000).map(|_| s.next(1_000_000)).collect()
        };
        assert_eq!(a, b);
        assert!(a.iter().all(|v| *v >= 2_000));
    }
}
