//! The work each load worker does, counting it in a shared counter.

use super::spec::Kind;
use std::io::{Read, Seek, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

/// How often a worker publishes its count and checks for the stop flag (units of work).
const CHUNK: u64 = 4096;

/// Runs one in-process worker of `kind` until `stop`, adding its work to `ops` and the CPU
/// time of any helper threads it starts to `cpu_ns` (the caller adds its own).
pub fn run(kind: &Kind, id: usize, ops: &AtomicU64, stop: &AtomicBool, cpu_ns: &AtomicU64) -> Result<(), String> {
    match kind {
        Kind::Cpu { duty: Some(d), int } => {
            // A periodic burst on an absolute schedule: busy until start + k·every + burst,
            // then asleep until the next period; a stop is seen at every period.
            let clock = crate::rt::clock::ClockId::MONOTONIC;
            let mut next = crate::rt::clock::now(clock);
            let (mut x, mut acc) = (0x9E37_79B9_7F4A_7C15u64 ^ id as u64, 0f64);
            while !stop.load(Relaxed) {
                let until = next + d.burst_ns;
                let mut n = 0u64;
                while crate::rt::clock::now(clock) < until {
                    for _ in 0..64 {
                        if *int {
                            x ^= x << 13;
                            x ^= x >> 7;
                            x ^= x << 17;
                        } else {
                            acc += 1.0 / (2 * n + 1) as f64;
                        }
                        n += 1;
                    }
                }
                ops.fetch_add(n, Relaxed);
                next += d.every_ns;
                crate::rt::clock::sleep_until(clock, next);
            }
            std::hint::black_box((x, acc));
            Ok(())
        }
        Kind::Cpu { int: false, .. } => {
            // The Leibniz series for π, one term per op.
            let (mut k, mut sum) = (0u64, 0f64);
            while !stop.load(Relaxed) {
                for _ in 0..CHUNK {
                    let term = 1.0 / (2 * k + 1) as f64;
                    sum += if k % 2 == 0 { term } else { -term };
                    k += 1;
                }
                ops.fetch_add(CHUNK, Relaxed);
            }
            std::hint::black_box(sum);
            Ok(())
        }
        Kind::Cpu { int: true, .. } => {
            let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ id as u64;
            let mut acc = 0u64;
            while !stop.load(Relaxed) {
                for _ in 0..CHUNK {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    acc = acc.wrapping_add(x.count_ones() as u64).rotate_left(3);
                }
                ops.fetch_add(CHUNK, Relaxed);
            }
            std::hint::black_box(acc);
            Ok(())
        }
        Kind::Memory { bytes } => {
            let half = (bytes / 2).max(4096);
            // A size the machine cannot give is a failure of the load, not an abort of rtlab.
            let mut buf: Vec<u8> = Vec::new();
            buf.try_reserve_exact(half * 2)
                .map_err(|_| format!("memory load: cannot allocate {} MiB", (half * 2) >> 20))?;
            buf.resize(half * 2, 1);
            // Copied 1 MiB at a time, so that a stop is seen within a millisecond whatever the size.
            const STEP: usize = 1 << 20;
            let (a, b) = buf.split_at_mut(half);
            'copy: while !stop.load(Relaxed) {
                for forward in [true, false] {
                    for (x, y) in a.chunks_mut(STEP).zip(b.chunks_mut(STEP)) {
                        if stop.load(Relaxed) {
                            break 'copy;
                        }
                        let (src, dst) = if forward { (&*x, y) } else { (&*y, x) };
                        dst.copy_from_slice(src);
                        std::hint::black_box(&mut *dst);
                        ops.fetch_add(src.len() as u64, Relaxed);
                    }
                }
            }
            Ok(())
        }
        Kind::Io { block, dir } => io_worker(*block, dir, id, ops, stop),
        Kind::Messaging { fds, size, pipe } => messaging_group(*fds, *size, *pipe, ops, stop, cpu_ns).map(|_| ()),
        Kind::Command { .. } => Err("command loads run as processes".into()),
    }
}

/// Writes `block`-byte blocks with fsync, rewinding every 64 MiB so the disk use stays bounded.
fn io_worker(block: usize, dir: &Path, id: usize, ops: &AtomicU64, stop: &AtomicBool) -> Result<(), String> {
    // An unpredictable directory of its own (0700), so nothing planted in a shared `dir` is
    // written through.
    let tmp = tempfile::Builder::new()
        .prefix(&format!(".rtlab-io-{id}-"))
        .tempdir_in(dir)
        .map_err(|e| format!("io load: cannot create a directory in {}: {e}", dir.display()))?;
    let mut f = std::fs::File::create_new(tmp.path().join("data")).map_err(|e| format!("io load: {e}"))?;
    let data = vec![0x5au8; block];
    let mut written = 0usize;
    while !stop.load(Relaxed) {
        f.write_all(&data).and_then(|_| f.sync_data()).map_err(|e| format!("io load: write failed: {e}"))?;
        written += block;
        ops.fetch_add(block as u64, Relaxed);
        if written >= 64 << 20 {
            f.rewind().map_err(|e| format!("io load: {e}"))?;
            written = 0;
        }
    }
    Ok(())
}

