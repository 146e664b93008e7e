//! `rtlab run --samples FILE` (the writer) and `rtlab samples FILE` (the reader).

use crate::export::samples::{self, Header, Record, ThreadInfo, Trailer};
use crate::export::write_output;
use crate::measure::engine::{Observer, ThreadStatus};
use crate::measure::ring::Sample;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Streams every sample from the engine's rings into a samples file (SCHED_OTHER, on the
/// reporting thread), written to a temporary file that is renamed into place when complete.
pub struct SamplesWriter {
    path: PathBuf,
    tmp: PathBuf,
    clock: String,
    file: Option<std::io::BufWriter<std::fs::File>>,
    buf: Vec<u8>,
    records: u64,
    error: Option<String>,
}

impl SamplesWriter {
    /// A writer to `path`.
    pub fn new(path: &Path, clock: &str) -> SamplesWriter {
        let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let name = path.file_name().map_or_else(|| "samples".into(), |n| n.to_string_lossy().into_owned());
        SamplesWriter {
            path: path.to_path_buf(),
            tmp: dir.join(format!(".{name}.{}.tmp", std::process::id())),
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

    /// Writes the trailer with the per-thread loss counts and moves the file into place.
    pub fn finish(mut self, lost: Vec<u64>) -> Result<u64, String> {
        if let Some(mut f) = self.file.take() {
            let done = f
                .write_all(&samples::trailer_bytes(&Trailer { records: self.records, lost }))
                .and_then(|_| f.flush())
                .and_then(|_| f.get_ref().sync_all())
                .and_then(|_| std::fs::rename(&self.tmp, &self.path));
            if let Err(e) = done {
                self.fail(e);
            }
        }
        if let Some(e) = self.error.take() {
            let _ = std::fs::remove_file(&self.tmp);
            return Err(e);
        }
        Ok(self.records)
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
        match std::fs::File::create(&self.tmp) {
            Ok(f) => {
                let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
                match w.write_all(&samples::header_bytes(&header)) {
                    Ok(()) => self.file = Some(w),
                    Err(e) => self.fail(e),
                }
            }
            Err(e) => self.fail(e),
        }
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

/// `rtlab samples FILE`: a summary, or with `--csv` every record as CSV (to stdout or `-o`).
pub fn execute(args: crate::cli::samples::SamplesArgs) -> Result<i32, (i32, String)> {
    let bytes = std::fs::read(&args.file).map_err(|e| (2, format!("{}: cannot read: {e}", args.file.display())))?;
    let f = samples::parse(&bytes).map_err(|e| (2, format!("{}: {e}", args.file.display())))?;
    if args.csv {
        let out = samples::csv(&f);
        let target = args.output.unwrap_or_else(|| PathBuf::from("-"));
        write_output(&target, &out).map_err(|e| (1, format!("cannot write {}: {e}", target.display())))?;
        return Ok(0);
    }
    let mut s = format!(
        "{}: {} samples of {} threads, clock {}, started {}\n",
        args.file.display(),
        f.records.len(),
        f.header.threads.len(),
        f.header.clock,
        f.header.start_time
    );
    for t in &f.header.threads {
        let n = f.records.iter().filter(|r| r.thread as usize == t.thread).count();
        let lost = f.trailer.as_ref().and_then(|tr| tr.lost.get(t.thread).copied());
        s += &format!(
            "thread {}: {n} samples, interval {} ns, lost {}\n",
            t.thread,
            t.interval_ns,
            lost.map_or("unknown".into(), |l| l.to_string())
        );
    }
    if f.trailer.is_none() {
        s += "the file has no end record: the run did not finish writing it; the samples above are complete records\n";
    }
    print!("{s}");
    Ok(0)
}
