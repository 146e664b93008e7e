//! HdrHistogram interval histograms, the form latency tools exchange (jHiccup, wrk2,
//! HistogramLogAnalyzer): what one interval of a thread added to its own histogram, as an
//! HdrHistogram of [`SIGFIG`] significant figures, and its text form in an interval log (V2,
//! deflated, base64). Built off the hot path from two readings of the live cells: the probe keeps
//! its own histogram.

use super::histogram::{Counts, Layout};
use base64::Engine;
use hdrhistogram::serialization::{Deserializer, Serializer, V2Serializer};
use std::io::Read;

/// Significant figures of every histogram rtlab writes: a value is kept within 0.1 % (1 ns below
/// 2 µs), HdrHistogram's usual precision.
pub const SIGFIG: u8 = 3;

/// An interval's histogram (counts of ns).
pub type Hdr = hdrhistogram::Histogram<u64>;

/// The largest inflated histogram a log may hold: a histogram of 5 significant figures over the
/// whole 64-bit range needs about 6 MB of varints; anything larger is not one.
const MAX_INFLATED: u64 = 8 << 20;

/// The most significant figures accepted in a file (HdrHistogram allows at most 5).
const MAX_SIGFIG: u32 = 5;

/// V2's cookies: plain and deflated (HdrHistogram's `V2EncodingCookieBase | 0x10`).
const V2_COOKIE: u32 = 0x1c84_9313;
const V2_DEFLATED_COOKIE: u32 = 0x1c84_9314;

/// An empty histogram that grows to any value.
pub fn empty() -> Hdr {
    hdrhistogram::Histogram::new(SIGFIG).expect("3 significant figures is a valid precision")
}

/// Adds every count of `from` to `into` (the crate's `add`, a plain walk of the counts where the
/// two are laid out alike); should it refuse, value by value, a value `into` cannot hold clamped
/// to its range, never lost.
pub fn add_into(into: &mut Hdr, from: &Hdr) {
    if into.add(from).is_ok() {
        return;
    }
    for v in from.iter_recorded() {
        let (at, n) = (v.value_iterated_to(), v.count_at_value());
        if into.record_n(at, n).is_err() {
            into.saturating_record_n(at, n);
        }
    }
}

/// What a reading added to a histogram of `layout` (`(bucket, added count)`, ascending; see
/// [`added`]) as an HdrHistogram. Each bucket's added count is recorded at the largest value the
/// bucket holds, never above `max_ns` (the interval's largest latency, so that the histogram's
/// maximum is the interval's) and never below the bucket's lower edge: percentiles read from it
/// are those rtlab reports (the upper edge of their bucket) within 1 ns and the HdrHistogram's
/// precision.
pub fn of_added(layout: Layout, added: &[(usize, u64)], max_ns: Option<i64>) -> Hdr {
    let mut h = empty();
    let cap = max_ns.map_or(u64::MAX, |m| m.max(0) as u64);
    for &(i, n) in added {
        let v = representative(layout, i, cap);
        // It grows to any u64 value; were it ever refused, the value is clamped, not lost.
        if h.record_n(v, n).is_err() {
            h.saturating_record_n(v, n);
        }
    }
    h
}

/// Buckets of a histogram: `(index, count)`, ascending.
pub type Buckets = Vec<(usize, u64)>;

/// What `now` holds beyond `before` (the non-empty buckets of an earlier reading of the same
/// histogram, ascending): `(bucket, added count)` of each bucket that grew, ascending, and
/// `now`'s non-empty buckets for the next reading. One pass over the buckets, with plain
/// indices: it runs every second per thread, and every virtual second of a simulated day.
pub fn added(now: &Counts, before: &[(usize, u64)]) -> (Buckets, Buckets) {
    let (mut grew, mut nonzero) = (Vec::new(), Vec::with_capacity(before.len() + 8));
    let mut k = 0;
    for (i, &c) in now.buckets().iter().enumerate() {
        if c == 0 {
            continue;
        }
        while k < before.len() && before[k].0 < i {
            k += 1;
        }
        let had = if k < before.len() && before[k].0 == i { before[k].1 } else { 0 };
        if c > had {
            grew.push((i, c - had));
        }
        nonzero.push((i, c));
    }
    (grew, nonzero)
}

/// The value bucket `i`'s samples are recorded at: its largest, capped at `cap`, not below its
/// lower edge.
fn representative(layout: Layout, i: usize, cap: u64) -> u64 {
    let (lo, hi) = layout.bounds(i);
    (hi - 1).min(cap).max(lo)
}