/// One hackbench group: `fds` senders write `size`-byte messages to each of `fds` receivers
/// until stopped; the receivers count what arrives, in messages. Returns the messages sent.
pub fn messaging_group(
    fds: usize,
    size: usize,
    pipe: bool,
    ops: &AtomicU64,
    stop: &AtomicBool,
    cpu_ns: &AtomicU64,
) -> Result<u64, String> {
    let sent = AtomicU64::new(0);
    let thread_cpu =
        || cpu_ns.fetch_add(crate::rt::clock::now(crate::rt::clock::ClockId::THREAD_CPUTIME).max(0) as u64, Relaxed);
    let mut readers: Vec<Box<dyn Read + Send>> = Vec::with_capacity(fds);
    let mut writers: Vec<Vec<Box<dyn Write + Send>>> = (0..fds).map(|_| Vec::with_capacity(fds)).collect();
    for _ in 0..fds {
        let (r, w): (Box<dyn Read + Send>, Box<dyn Channel>) = if pipe {
            let (r, w) = std::io::pipe().map_err(|e| format!("messaging load: pipe: {e}"))?;
            (Box::new(r), Box::new(w))
        } else {
            let (a, b) =
                std::os::unix::net::UnixStream::pair().map_err(|e| format!("messaging load: socketpair: {e}"))?;
            (Box::new(b), Box::new(a))
        };
        readers.push(r);
        // Every sender gets its own descriptor on this receiver's channel, as in hackbench: the
        // kernel serialises the writes, and the receiver counts bytes, so interleaving is harmless.
        for sender in writers.iter_mut() {
            sender.push(w.try_clone_box().map_err(|e| format!("messaging load: {e}"))?);
        }
    }
    std::thread::scope(|s| {
        for mut r in readers {
            s.spawn(move || {
                let mut buf = vec![0u8; size.max(1)];
                let mut bytes = 0u64;
                loop {
                    match r.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => {
                            bytes += n as u64;
                            ops.fetch_add(bytes / size as u64, Relaxed);
                            bytes %= size as u64;
                        }
                    }
                }
                thread_cpu();
            });
        }
        for mut targets in writers {
            let sent = &sent;
            s.spawn(move || {
                let msg = vec![0x42u8; size];
                'send: while !stop.load(Relaxed) {
                    for t in targets.iter_mut() {
                        if t.write_all(&msg).is_err() {
                            break 'send;
                        }
                        sent.fetch_add(1, Relaxed);
                    }
                }
                drop(targets);
                thread_cpu();
            });
        }
    });
    Ok(sent.into_inner())
}

/// A channel's write end that can be duplicated for another sender.
trait Channel: Write + Send {
    fn try_clone_box(&self) -> std::io::Result<Box<dyn Write + Send>>;
}

impl Channel for std::os::unix::net::UnixStream {
    fn try_clone_box(&self) -> std::io::Result<Box<dyn Write + Send>> {
        Ok(Box::new(self.try_clone()?))
    }
}

impl Channel for std::io::PipeWriter {
    fn try_clone_box(&self) -> std::io::Result<Box<dyn Write + Send>> {
        Ok(Box::new(self.try_clone()?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_for(kind: &Kind, ms: u64) -> u64 {
        let (ops, stop, cpu) = (AtomicU64::new(0), AtomicBool::new(false), AtomicU64::new(0));
        std::thread::scope(|s| {
            s.spawn(|| run(kind, 0, &ops, &stop, &cpu).unwrap());
            std::thread::sleep(std::time::Duration::from_millis(ms));
            stop.store(true, Relaxed);
        });
        ops.into_inner()
    }

    #[test]
    fn every_message_sent_is_counted_once_received() {
        for pipe in [false, true] {
            let (ops, stop, cpu) = (AtomicU64::new(0), AtomicBool::new(false), AtomicU64::new(0));
            let sent = std::thread::scope(|s| {
                let h = s.spawn(|| messaging_group(4, 100, pipe, &ops, &stop, &cpu).unwrap());
                std::thread::sleep(std::time::Duration::from_millis(150));
                stop.store(true, Relaxed);
                h.join().unwrap()
            });
            assert!(sent > 0);
            assert_eq!(ops.into_inner(), sent, "pipe={pipe}");
        }
    }

    #[test]
    fn cpu_and_memory_workers_count_whole_chunks() {
        assert_eq!(run_for(&Kind::Cpu { int: false, duty: None }, 50) % CHUNK, 0);
        assert_eq!(run_for(&Kind::Cpu { int: true, duty: None }, 50) % CHUNK, 0);
        // A busy machine may not run the worker at all for 50 ms: longer until it has copied.
        let copied = (1..=8).map(|i| run_for(&Kind::Memory { bytes: 1 << 20 }, 50 << i)).find(|c| *c > 0);
        let copied = copied.expect("the memory worker copied nothing in 12.8 s");
        assert!(copied.is_multiple_of(1 << 19), "{copied}");
    }

    #[test]
    fn the_io_worker_counts_bytes_written_and_cleans_up() {
        let dir = tempfile::tempdir().unwrap();
        let written = run_for(&Kind::Io { block: 4096, dir: dir.path().to_path_buf() }, 100);
        assert!(written > 0 && written.is_multiple_of(4096));
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "its temporary directory is gone");
    }
}
