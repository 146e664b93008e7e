//! Recording the measured CPUs' events while a run measures: rtlab's own tracefs instance,
//! one reader thread (off the measured CPUs) that drains each CPU's stream into a bounded
//! window of recent events, and what was lost.

use super::event::{parse, timestamp, Event};
use crate::rt::affinity::CpuSet;
use crate::rt::tracefs::Instance;
use std::collections::VecDeque;
use std::io::Read;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The events a noise gap's attribution reads (`trace::noise`): the contexts that take a busy
/// thread's CPU and nothing else. Every event recorded on the measured CPU lengthens the
/// interruption it belongs to, so wakeups, timer callbacks, IPIs sent and work items — which
/// the attribution does not need — are not recorded for it.
pub const NOISE_EVENTS: &[&str] = &[
    "sched/sched_switch",
    "irq/irq_handler_entry",
    "irq/irq_handler_exit",
    "irq/softirq_entry",
    "irq/softirq_exit",
    "irq_vectors/local_timer_entry",
    "irq_vectors/local_timer_exit",
    "irq_vectors/reschedule_entry",
    "irq_vectors/reschedule_exit",
    "irq_vectors/call_function_entry",
    "irq_vectors/call_function_exit",
    "irq_vectors/call_function_single_entry",
    "irq_vectors/call_function_single_exit",
    "irq_vectors/irq_work_entry",
    "irq_vectors/irq_work_exit",
    "irq_vectors/thermal_apic_entry",
    "irq_vectors/thermal_apic_exit",
    "nmi/nmi_handler",
];

/// What `--explain` records besides [`NOISE_EVENTS`]: wakeups, timer callbacks, IPIs sent,
/// work items, and the osnoise tracepoints where the kernel has them. `sched_wakeup` and
/// `hrtimer_expire_exit` are left out: they say nothing `sched_waking` and
/// `hrtimer_expire_entry` do not, and every event between a deadline and the wakeup adds to the
/// latency it explains.
pub const EXPLAIN_EXTRA_EVENTS: &[&str] = &[
    "sched/sched_waking",
    "timer/hrtimer_expire_entry",
    "ipi/ipi_send_cpu",
    "ipi/ipi_send_cpumask",
    "workqueue/workqueue_execute_start",
    "workqueue/workqueue_execute_end",
    "osnoise/irq_noise",
    "osnoise/softirq_noise",
    "osnoise/nmi_noise",
    "osnoise/thread_noise",
];

/// The events to record: for a noise run's attribution, or for `--explain`.
pub fn events(noise: bool) -> Vec<&'static str> {
    let extra: &[&str] = if noise { &[] } else { EXPLAIN_EXTRA_EVENTS };
    NOISE_EVENTS.iter().chain(extra).copied().collect()
}

/// Per-CPU trace buffer (KiB): about five seconds of a busy CPU's events at 1 kHz.
pub const BUFFER_KB: usize = 2048;

/// How long recent events are kept for spikes still to be explained.
const KEEP_NS: i64 = 3_000_000_000;

/// At most this much text is kept per CPU (memory stays bounded whatever the rate).
const KEEP_BYTES: usize = 64 << 20;

/// How often the reader drains the buffers: rarely enough to cost little (BENCHMARKS.md §7),
/// often enough that the kernel's buffer (about five seconds of a busy CPU) never fills and a
/// spike waits at most this long for its events.
const READ_EVERY: Duration = Duration::from_millis(50);

/// One CPU's recent events, kept as the text read (parsed only when a spike asks for them).
#[derive(Debug, Default)]
struct Window {
    chunks: Mutex<VecDeque<Chunk>>,
    /// The newest event's time (ns): everything before it has been read.
    read_until: AtomicI64,
    /// Lines that did not parse (counted the first time their chunk is parsed).
    unparsed: AtomicU64,
    /// Events dropped from the window because it was full before they aged out.
    evicted: AtomicU64,
}

/// One read of a CPU's events: `(first event's time, last event's time, lines)`, and whether its
/// unparsable lines have been counted (a chunk may be parsed for many windows).
type Chunk = (i64, i64, String, bool);

/// The time of a trace line, without parsing the rest.
fn line_ts(line: &str) -> Option<i64> {
    let close = line.find("] ")?;
    timestamp(line[close + 2..].split(": ").next()?.split_whitespace().last()?)
}

/// The recording of a run.
#[derive(Debug)]
pub struct Recorder {
    instance: Option<Instance>,
    cpus: Vec<usize>,
    windows: Arc<Vec<Window>>,
    stop: Arc<AtomicBool>,
    reader: Option<std::thread::JoinHandle<()>>,
}

