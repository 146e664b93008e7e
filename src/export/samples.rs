//! The raw samples file (`rtlab run --samples FILE`), documented in docs/samples-format.md:
//!
//! ```text
//! "RTLSMP01"  magic, 8 bytes
//! u32 LE      length of the header
//! header      JSON: {"schema": "rtlab.samples/1", "clock", "start_time", "threads": [{thread, cpu, interval_ns, identity?}]}
//! records     26 bytes each, little-endian: u16 thread, u64 cycle, i64 wake_ns, i64 latency_ns
//!             (wake_ns: wake time since the thread's schedule started)
//!             a working task's record is followed by its response record: thread | 0x8000,
//!             the same cycle and wake_ns, and the response time in place of the latency
//! end record  thread 0xFFFF, cycle = length of the trailer, then zeros
//! trailer     JSON: {"records": N, "lost": [per thread], "threads": [as learnt, optional]}
//! ```
//! A file without its end record was not finished (a crash): its complete records are readable.

use serde::{Deserialize, Serialize};
use std::io::Write;

/// The magic bytes that open a samples file.
pub const MAGIC: &[u8; 8] = b"RTLSMP01";
/// Bytes per record.
pub const RECORD: usize = 26;
const END: u16 = 0xFFFF;
/// The bit that marks a response record (the thread index is below it).
const RESPONSE: u16 = 0x8000;

/// One sample as stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Record {
    /// Thread index.
    pub thread: u16,
    /// Cycle (0-based, after warm-up).
    pub cycle: u64,
    /// Wake time since the thread's schedule started (ns).
    pub wake_ns: i64,
    /// Latency (ns).
    pub latency_ns: i64,
    /// A working task's response time for the same period (ns); CSV writes it as a fifth
    /// column (see [`WithResponse`]).
    #[serde(skip)]
    pub response_ns: Option<i64>,
}

/// A record as a CSV row with its response time (`response_ns` empty for tasks without work).
#[derive(Serialize)]
pub struct WithResponse {
    /// Thread index.
    pub thread: u16,
    /// Cycle.
    pub cycle: u64,
    /// Wake time since the start (ns).
    pub wake_ns: i64,
    /// Latency (ns).
    pub latency_ns: i64,
    /// Response time (ns).
    pub response_ns: Option<i64>,
}

impl From<&Record> for WithResponse {
    fn from(r: &Record) -> WithResponse {
        WithResponse {
            thread: r.thread,
            cycle: r.cycle,
            wake_ns: r.wake_ns,
            latency_ns: r.latency_ns,
            response_ns: r.response_ns,
        }
    }
}

/// The header's thread entry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ThreadInfo {
    /// Index.
    pub thread: usize,
    /// Pinned CPU.
    pub cpu: Option<usize>,
    /// Period (ns).
    pub interval_ns: i64,
    /// A runtime probe's identity (`tokio task 1`, `erlang process <0.85.0>`); absent for OS threads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<String>,
    /// The task's name, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// A working task's deadline (ns): its records carry response times.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline_ns: Option<i64>,
}

impl Header {
    /// True when a thread works (the records carry response times; CSV has a fifth column).
    pub fn has_responses(&self) -> bool {
        self.threads.iter().any(|t| t.deadline_ns.is_some())
    }
}

/// The header.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
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
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Trailer {
    /// Records written.
    pub records: u64,
    /// Samples per thread the writer could not take from the ring in time (lost, counted).
    pub lost: Vec<u64>,
    /// The threads as known at the end, when the run learnt who they are while it recorded
    /// (`rtlab watch` gives slots to threads as it finds them): they replace the header's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub threads: Vec<ThreadInfo>,
}

impl Trailer {
    /// The threads as the file knows them at its end: the trailer's when it has them, else
    /// the header's.
    pub fn threads_of<'a>(trailer: Option<&'a Trailer>, header: &'a Header) -> &'a [ThreadInfo] {
        match trailer {
            Some(t) if !t.threads.is_empty() => &t.threads,
            _ => &header.threads,
        }
    }