/// The text of `h` in an interval log: V2, deflated, base64 (it starts `HISTF`).
///
/// The deflate stream is made of stored blocks (RFC 1951's uncompressed ones, in a zlib
/// wrapper): what every inflater reads, so every HdrHistogram reader decodes it. A compressor
/// keeps about 300 KiB of state (its window, hash chains and buffers), which was a third of a
/// plain run's heap; V2's counts are already varints with runs of zeros folded, so the text of
/// an interval is about a quarter longer, and it is written faster.
pub fn encode(h: &Hdr) -> String {
    let mut plain = Vec::new();
    V2Serializer::new().serialize(h, &mut plain).expect("a histogram serializes into memory");
    let mut bytes = Vec::with_capacity(plain.len() + plain.len() / 65_535 * 5 + 32);
    bytes.extend_from_slice(&V2_DEFLATED_COOKIE.to_be_bytes());
    bytes.extend_from_slice(&[0; 4]);
    zlib_stored(&plain, &mut bytes);
    let deflated = (bytes.len() - 8) as u32;
    bytes[4..8].copy_from_slice(&deflated.to_be_bytes());
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Appends `data` to `out` as a zlib stream (RFC 1950) of stored deflate blocks (RFC 1951,
/// 3.2.4): the header (deflate, 32 KiB window, no dictionary), blocks of at most 65 535 bytes
/// each with its length and that length's complement, the last one marked final, then the
/// Adler-32 of `data`.
fn zlib_stored(data: &[u8], out: &mut Vec<u8>) {
    // 0x7801: a multiple of 31, as the header's check bits require.
    out.extend_from_slice(&[0x78, 0x01]);
    let mut blocks = data.chunks(u16::MAX as usize).peekable();
    if data.is_empty() {
        out.extend_from_slice(&[1, 0, 0, 0xff, 0xff]);
    }
    while let Some(block) = blocks.next() {
        // BFINAL on the last block; BTYPE 00 (stored); the rest of the byte pads to the boundary.
        out.push(u8::from(blocks.peek().is_none()));
        let len = block.len() as u16;
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&(!len).to_le_bytes());
        out.extend_from_slice(block);
    }
    out.extend_from_slice(&adler2::adler32_slice(data).to_be_bytes());
}

/// Reads an interval log's histogram (V2, deflated or not, base64) without trusting it: its
/// inflated size, precision and payload length are checked before anything is allocated for it.
pub fn decode(text: &str) -> Result<Hdr, String> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .map_err(|e| format!("its histogram is not base64 ({e})"))?;
    let cookie = |b: &[u8]| b.get(..4).map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]));
    let plain = match cookie(&bytes) {
        Some(V2_COOKIE) => bytes,
        Some(V2_DEFLATED_COOKIE) if bytes.len() >= 8 => {
            let mut out = Vec::new();
            flate2::read::ZlibDecoder::new(&bytes[8..])
                .take(MAX_INFLATED + 1)
                .read_to_end(&mut out)
                .map_err(|e| format!("its histogram does not inflate ({e})"))?;
            if out.len() as u64 > MAX_INFLATED {
                return Err(format!("its histogram inflates past {} MiB", MAX_INFLATED >> 20));
            }
            out
        }
        _ => return Err("its histogram is not an HdrHistogram V2 one (no V2 cookie)".into()),
    };
    check_header(&plain)?;
    Deserializer::new().deserialize(&mut plain.as_slice()).map_err(|e| format!("its histogram is damaged ({e:?})"))
}

/// V2's header: cookie, payload length, normalizing offset, significant figures, lowest and
/// highest trackable values, integer-to-double ratio (40 bytes, big-endian).
fn check_header(b: &[u8]) -> Result<(), String> {
    let u32_at = |o: usize| b.get(o..o + 4).map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]));
    let (Some(V2_COOKIE), Some(len), Some(sigfig)) = (u32_at(0), u32_at(4), u32_at(12)) else {
        return Err("its histogram is cut short or not V2".into());
    };
    if b.len() < 40 || len as usize != b.len() - 40 {
        return Err(format!("its histogram says {len} bytes of counts and holds {}", b.len().saturating_sub(40)));
    }
    if sigfig > MAX_SIGFIG {
        return Err(format!("its histogram has {sigfig} significant figures; HdrHistogram allows at most 5"));
    }
    Ok(())
}

