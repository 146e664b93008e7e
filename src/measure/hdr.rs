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

/// The text of what a reading added (`layout`'s buckets `added`, capped at `max_ns`), exactly
/// `encode(&of_added(layout, added, max_ns))`, written straight from the buckets: no
/// HdrHistogram is built (its counts array grows to the interval's maximum: about 200 KiB for a
/// millisecond, and the serializer's buffer 120 KiB more, which were most of a plain run's heap
/// at each second's reading). The V2 header and counts follow the `hdrhistogram` crate's
/// geometry for [`SIGFIG`] figures and a lowest discernible value of 1 ([`V2Counts`]).
pub fn encode_added(layout: Layout, added: &[(usize, u64)], max_ns: Option<i64>) -> String {
    let cap = max_ns.map_or(u64::MAX, |m| m.max(0) as u64);
    let mut counts: Vec<(usize, u64)> =
        added.iter().map(|&(i, n)| (V2Counts::index(representative(layout, i, cap)), n)).collect();
    counts.sort_unstable_by_key(|c| c.0);
    let highest = added.iter().map(|&(i, _)| representative(layout, i, cap)).max();
    let mut plain = Vec::with_capacity(64 + counts.len() * 4);
    V2Counts::header(highest, &mut plain);
    V2Counts::counts(&counts, &mut plain);
    let payload = (plain.len() - V2Counts::HEADER) as u32;
    plain[4..8].copy_from_slice(&payload.to_be_bytes());
    deflated_text(&plain)
}

/// The `hdrhistogram` crate's layout of an auto-resizing histogram of [`SIGFIG`] (3)
/// significant figures and lowest discernible value 1, and its V2 encoding: 2 048 sub-buckets,
/// the first bucket whole, each next one's upper half at twice the unit.
struct V2Counts;

impl V2Counts {
    /// V2's header length.
    const HEADER: usize = 40;
    /// log2 of half the sub-buckets (1 024).
    const HALF_MAGNITUDE: u32 = 10;
    /// 64 − unit magnitude (0) − sub-bucket magnitude (11).
    const LEADING_ZEROS_BASE: u32 = 53;
    /// Sub-buckets − 1.
    const SUB_MASK: u64 = 2047;

    fn bucket(v: u64) -> u32 {
        Self::LEADING_ZEROS_BASE - (v | Self::SUB_MASK).leading_zeros()
    }

    /// The counts-array index of value `v`.
    fn index(v: u64) -> usize {
        let b = Self::bucket(v);
        (((b + 1) << Self::HALF_MAGNITUDE) as usize + (v >> b) as usize) - (1 << Self::HALF_MAGNITUDE)
    }

    /// The value at the bottom of index `i`'s range.
    fn value(i: usize) -> u64 {
        let half = 1usize << Self::HALF_MAGNITUDE;
        match (i >> Self::HALF_MAGNITUDE).checked_sub(1) {
            None => i as u64,
            Some(b) => (((i & (half - 1)) + half) as u64) << b,
        }
    }

    /// The largest value that counts with `v`.
    fn highest_equivalent(v: u64) -> u64 {
        let b = Self::bucket(v);
        ((v >> b) << b).saturating_add(1 << b).saturating_sub(1).max(v)
    }

    /// The highest trackable value once `highest` was recorded: the constructor's 2 until a
    /// value needs more than the first bucket, then the top of the last bucket grown to.
    fn highest_trackable(highest: Option<u64>) -> u64 {
        let v = highest.unwrap_or(0);
        let (mut untrackable, mut buckets) = (Self::SUB_MASK + 1, 1u32);
        while untrackable <= v {
            if untrackable > u64::MAX / 2 {
                buckets += 1;
                break;
            }
            untrackable <<= 1;
            buckets += 1;
        }
        if buckets == 1 {
            return 2;
        }
        let len = ((buckets + 1) as usize) << Self::HALF_MAGNITUDE;
        Self::highest_equivalent(Self::value(len - 1))
    }

