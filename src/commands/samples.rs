//! `rtlab samples FILE`: the samples file read back (its writer is `session::observers::SamplesWriter`).
use crate::error::Error;
use std::path::PathBuf;

use crate::export::samples;

/// A validated `rtlab samples`.
#[derive(Debug, Clone)]
pub struct SamplesOptions {
    /// The samples file.
    pub file: PathBuf,
    /// Write every record as CSV to this target (`-` for stdout); `None`: the summary.
    pub csv: Option<PathBuf>,
}

/// `rtlab samples FILE`: a summary, or with `--csv` every record as CSV (to stdout or `-o`);
/// the file is streamed, so memory does not grow with it.
pub fn execute(opts: &SamplesOptions) -> Result<i32, Error> {
    let file = &opts.file;
    let mut reader =
        crate::import::input::open_samples(file).map_err(|e| Error::Usage(format!("{}: {e}", file.display())))?;
    let bad = |e: String| Error::Usage(format!("{}: {e}", file.display()));
    if let Some(target) = &opts.csv {
        let mut failure = None;
        let written = crate::export::stream_output(target, |out| {
            let mut w = samples::csv_writer(out);
            let responses = reader.header().has_responses();
            loop {
                match reader.next_record() {
                    Ok(Some(r)) if responses => {
                        w.serialize(samples::WithResponse::from(&r)).map_err(samples::csv_io_error)?
                    }
                    Ok(Some(r)) => w.serialize(r).map_err(samples::csv_io_error)?,
                    Ok(None) => break,
                    Err(e) => {
                        failure = Some(e);
                        return Err(std::io::Error::other("the input is damaged"));
                    }
                }
            }
            w.flush()
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
        "{}: {} of {}, clock {}, started {}\n",
        file.display(),
        crate::units::count(counts.iter().sum::<u64>(), "sample"),
        crate::units::count(header.threads.len() as u64, "thread"),
        header.clock,
        header.start_time
    );
    let threads = crate::export::samples::Trailer::threads_of(reader.trailer(), &header);
    for (t, n) in threads.iter().zip(&counts).filter(|(t, _)| !reader.trailer().is_some_and(|tr| tr.unused(t.thread))) {
        let lost = reader.trailer().and_then(|tr| tr.lost.get(t.thread).copied());
        let task = t.name.as_ref().map_or(String::new(), |n| format!(" ({})", crate::units::printable(n)));
        let work = match t.deadline_ns {
            Some(crate::measure::work::NO_DEADLINE) => ", with response times (no deadline)".to_string(),
            Some(d) => format!(", with response times (deadline {d} ns)"),
            None => String::new(),
        };
        s += &format!(
            "thread {}{task}: {}, interval {} ns{work}, lost {}\n",
            t.thread,
            crate::units::count(*n, "sample"),
            t.interval_ns,
            lost.map_or("unknown".into(), |l| l.to_string())
        );
    }
    if reader.trailer().is_none() {
        s += "the file has no end record: the run did not finish writing it; the samples above are complete records\n";
    }
    crate::export::print(&s);
    Ok(0)
}