fn drain(pipes: &mut [(std::fs::File, Vec<u8>)], windows: &[Window]) -> bool {
    // Small reads: each one copies in the kernel without a preemption point.
    let mut buf = [0u8; 8 << 10];
    let mut any = false;
    for ((file, partial), w) in pipes.iter_mut().zip(windows) {
        loop {
            match file.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    any = true;
                    partial.extend_from_slice(&buf[..n]);
                    let Some(last) = partial.iter().rposition(|b| *b == b'\n') else { continue };
                    let text = String::from_utf8_lossy(&partial[..=last]).into_owned();
                    partial.drain(..=last);
                    let first = text.lines().find_map(line_ts);
                    let newest = text.lines().rev().find_map(line_ts);
                    let (Some(first), Some(newest)) = (first, newest) else { continue };
                    w.read_until.fetch_max(newest, Relaxed);
                    let mut chunks = w.chunks.lock().unwrap_or_else(|e| e.into_inner());
                    chunks.push_back((first, newest, text, false));
                    let keep_from = w.read_until.load(Relaxed) - KEEP_NS;
                    while chunks.front().is_some_and(|c| c.1 < keep_from) {
                        chunks.pop_front();
                    }
                    let mut bytes: usize = chunks.iter().map(|c| c.2.len()).sum();
                    while bytes > KEEP_BYTES && chunks.len() > 1 {
                        let (len, lines) = chunks.pop_front().map_or((0, 0), |c| (c.2.len(), c.2.lines().count()));
                        bytes -= len;
                        w.evicted.fetch_add(lines as u64, Relaxed);
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
    }
    any
}

impl Recorder {
    /// Starts recording `events` ([`events`]) of `cpus` into the instance
    /// `rtlab-PID-XXXXXXXX`; the reader thread runs on `reader_cpus` (keep it off the measured CPUs)
    /// when given.
    pub fn start(cpus: &CpuSet, reader_cpus: Option<&CpuSet>, events: &[&str]) -> Result<Recorder, String> {
        let instance = Instance::create("rtlab", cpus, BUFFER_KB, events, None)?;
        let mut pipes = Vec::new();
        for &c in cpus.cpus() {
            let f = instance.pipe(c).map_err(|e| format!("cannot read CPU {c}'s events ({e})"))?;
            pipes.push((f, Vec::new()));
        }
        let windows: Arc<Vec<Window>> = Arc::new(cpus.cpus().iter().map(|_| Window::default()).collect());
        let stop = Arc::new(AtomicBool::new(false));
        let (w, s) = (Arc::clone(&windows), Arc::clone(&stop));
        let pin = reader_cpus.cloned();
        let reader = std::thread::Builder::new()
            .name("rtlab-trace".into())
            .spawn(move || {
                if let Some(set) = pin {
                    let _ = crate::rt::affinity::set_current_thread(&set);
                }
                while !s.load(Relaxed) {
                    drain(&mut pipes, &w);
                    std::thread::sleep(READ_EVERY);
                }
                // What the buffers still hold once tracing has stopped.
                drain(&mut pipes, &w);
            })
            .map_err(|e| format!("cannot start the trace reader ({e})"))?;
        Ok(Recorder { instance: Some(instance), cpus: cpus.cpus().to_vec(), windows, stop, reader: Some(reader) })
    }

    fn window(&self, cpu: usize) -> Option<&Window> {
        self.cpus.iter().position(|c| *c == cpu).map(|i| &self.windows[i])
    }

    /// Whether every event of `cpu` up to `ts_ns` has been read (a later event was seen).
    pub fn caught_up(&self, cpu: usize, ts_ns: i64) -> bool {
        self.window(cpu).is_some_and(|w| w.read_until.load(Relaxed) >= ts_ns)
    }

    /// `cpu`'s events from `from_ns` to `to_ns`, in time order.
    pub fn events(&self, cpu: usize, from_ns: i64, to_ns: i64) -> Vec<Event> {
        let Some(w) = self.window(cpu) else { return Vec::new() };
        let mut chunks = w.chunks.lock().unwrap_or_else(|e| e.into_inner());
        let mut v = Vec::new();
        for (_, _, text, counted) in chunks.iter_mut().filter(|c| c.1 >= from_ns && c.0 <= to_ns) {
            let mut unparsed = 0;
            for line in text.lines().filter(|l| !l.trim().is_empty()) {
                match parse(line) {
                    Some(e) if e.ts_ns >= from_ns && e.ts_ns <= to_ns => v.push(e),
                    Some(_) => {}
                    None => unparsed += 1,
                }
            }
            if !*counted {
                w.unparsed.fetch_add(unparsed, Relaxed);
                *counted = true;
            }
        }
        v.sort_by_key(|e| e.ts_ns);
        v
    }

    /// Events `cpu` lost so far: overwritten in the kernel's buffer, dropped, unparsable in a
    /// window explained, or pushed out of the window before they aged out.
    pub fn lost(&self, cpu: usize) -> u64 {
        let own = self.window(cpu).map_or(0, |w| w.unparsed.load(Relaxed) + w.evicted.load(Relaxed));
        own + self.instance.as_ref().map_or(0, |i| i.lost(cpu))
    }

    /// The instance's name (`rtlab-PID-XXXXXXXX`).
    pub fn instance(&self) -> String {
        self.instance
            .as_ref()
            .and_then(|i| i.dir().file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    }

    /// The events asked for that this kernel does not have.
    pub fn missing_events(&self) -> Vec<String> {
        self.instance.as_ref().map(|i| i.missing.clone()).unwrap_or_default()
    }

    /// Stops tracing and reads what the buffers still hold (later [`Recorder::events`] calls
    /// see everything recorded).
    pub fn finish(&mut self) {
        if let Some(i) = &self.instance {
            i.stop();
        }
        self.stop.store(true, Relaxed);
        if let Some(r) = self.reader.take() {
            let _ = r.join();
        }
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.finish();
        // The reader (and its open pipes) is gone: the instance can be removed.
        self.instance.take();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unparsable_line_is_counted_as_lost_once_however_often_its_chunk_is_parsed() {
        let text = "          <idle>-0       [001] d.h1.  1000.000001: local_timer_entry: vector=236\n\
                    garbage that is no trace line\n\
                    <idle>-0       [001] d.h1.  1000.000004: local_timer_exit: vector=236\n"
            .to_string();
        let window = Window::default();
        window.chunks.lock().unwrap().push_back((1_000_000_001_000, 1_000_000_004_000, text, false));
        let r = Recorder {
            instance: None,
            cpus: vec![1],
            windows: Arc::new(vec![window]),
            stop: Arc::new(AtomicBool::new(true)),
            reader: None,
        };
        for _ in 0..3 {
            assert_eq!(r.events(1, 1_000_000_000_000, 1_000_000_010_000).len(), 2);
        }
        assert_eq!(r.lost(1), 1);
    }
}
