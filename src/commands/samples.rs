//! `rtlab run --samples FILE` (the writer) and `rtlab samples FILE` (the reader).
use crate::error::Error;

use crate::export::samples::{self, Header, Record, ThreadInfo, Trailer};
use crate::measure::engine::{Observer, ThreadStatus};
use crate::measure::ring::Sample;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Streams every sample from the engine's rings into a samples file (SCHED_OTHER, on the
/// reporting thread). The file is made through an unpredictable temporary file and moved
/// into place with its header as soon as the probes start, then flushed every second and
/// synced at every checkpoint: a crash (SIGKILL, a second Ctrl-C) leaves a valid file, without
/// its end record, holding everything up to the last flush.
pub struct SamplesWriter {
    path: PathBuf,
    clock: String,
    file: Option<std::io::BufWriter<std::fs::File>>,
    buf: Vec<u8>,
    records: u64,
    error: Option<String>,
}

impl SamplesWriter {
    /// A writer to `path`.
    pub fn new(path: &Path, clock: &str) -> SamplesWriter {
        SamplesWriter {
            path: path.to_path_buf(),
            clock: clock.into(),
            file: None,
            buf: Vec::with_capacity(1 << 16),
            records: 0,
            error: None,
        }
    }

    fn fail(&mut self, e: impl std::fmt::Display) {
        if self.error.is_none() {
            self.error = Some(format!("cannot write --samples {}: {e}", self.path.display()));
        }
        self.file = None;
    }

    fn flush(&mut self, sync: bool) {
        if let Some(f) = self.file.as_mut() {
            let done = f.flush().and_then(|_| if sync { f.get_ref().sync_data() } else { Ok(()) });
            if let Err(e) = done {
                self.fail(e);
            }
        }
    }

    fn create(&mut self, header: &Header) -> std::io::Result<()> {
        let mut tmp = crate::export::temp_beside(&self.path)?;
        tmp.write_all(&samples::header_bytes(header))?;
        let file = tmp.persist(&self.path).map_err(|e| e.error)?;
        self.file = Some(std::io::BufWriter::with_capacity(1 << 20, file));
        Ok(())
    }

    /// Writes the trailer with the per-thread loss counts and syncs the file; returns the
    /// records written, or why the file is incomplete.
    pub fn finish(mut self, lost: Vec<u64>) -> Result<u64, String> {
        if let Some(f) = self.file.as_mut() {
            let done = f
                .write_all(&samples::trailer_bytes(&Trailer { records: self.records, lost }))
                .and_then(|_| f.flush())
                .and_then(|_| f.get_ref().sync_all());
            if let Err(e) = done {
                self.fail(e);
            }
        }
        match self.error.take() {
            Some(e) => Err(e),
            None => Ok(self.records),
        }
    }
}

impl Observer for SamplesWriter {
    fn started(&mut self, threads: &[ThreadStatus], _: Option<i32>) {
        let header = Header {
            schema: "rtlab.samples/1".into(),
            clock: self.clock.clone(),
            start_time: crate::timefmt::rfc3339(std::time::SystemTime::now()),
            threads: threads
                .iter()
                .map(|t| ThreadInfo { thread: t.index, cpu: t.cpu, interval_ns: t.interval_ns })
                .collect(),
        };
        if let Err(e) = self.create(&header) {
            self.fail(e);
        }
    }
    fn tick(&mut self, _: &[ThreadStatus], _: &[crate::measure::stats::LiveSnapshot], _: std::time::Duration) {
        self.flush(false);
    }
    fn checkpoint(&mut self, _: &crate::measure::engine::EngineOutput) {
        self.flush(true);
    }
    fn samples(&mut self, thread: usize, batch: &[Sample]) {
        if let Some(f) = self.file.as_mut() {
            self.buf.clear();
            for s in batch {
                let r = Record { thread: thread as u16, cycle: s.cycle, wake_ns: s.at_ns, latency_ns: s.latency_ns };
                samples::push_record(&mut self.buf, &r);
            }
            match f.write_all(&self.buf) {
                Ok(()) => self.records += batch.len() as u64,
                Err(e) => self.fail(e),
            }
        }
    }
}

/// `rtlab samples FILE`: a summary, or with `--csv` every record as CSV (to stdout or `-o`);
/// the file is streamed, so memory does not grow with it.
pub fn execute(args: crate::cli::samples::SamplesArgs) -> Result<i32, Error> {
    let file = &args.file;
    let target = args.output.clone().unwrap_or_else(|| PathBuf::from("-"));
    if args.csv {
        crate::export::check_outputs(&[("-o".into(), &target)], &[file]).map_err(Error::Usage)?;
    }
    let mut reader =
        crate::import::input::open_samples(file).map_err(|e| Error::Usage(format!("{}: {e}", file.display())))?;
    let bad = |e: String| Error::Usage(format!("{}: {e}", file.display()));
    if args.csv {
        let mut failure = None;
        let written = crate::export::stream_output(&target, |out| {
            let mut buf = Vec::with_capacity(1 << 16);
            buf.extend_from_slice(samples::CSV_HEADER);
            loop {
                match reader.next_record() {
                    Ok(Some(r)) => samples::push_csv(&mut buf, &r),
                    Ok(None) => break,
                    Err(e) => {
                        failure = Some(e);
                        return Err(std::io::Error::other("the input is damaged"));
                    }
                }
                if buf.len() >= 1 << 16 {
                    out.write_all(&buf)?;
                    buf.clear();
                }
            }
            out.write_all(&buf)
        });
        if let Some(e) = failure {
            return Err(bad(e));
        }
        written.map_err(|e| Error::Runtime(format!("cannot write {}: {e}", target.display())))?;
        return Ok(0);
    }
    let header = reader.header().clone();
    let mut counts = vec![0u64; header.threads.len()];
    while let Some(r) = reader.next_record().map_err(bad)? {
        counts[r.thread as usize] += 1;
    }
    let mut s = format!(
        "{}: {} samples of {} threads, clock {}, started {}\n",
        file.display(),
        counts.iter().sum::<u64>(),
        header.threads.len(),
        header.clock,
        header.start_time
    );
    for (t, n) in header.threads.iter().zip(&counts) {
        let lost = reader.trailer().and_then(|tr| tr.lost.get(t.thread).copied());
        s += &format!(
            "thread {}: {n} samples, interval {} ns, lost {}\n",
            t.thread,
            t.interval_ns,
            lost.map_or("unknown".into(), |l| l.to_string())
        );
    }
    if reader.trailer().is_none() {
        s += "the file has no end record: the run did not finish writing it; the samples above are complete records\n";
    }
    print!("{s}");
    Ok(0)
}