    fn header(highest: Option<u64>, out: &mut Vec<u8>) {
        out.extend_from_slice(&V2_COOKIE.to_be_bytes());
        out.extend_from_slice(&[0; 8]);
        out.extend_from_slice(&u32::from(SIGFIG).to_be_bytes());
        out.extend_from_slice(&1u64.to_be_bytes());
        out.extend_from_slice(&Self::highest_trackable(highest).to_be_bytes());
        out.extend_from_slice(&1f64.to_be_bytes());
    }

    /// `counts` (`(index, count)`, ascending; one index may come twice) as V2's zig-zag varints:
    /// each count, a run of empty indices as its negated length (a single one as a count of 0),
    /// up to the highest index; an empty histogram is its one empty index 0.
    fn counts(counts: &[(usize, u64)], out: &mut Vec<u8>) {
        let mut next = 0;
        let mut k = 0;
        if counts.is_empty() {
            varint(0, out);
        }
        while k < counts.len() {
            let (at, mut n) = counts[k];
            while k + 1 < counts.len() && counts[k + 1].0 == at {
                k += 1;
                n = n.saturating_add(counts[k].1);
            }
            match at - next {
                0 => {}
                1 => varint(0, out),
                gap => varint(zig_zag(-(gap as i64)), out),
            }
            varint(zig_zag(n.min(i64::MAX as u64) as i64), out);
            next = at + 1;
            k += 1;
        }
    }
}

fn zig_zag(n: i64) -> u64 {
    ((n << 1) ^ (n >> 63)) as u64
}

/// LEB128 as HdrHistogram writes it: seven bits a byte, the ninth byte whole.
fn varint(v: u64, out: &mut Vec<u8>) {
    for k in 0..8 {
        let rest = v >> (7 * (k + 1));
        if rest == 0 {
            out.push((v >> (7 * k)) as u8 & 0x7f);
            return;
        }
        out.push(0x80 | ((v >> (7 * k)) as u8 & 0x7f));
    }
    out.push((v >> 56) as u8);
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
    deflated_text(&plain)
}

/// V2 bytes `plain` as an interval log's text: the deflated cookie, the length, the zlib
/// stream of stored blocks, base64.
fn deflated_text(plain: &[u8]) -> String {
    let mut bytes = Vec::with_capacity(plain.len() + plain.len() / 65_535 * 5 + 32);
    bytes.extend_from_slice(&V2_DEFLATED_COOKIE.to_be_bytes());
    bytes.extend_from_slice(&[0; 4]);
    zlib_stored(plain, &mut bytes);
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
    fn an_interval_written_from_its_buckets_is_byte_for_byte_the_crates_own_text() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m.max(1)
        };
        let layouts = [Layout::DEFAULT, Layout::new(1, 100_000).unwrap(), Layout::new(10_000, 1_000_000_000).unwrap()];
        assert_eq!(encode_added(Layout::DEFAULT, &[], None), encode(&of_added(Layout::DEFAULT, &[], None)));
        for trial in 0..3_000 {
            let layout = layouts[trial % layouts.len()];
            // Few buckets or many, near the bottom (the crate's first bucket: a header of 2) or
            // anywhere up to the layout's last bucket (the top of the 64-bit range).
            let (n, top) = match trial % 4 {
                0 => (1 + next(3), layout.len() as u64 / 8),
                1 => (1 + next(40), layout.len() as u64),
                2 => (1 + next(400), layout.len() as u64),
                _ => (1 + next(5), 3),
            };
            let mut added: Vec<(usize, u64)> = (0..n)
                .map(|_| {
                    let (at, bits) = (next(top) as usize, next(40) + 1);
                    (at, 1 + next(1 << bits))
                })
                .collect();
            added.sort_unstable_by_key(|a| a.0);
            added.dedup_by_key(|a| a.0);
            let max_ns = match next(3) {
                0 => None,
                1 => {
                    let bits = next(50);
                    Some(next(1 << bits) as i64)
                }
                _ => Some(layout.bounds(added.last().unwrap().0).1.min(i64::MAX as u64) as i64 - 1),
            };
            let crate_text = encode(&of_added(layout, &added, max_ns));
            assert_eq!(encode_added(layout, &added, max_ns), crate_text, "{layout:?} {added:?} {max_ns:?}");
        }
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