/// The `(lower edge, upper edge exclusive, count)` of every value range `h` holds, ascending.
pub fn ranges(h: &Hdr) -> impl Iterator<Item = (u64, u64, u64)> + '_ {
    h.iter_recorded().map(|v| {
        let at = v.value_iterated_to();
        (h.lowest_equivalent(at), at.saturating_add(1), v.count_at_value())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::stats::{Live, Recorder};

    #[test]
    fn stored_blocks_inflate_to_the_v2_bytes_with_zlibs_checksum_in_one_block_or_many() {
        let mut wide = empty();
        // Every value below 2^17 once: 130 KiB of varints, three stored blocks.
        for v in 1..(1u64 << 17) {
            wide.record(v).unwrap();
        }
        let mut one = empty();
        one.record_n(20_123, 7).unwrap();
        for h in [empty(), one, wide] {
            let text = encode(&h);
            assert!(text.starts_with("HISTF"), "{}", &text[..8]);
            let bytes = base64::engine::general_purpose::STANDARD.decode(&text).unwrap();
            let mut inflated = Vec::new();
            // flate2's decoder checks the zlib header and the Adler-32 at the end.
            flate2::read::ZlibDecoder::new(&bytes[8..]).read_to_end(&mut inflated).unwrap();
            let mut plain = Vec::new();
            V2Serializer::new().serialize(&h, &mut plain).unwrap();
            assert_eq!(inflated, plain);
            assert_eq!(u32::from_be_bytes(bytes[4..8].try_into().unwrap()) as usize, bytes.len() - 8);
            assert_eq!(decode(&text).unwrap(), h);
        }
    }

    #[test]
    fn an_interval_holds_what_its_reading_added_at_each_buckets_top_capped_at_its_maximum() {
        let live = Live::new(Layout::DEFAULT);
        let mut rec = Recorder::new(&live, None);
        for v in [5_400, 5_100, 40_000] {
            rec.record(v, 0, 0);
        }
        let first = live.checkpoint().unwrap();
        let before: Vec<(usize, u64)> =
            first.counts.buckets().iter().enumerate().filter(|(_, c)| **c > 0).map(|(i, c)| (i, *c)).collect();
        for v in [5_900, 12_345, 12_001] {
            rec.record(v, 0, 0);
        }
        let (grew, _) = added(&live.checkpoint().unwrap().counts, &before);
        let h = of_added(Layout::DEFAULT, &grew, Some(12_345));
        assert_eq!(h.len(), 3);
        // [5000, 6000) gained one: recorded at 5999; [12000, 13000) two, capped at 12 345.
        assert_eq!(ranges(&h).map(|r| r.2).collect::<Vec<_>>(), vec![1, 2]);
        assert!(h.equivalent(h.min(), 5_999) && h.equivalent(h.max(), 12_345));
    }

    #[test]
    fn encoded_histograms_decode_to_the_same_counts() {
        let mut h = empty();
        h.record_n(3_000, 7).unwrap();
        h.record_n(2_000_000, 1).unwrap();
        let text = encode(&h);
        assert!(text.starts_with("HISTF"), "{text}");
        let back = decode(&text).unwrap();
        assert_eq!(back, h);
    }

    #[test]
    fn damaged_or_oversized_histograms_are_refused_without_allocating_for_them() {
        let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
        assert!(decode("not base64!").unwrap_err().contains("base64"));
        assert!(decode(&b64(b"HIST")).unwrap_err().contains("V2"));
        // A plain V2 header claiming 4 GiB of counts.
        let mut claim = Vec::new();
        claim.extend_from_slice(&V2_COOKIE.to_be_bytes());
        claim.extend_from_slice(&u32::MAX.to_be_bytes());
        claim.extend_from_slice(&[0; 4]);
        claim.extend_from_slice(&3u32.to_be_bytes());
        claim.extend_from_slice(&1u64.to_be_bytes());
        claim.extend_from_slice(&u64::MAX.to_be_bytes());
        claim.extend_from_slice(&1f64.to_be_bytes());
        assert!(decode(&b64(&claim)).unwrap_err().contains("says 4294967295 bytes"));
        // Deflated zeros past the bound.
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        std::io::Write::write_all(&mut z, &V2_COOKIE.to_be_bytes()).unwrap();
        std::io::Write::write_all(&mut z, &vec![0u8; (MAX_INFLATED + 10) as usize]).unwrap();
        let mut bomb = V2_DEFLATED_COOKIE.to_be_bytes().to_vec();
        bomb.extend_from_slice(&[0; 4]);
        bomb.extend(z.finish().unwrap());
        assert!(decode(&b64(&bomb)).unwrap_err().contains("inflates past"));
    }
}
