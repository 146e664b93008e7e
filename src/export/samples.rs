//! The raw samples file (`rtlab run --samples FILE`), documented in docs/samples-format.md:
//!
//! ```text
//! "RTLSMP01"  magic, 8 bytes
//! u32 LE      length of the header
//! header      JSON: {"schema": "rtlab.samples/1", "clock", "start_time", "threads": [{thread, cpu, interval_ns}]}
//! records     26 bytes each, little-endian: u16 thread, u64 cycle, i64 wake_ns, i64 latency_ns
//!             (wake_ns: wake time since the thread's schedule started)
//! end record  thread 0xFFFF, cycle = length of the trailer, then zeros
//! trailer     JSON: {"records": N, "lost": [per thread]}
//! ```
//! A file without its end record was not finished (a crash): its complete records are readable.

use serde::{Deserialize, Serialize};
use std::io::Write;

/// The magic bytes that open a samples file.
pub const MAGIC: &[u8; 8] = b"RTLSMP01";
/// Bytes per record.
pub const RECORD: usize = 26;
const END: u16 = 0xFFFF;

/// One sample as stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Record {
    /// Thread index.
    pub thread: u16,
    /// Cycle (0-based, after warm-up).
    pub cycle: u64,
    /// Wake time since the thread's schedule started (ns).
    pub wake_ns: i64,
    /// Latency (ns).
    pub latency_ns: i64,
}

/// The header's thread entry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadInfo {
    /// Index.
    pub thread: usize,
    /// Pinned CPU.
    pub cpu: Option<usize>,
    /// Period (ns).
    pub interval_ns: i64,
}

/// The header.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Header {
    /// `rtlab.samples/1`.
    pub schema: String,
    /// `monotonic` or `realtime`.
    pub clock: String,
    /// When the threads were released (RFC 3339).
    pub start_time: String,
    /// The threads.
    pub threads: Vec<ThreadInfo>,
}

/// The trailer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Trailer {
    /// Records written.
    pub records: u64,
    /// Samples per thread the writer could not take from the ring in time (lost, counted).
    pub lost: Vec<u64>,
}

/// The bytes that open a file.
pub fn header_bytes(h: &Header) -> Vec<u8> {
    let json = serde_json::to_vec(h).unwrap_or_default();
    let mut v = Vec::with_capacity(12 + json.len());
    v.extend_from_slice(MAGIC);
    v.extend_from_slice(&(json.len() as u32).to_le_bytes());
    v.extend_from_slice(&json);
    v
}

/// Appends one record.
pub fn push_record(out: &mut Vec<u8>, r: &Record) {
    out.extend_from_slice(&r.thread.to_le_bytes());
    out.extend_from_slice(&r.cycle.to_le_bytes());
    out.extend_from_slice(&r.wake_ns.to_le_bytes());
    out.extend_from_slice(&r.latency_ns.to_le_bytes());
}

/// The end record and trailer.
pub fn trailer_bytes(t: &Trailer) -> Vec<u8> {
    let json = serde_json::to_vec(t).unwrap_or_default();
    let mut v = Vec::with_capacity(RECORD + json.len());
    push_record(&mut v, &Record { thread: END, cycle: json.len() as u64, wake_ns: 0, latency_ns: 0 });
    v.extend_from_slice(&json);
    v
}

/// A parsed samples file.
#[derive(Clone, Debug, PartialEq)]
pub struct SamplesFile {
    /// Header.
    pub header: Header,
    /// Records.
    pub records: Vec<Record>,
    /// Trailer (`None`: the file was not finished).
    pub trailer: Option<Trailer>,
}

/// Parses a samples file; errors name what is wrong.
pub fn parse(bytes: &[u8]) -> Result<SamplesFile, String> {
    if bytes.len() < 12 || &bytes[..8] != MAGIC {
        return Err("not an rtlab samples file (it does not start with RTLSMP01)".into());
    }
    let hlen = u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes")) as usize;
    let body = bytes.get(12..12 + hlen).ok_or("the header is cut short")?;
    let header: Header = serde_json::from_slice(body).map_err(|e| format!("the header is not valid: {e}"))?;
    let mut pos = 12 + hlen;
    let mut records = Vec::new();
    let mut trailer = None;
    while pos + RECORD <= bytes.len() {
        let b = &bytes[pos..pos + RECORD];
        let thread = u16::from_le_bytes([b[0], b[1]]);
        let cycle = u64::from_le_bytes(b[2..10].try_into().expect("8 bytes"));
        pos += RECORD;
        if thread == END {
            let t = bytes.get(pos..pos + cycle as usize).ok_or("the trailer is cut short")?;
            trailer = Some(serde_json::from_slice(t).map_err(|e| format!("the trailer is not valid: {e}"))?);
            break;
        }
        if thread as usize >= header.threads.len() {
            return Err(format!(
                "record {} names thread {thread}, but the header has {}",
                records.len(),
                header.threads.len()
            ));
        }
        records.push(Record {
            thread,
            cycle,
            wake_ns: i64::from_le_bytes(b[10..18].try_into().expect("8 bytes")),
            latency_ns: i64::from_le_bytes(b[18..26].try_into().expect("8 bytes")),
        });
    }
    Ok(SamplesFile { header, records, trailer })
}

/// The records as CSV: `thread,cycle,wake_ns,latency_ns`.
pub fn csv(f: &SamplesFile) -> Vec<u8> {
    let mut out = Vec::with_capacity(f.records.len() * 32 + 40);
    out.extend_from_slice(b"thread,cycle,wake_ns,latency_ns\n");
    for r in &f.records {
        let _ = writeln!(out, "{},{},{},{}", r.thread, r.cycle, r.wake_ns, r.latency_ns);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> Header {
        Header {
            schema: "rtlab.samples/1".into(),
            clock: "monotonic".into(),
            start_time: "2026-11-22T00:00:00Z".into(),
            threads: vec![ThreadInfo { thread: 0, cpu: Some(0), interval_ns: 1000 }],
        }
    }

    #[test]
    fn a_written_file_reads_back_with_its_trailer() {
        let mut v = header_bytes(&header());
        push_record(&mut v, &Record { thread: 0, cycle: 3, wake_ns: 4100, latency_ns: -100 });
        v.extend(trailer_bytes(&Trailer { records: 1, lost: vec![2] }));
        let f = parse(&v).unwrap();
        assert_eq!(f.records, vec![Record { thread: 0, cycle: 3, wake_ns: 4100, latency_ns: -100 }]);
        assert_eq!(f.trailer, Some(Trailer { records: 1, lost: vec![2] }));
        assert_eq!(String::from_utf8(csv(&f)).unwrap(), "thread,cycle,wake_ns,latency_ns\n0,3,4100,-100\n");
    }

    #[test]
    fn an_unfinished_file_keeps_its_complete_records() {
        let mut v = header_bytes(&header());
        push_record(&mut v, &Record { thread: 0, cycle: 0, wake_ns: 1, latency_ns: 1 });
        v.extend_from_slice(&[0, 0, 1]);
        let f = parse(&v).unwrap();
        assert_eq!((f.records.len(), f.trailer), (1, None));
    }

    proptest::proptest! {
        #[test]
        fn no_input_makes_the_parser_panic(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200)) {
            let _ = parse(&bytes);
            let mut v = header_bytes(&header());
            v.extend_from_slice(&bytes);
            let _ = parse(&v);
        }
    }
}