    /// True when slot `thread` never had a thread (a watch's slot that found none).
    pub fn unused(&self, thread: usize) -> bool {
        !self.threads.is_empty() && self.threads.iter().any(|t| t.thread == thread && t.identity.is_none())
    }
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

/// Appends one record (and its response record, when it has a response time).
pub fn push_record(out: &mut Vec<u8>, r: &Record) {
    let mut one = |thread: u16, value: i64| {
        out.extend_from_slice(&thread.to_le_bytes());
        out.extend_from_slice(&r.cycle.to_le_bytes());
        out.extend_from_slice(&r.wake_ns.to_le_bytes());
        out.extend_from_slice(&value.to_le_bytes());
    };
    one(r.thread, r.latency_ns);
    if let Some(resp) = r.response_ns {
        one(r.thread | RESPONSE, resp);
    }
}

/// The end record and trailer.
pub fn trailer_bytes(t: &Trailer) -> Vec<u8> {
    let json = serde_json::to_vec(t).unwrap_or_default();
    let mut v = Vec::with_capacity(RECORD + json.len());
    push_record(
        &mut v,
        &Record { thread: END, cycle: json.len() as u64, wake_ns: 0, latency_ns: 0, response_ns: None },
    );
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

/// The most threads a samples file may describe (`-t` takes at most 4096).
pub const MAX_THREADS: usize = 4096;

/// Reads a samples file one record at a time (memory does not grow with the file).
pub struct Reader<R: std::io::Read> {
    input: R,
    header: Header,
    trailer: Option<Trailer>,
    records: u64,
    done: bool,
    /// A record read ahead (to see whether a response record follows the one before).
    ahead: Option<Record>,
}

impl<R: std::io::Read> Reader<R> {
    /// Reads the magic and the header; errors name what is wrong.
    pub fn new(mut input: R) -> Result<Reader<R>, String> {
        let mut head = [0u8; 12];
        let got = read_full(&mut input, &mut head)?;
        if got < 12 || &head[..8] != MAGIC {
            return Err("not an rtlab samples file (it does not start with RTLSMP01)".into());
        }
        let hlen = u32::from_le_bytes(head[8..12].try_into().expect("4 bytes")) as usize;
        if hlen > 1 << 24 {
            return Err(format!("the header claims {hlen} bytes; the file is damaged"));
        }
        let mut body = vec![0u8; hlen];
        if read_full(&mut input, &mut body)? < hlen {
            return Err("the header is cut short".into());
        }
        let header: Header = serde_json::from_slice(&body).map_err(|e| format!("the header is not valid: {e}"))?;
        if header.threads.len() > MAX_THREADS {
            return Err(format!(
                "the header lists {} threads, more than rtlab ever writes ({MAX_THREADS}); the file is damaged",
                header.threads.len()
            ));
        }
        if let Some((i, t)) = header.threads.iter().enumerate().find(|(i, t)| t.thread != *i) {
            return Err(format!("the header lists thread {} in place {i}; the file is damaged", t.thread));
        }
        Ok(Reader { input, header, trailer: None, records: 0, done: false, ahead: None })
    }

    /// The header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The trailer, once [`Reader::next_record`] has returned `None` (`None`: the file was not
    /// finished).
    pub fn trailer(&self) -> Option<&Trailer> {
        self.trailer.as_ref()
    }

    /// The next record, with its response time when a response record follows it; `None` at
    /// the end record or at the end of an unfinished file (a partial last record is not a
    /// record).
    pub fn next_record(&mut self) -> Result<Option<Record>, String> {
        let Some(mut r) = (match self.ahead.take() {
            Some(r) => Some(r),
            None => self.raw()?,
        }) else {
            return Ok(None);
        };
        if r.thread & RESPONSE != 0 {
            return Err(format!("record {} is a response with no sample before it; the file is damaged", self.records));
        }
        match self.raw()? {
            Some(next) if next.thread == r.thread | RESPONSE => {
                if next.cycle != r.cycle {
                    return Err(format!(
                        "record {}: a response for cycle {} follows cycle {}; the file is damaged",
                        self.records, next.cycle, r.cycle
                    ));
                }
                r.response_ns = Some(next.latency_ns);
            }
            other => self.ahead = other,
        }
        self.records += 1;
        Ok(Some(r))
    }

    /// The next raw record (a sample or a response record).
    fn raw(&mut self) -> Result<Option<Record>, String> {
        if self.done {
            return Ok(None);
        }
        let mut b = [0u8; RECORD];
        if read_full(&mut self.input, &mut b)? < RECORD {
            self.done = true;
            return Ok(None);
        }
        let thread = u16::from_le_bytes([b[0], b[1]]);
        let cycle = u64::from_le_bytes(b[2..10].try_into().expect("8 bytes"));
        if thread == END {
            self.done = true;
            // A trailer holds a few numbers per thread: a megabyte is far more than rtlab writes.
            if cycle > 1 << 20 {
                return Err(format!("the trailer claims {cycle} bytes; the file is damaged"));
            }
            let mut t = vec![0u8; cycle as usize];
            if read_full(&mut self.input, &mut t)? < t.len() {
                return Err("the trailer is cut short".into());
            }
            let trailer: Trailer = serde_json::from_slice(&t).map_err(|e| format!("the trailer is not valid: {e}"))?;
            if trailer.lost.len() != self.header.threads.len() {
                return Err(format!(
                    "the trailer counts lost samples for {} threads, but the header has {}; the file is damaged",
                    trailer.lost.len(),
                    self.header.threads.len()
                ));
            }
            self.trailer = Some(trailer);
            return Ok(None);
        }
        let index = thread & !RESPONSE;
        if index as usize >= self.header.threads.len() {
            return Err(format!(
                "record {} names thread {index}, but the header has {}",
                self.records,
                self.header.threads.len()
            ));
        }
        Ok(Some(Record {
            thread,
            cycle,
            wake_ns: i64::from_le_bytes(b[10..18].try_into().expect("8 bytes")),
            latency_ns: i64::from_le_bytes(b[18..26].try_into().expect("8 bytes")),
            response_ns: None,
        }))
    }
}

/// Reads until `buf` is full or the input ends; returns the bytes read.
pub fn read_full(input: &mut (impl std::io::Read + ?Sized), buf: &mut [u8]) -> Result<usize, String> {
    let mut n = 0;
    while n < buf.len() {
        match input.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(format!("cannot read: {e}")),
        }
    }
    Ok(n)
}

/// Parses a whole samples file held in memory; errors name what is wrong.
pub fn parse(bytes: &[u8]) -> Result<SamplesFile, String> {
    let mut r = Reader::new(bytes)?;
    let mut records = Vec::new();
    while let Some(rec) = r.next_record()? {
        records.push(rec);
    }
    Ok(SamplesFile { header: r.header.clone(), records, trailer: r.trailer.take() })
}

/// A CSV writer of records (the csv crate): its first row is the header
/// `thread,cycle,wake_ns,latency_ns`, then one row per [`Record`] given to `serialize`.
pub fn csv_writer<W: Write>(out: W) -> csv::Writer<W> {
    csv::WriterBuilder::new().buffer_capacity(1 << 16).from_writer(out)
}

/// The I/O error inside a CSV writer's error, so that a closed pipe stays a closed pipe.
pub fn csv_io_error(e: csv::Error) -> std::io::Error {
    match e.into_kind() {
        csv::ErrorKind::Io(e) => e,
        other => std::io::Error::other(format!("{other:?}")),
    }
}

/// The records as CSV (see [`csv_writer`]), with a `response_ns` column when a thread works.
pub fn csv(f: &SamplesFile) -> Vec<u8> {
    let mut w = csv_writer(Vec::with_capacity(f.records.len() * 32 + 40));
    for r in &f.records {
        let _ = if f.header.has_responses() { w.serialize(WithResponse::from(r)) } else { w.serialize(r) };
    }
    w.into_inner().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> Header {
        Header {
            schema: "rtlab.samples/1".into(),
            clock: "monotonic".into(),
            start_time: "2026-11-22T00:00:00Z".into(),
            threads: vec![ThreadInfo {
                thread: 0,
                cpu: Some(0),
                interval_ns: 1000,
                identity: None,
                name: None,
                deadline_ns: None,
            }],
        }
    }

    #[test]
    fn a_written_file_reads_back_with_its_trailer() {
        let mut v = header_bytes(&header());
        push_record(&mut v, &Record { thread: 0, cycle: 3, wake_ns: 4100, latency_ns: -100, response_ns: None });
        v.extend(trailer_bytes(&Trailer { records: 1, lost: vec![2], threads: vec![] }));
        let f = parse(&v).unwrap();
        assert_eq!(f.records, vec![Record { thread: 0, cycle: 3, wake_ns: 4100, latency_ns: -100, response_ns: None }]);
        assert_eq!(f.trailer, Some(Trailer { records: 1, lost: vec![2], threads: vec![] }));
        assert_eq!(String::from_utf8(csv(&f)).unwrap(), "thread,cycle,wake_ns,latency_ns\n0,3,4100,-100\n");
    }

    #[test]
    fn an_unfinished_file_keeps_its_complete_records() {
        let mut v = header_bytes(&header());
        push_record(&mut v, &Record { thread: 0, cycle: 0, wake_ns: 1, latency_ns: 1, response_ns: None });
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
