//! The binary event stream (`per_cpu/cpuN/trace_pipe_raw`): ring-buffer pages decoded into
//! [`Event`]s with the exact nanosecond of every event (the text stream prints microseconds)
//! and without the kernel formatting text for each one. Field offsets come from the events'
//! `format` files, so the decoder follows the running kernel's layout.

use super::event::{Event, Kind, Name};
use std::collections::HashMap;
use std::path::Path;

/// A ring-buffer page's header: its timestamp (u64) and its commit word (a long).
const PAGE_HEADER: usize = 16;
/// The commit word's size bits; higher bits flag lost events.
const COMMIT_MASK: u64 = (1 << 27) - 1;
/// The page lost events before it.
const MISSED_EVENTS: u64 = 1 << 31;
/// The count of lost events is stored after the page's data.
const MISSED_STORED: u64 = 1 << 30;
/// Event header type: padding.
const TYPE_PADDING: u32 = 29;
/// Event header type: a time delta too large for the header.
const TYPE_TIME_EXTEND: u32 = 30;
/// Event header type: an absolute timestamp.
const TYPE_TIME_STAMP: u32 = 31;

/// One event type's layout: its name and its fields' `(offset, size)`.
#[derive(Clone, Debug, Default)]
struct Format {
    name: String,
    fields: HashMap<String, (usize, usize)>,
}

/// The layouts of the events an instance records, by event id.
#[derive(Clone, Debug, Default)]
pub struct Formats {
    by_id: HashMap<u16, Format>,
    /// Names of the kernel functions a timer event may point to, by address.
    symbols: HashMap<u64, Name>,
}

impl Formats {
    /// Reads `events/SYSTEM/NAME/format` under `dir` (an instance or the tracefs root) for each
    /// of `events` (`sched/sched_switch`); those this kernel lacks are left out.
    pub fn load(dir: &Path, events: &[&str]) -> Formats {
        let mut f = Formats::default();
        for e in events {
            if let Ok(text) = std::fs::read_to_string(dir.join("events").join(e).join("format")) {
                f.add(&text);
            }
        }
        f
    }

    /// Adds one `format` file's text.
    pub fn add(&mut self, text: &str) {
        let mut format = Format::default();
        let mut id = None;
        for line in text.lines().map(str::trim) {
            if let Some(n) = line.strip_prefix("name:") {
                format.name = n.trim().to_string();
            } else if let Some(n) = line.strip_prefix("ID:") {
                id = n.trim().parse::<u16>().ok();
            } else if let Some(rest) = line.strip_prefix("field:") {
                let mut parts = rest.split(';').map(str::trim);
                let decl = parts.next().unwrap_or("");
                let value = |key: &str, parts: &[&str]| {
                    parts.iter().find_map(|p| p.strip_prefix(key)).and_then(|v| v.trim().parse::<usize>().ok())
                };
                let rest: Vec<&str> = parts.collect();
                // `char prev_comm[16]` → prev_comm; `__data_loc char[] name` → name.
                let name = decl.split_whitespace().last().unwrap_or("").split('[').next().unwrap_or("");
                if let (Some(off), Some(size)) = (value("offset:", &rest), value("size:", &rest)) {
                    format.fields.insert(name.to_string(), (off, size));
                }
            }
        }
        if let Some(id) = id {
            self.by_id.insert(id, format);
        }
    }

    /// Adds the layouts `other` knows.
    pub fn extend(&mut self, other: Formats) {
        self.by_id.extend(other.by_id);
        self.symbols.extend(other.symbols);
    }

    /// Names the timer callbacks among `names` (`hrtimer_wakeup`) from `/proc/kallsyms`
    /// (root reads the real addresses): events then carry their names, not their addresses.
    pub fn name_functions(&mut self, names: &[&str]) {
        let Ok(text) = std::fs::read("/proc/kallsyms") else { return };
        // `ADDRESS TYPE NAME[\t[MODULE]]` lines, 150 000 of them: compared as bytes, the name
        // found by its length before its text (a watch waits for this before it starts).
        for line in text.split(|&b| b == b'\n') {
            let Some(space) = line.iter().position(|&b| b == b' ') else { continue };
            let Some(name) = line.get(space + 3..) else { continue };
            let name = name.split(|&b| b == b'\t').next().unwrap_or(name);
            let Some(&wanted) = names.iter().find(|n| n.len() == name.len() && n.as_bytes() == name) else { continue };
            let addr = std::str::from_utf8(&line[..space]).ok().and_then(|a| u64::from_str_radix(a, 16).ok());
            if let Some(a) = addr.filter(|a| *a != 0) {
                self.symbols.insert(a, wanted.into());
            }
        }
    }

    /// A timer callback's name as events carry it: named when [`Formats::name_functions`]
    /// knows its address, else the address in hex.
    pub fn function(&self, address: u64) -> Name {
        function_name(&self.symbols, address)
    }

    /// True when no event's layout is known.
    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }
}

fn function_name(symbols: &HashMap<u64, Name>, address: u64) -> Name {
    symbols.get(&address).cloned().unwrap_or_else(|| address_name(address))
}

/// An address as events print it: 16 hex digits.
pub(super) fn address_name(address: u64) -> Name {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut digits = [0u8; 16];
    for (i, d) in digits.iter_mut().enumerate() {
        *d = HEX[((address >> (60 - 4 * i)) & 0xf) as usize];
    }
    // Two timer events a period each name an address: no formatting machinery for them.
    std::str::from_utf8(&digits).map(Name::from).unwrap_or_default()
}

/// What one page held.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct PageEvents {
    /// The events, in the page's order (time order).
    pub events: Vec<Event>,
    /// Events the kernel lost before this page (overwritten or dropped), when it counted them;
    /// 1 when it only flagged the loss.
    pub lost: u64,
    /// Records this decoder did not understand (counted, never guessed at).
    pub undecoded: u64,
}

/// The native-endian u32 at `at`, if `b` holds it (also the BPF records' decoder's).
pub(super) fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// The native-endian u64 at `at`, if `b` holds it (also the BPF records' decoder's).
pub(super) fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// A C string in a fixed field: the bytes before the first NUL (all if none), lossily UTF-8.
pub(super) fn c_string(bytes: &[u8]) -> Name {
    let end = bytes.iter().position(|b| *b == 0).unwrap_or(bytes.len());
    Name::from_utf8_lossy(&bytes[..end])
}

/// A field as a signed integer (1, 2, 4 or 8 bytes, sign-extended by size).
fn int(data: &[u8], f: &Format, name: &str) -> Option<i64> {
    let &(off, size) = f.fields.get(name)?;
    let b = data.get(off..off + size)?;
    Some(match size {
        1 => b[0] as i8 as i64,
        2 => i16::from_ne_bytes(b.try_into().ok()?) as i64,
        4 => i32::from_ne_bytes(b.try_into().ok()?) as i64,
        8 => i64::from_ne_bytes(b.try_into().ok()?),
        _ => return None,
    })
}

/// A `char name[N]` field, or a `__data_loc char[]` one (offset and length in a u32).
fn text(data: &[u8], f: &Format, name: &str) -> Option<Name> {
    let &(off, size) = f.fields.get(name)?;
    // A 4-byte text field is a `__data_loc`: the string's offset and length.
    let bytes = if size == 4 {
        let loc = u32_at(data, off)?;
        let (at, len) = ((loc & 0xffff) as usize, (loc >> 16) as usize);
        data.get(at..at + len)?
    } else {
        data.get(off..off + size)?
    };
    Some(c_string(bytes))
}

/// A `prev_state` bit mask as the text stream prints it: `R`, `R+` (preempted), `S`, `D|…`.
pub fn switch_state(mask: i64) -> Name {
    const LETTERS: [&str; 8] = ["S", "D", "T", "t", "X", "Z", "P", "I"];
    let bits = mask & 0xff;
    match (bits, mask & 0x100 != 0) {
        (0, true) => return Name::const_new("R+"),
        (0, false) => return Name::const_new("R"),
        // The states a thread sleeps in, at every switch: named without building the name.
        (1, _) => return Name::const_new("S"),
        (2, _) => return Name::const_new("D"),
        _ => {}
    }
    let mut state = Name::default();
    for (_, l) in LETTERS.iter().enumerate().filter(|(i, _)| bits & (1 << i) != 0) {
        if !state.is_empty() {
            state.push('|');
        }
        state.push_str(l);
    }
    state
}

/// The softirq names by vector, as the kernel prints them.
pub const SOFTIRQS: [&str; 10] =
    ["HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU"];

/// One record's event, from its layout.
fn kind(f: &Format, data: &[u8], symbols: &HashMap<u64, Name>) -> Option<Kind> {
    let i = |n: &str| int(data, f, n);
    let s = |n: &str| text(data, f, n);
    let ptr = |n: &str| i(n).map(|v| address_name(v as u64));
    let function = |n: &str| i(n).map(|v| function_name(symbols, v as u64));
    Some(match f.name.as_str() {
        "sched_switch" => Kind::Switch {
            prev_pid: i("prev_pid")? as i32,
            prev_comm: s("prev_comm")?,
            prev_prio: i("prev_prio")? as i32,
            prev_state: switch_state(i("prev_state")?),
            next_pid: i("next_pid")? as i32,
            next_comm: s("next_comm")?,
            next_prio: i("next_prio")? as i32,
        },
        "sched_waking" => Kind::Waking { pid: i("pid")? as i32, comm: s("comm")?, prio: i("prio")? as i32 },
        "hrtimer_start" => Kind::HrtimerStart {
            timer: ptr("hrtimer")?,
            function: function("function")?,
            expires_ns: i("expires")?,
            softexpires_ns: i("softexpires")?,
            // HRTIMER_MODE_REL is bit 0 of the mode.
            relative: i("mode").is_some_and(|m| m & 1 != 0),
        },
        "hrtimer_expire_entry" => {
            Kind::HrtimerEntry { timer: ptr("hrtimer")?, function: function("function")?, now_ns: i("now") }
        }
        "hrtimer_expire_exit" => Kind::HrtimerExit,
        "sys_exit" => Kind::SysExit { nr: i("id")? },
        "sched_process_exit" => Kind::Exit { pid: i("pid")? as i32 },
        "sched_process_fork" => Kind::Fork { child_pid: i("child_pid")? as i32, child_comm: s("child_comm")? },
        "task_rename" => Kind::Rename { pid: i("pid")? as i32, comm: s("newcomm")? },
        "irq_handler_entry" => Kind::IrqEntry { irq: i("irq")? as u32, name: s("name")? },
        "irq_handler_exit" => Kind::IrqExit { irq: i("irq")? as u32 },
        "softirq_entry" | "softirq_exit" => {
            let name = Name::const_new(SOFTIRQS.get(i("vec")? as usize).copied().unwrap_or("?"));
            if f.name == "softirq_entry" {
                Kind::SoftirqEntry { name }
            } else {
                Kind::SoftirqExit { name }
            }
        }
        n if n.ends_with("_entry") && f.fields.contains_key("vector") => {
            Kind::VectorEntry { name: n.trim_end_matches("_entry").into() }
        }
        n if n.ends_with("_exit") && f.fields.contains_key("vector") => {
            Kind::VectorExit { name: n.trim_end_matches("_exit").into() }
        }
        n => Kind::Other { name: n.into() },
    })
}

/// Decodes one page read from CPU `cpu`'s `trace_pipe_raw`. `comms` names the tasks seen so far
/// (the binary stream carries the current task's pid, not its name) and learns from the page.
pub fn decode_page(page: &[u8], cpu: usize, formats: &Formats, comms: &mut HashMap<i32, Name>) -> PageEvents {
    let mut out = PageEvents::default();
    let (Some(mut ts), Some(commit)) = (u64_at(page, 0), u64_at(page, 8)) else { return out };
    let size = (commit & COMMIT_MASK) as usize;
    let end = (PAGE_HEADER + size).min(page.len());
    if commit & MISSED_EVENTS != 0 {
        out.lost = if commit & MISSED_STORED != 0 { u64_at(page, end).unwrap_or(1) } else { 1 };
    }
    let mut at = PAGE_HEADER;
    while at + 4 <= end {
        let Some(header) = u32_at(page, at) else { break };
        let (type_len, delta) = (header & 0x1f, (header >> 5) as u64);
        let (data_at, len) = match type_len {
            TYPE_PADDING => {
                if delta == 0 {
                    break;
                }
                let Some(len) = u32_at(page, at + 4) else { break };
                at += 4 + len as usize;
                continue;
            }
            TYPE_TIME_EXTEND | TYPE_TIME_STAMP => {
                let Some(high) = u32_at(page, at + 4) else { break };
                let value = ((high as u64) << 27) | delta;
                if type_len == TYPE_TIME_EXTEND {
                    ts += value;
                } else {
                    // An absolute stamp holds the low 59 bits of the time.
                    ts = (ts & !((1u64 << 59) - 1)) | value;
                }
                at += 8;
                continue;
            }
            0 => match u32_at(page, at + 4) {
                Some(len) if len >= 4 => (at + 8, (len as usize - 4 + 3) & !3),
                _ => break,
            },
            n => (at + 4, n as usize * 4),
        };
        ts += delta;
        at = data_at + len;
        let Some(data) = page.get(data_at..data_at + len) else { break };
        let id = data.get(0..2).map(|b| u16::from_ne_bytes([b[0], b[1]]));
        let (Some(f), Some(pid)) = (id.and_then(|id| formats.by_id.get(&id)), u32_at(data, 4)) else {
            out.undecoded += 1;
            continue;
        };
        let Some(kind) = kind(f, data, &formats.symbols) else {
            out.undecoded += 1;
            continue;
        };
        learn(comms, &kind);
        let pid = pid as i32;
        let comm = comms.get(&pid).cloned().unwrap_or_else(|| if pid == 0 { "<idle>".into() } else { Name::default() });
        out.events.push(Event { ts_ns: ts as i64, cpu, pid, comm, kind });
    }
    out
}

/// Remembers the task names an event shows.
fn learn(comms: &mut HashMap<i32, Name>, kind: &Kind) {
    match kind {
        Kind::Switch { prev_pid, prev_comm, next_pid, next_comm, .. } => {
            comms.insert(*prev_pid, prev_comm.clone());
            comms.insert(*next_pid, next_comm.clone());
        }
        Kind::Waking { pid, comm, .. } | Kind::Rename { pid, comm } => {
            comms.insert(*pid, comm.clone());
        }
        Kind::Fork { child_pid, child_comm } => {
            comms.insert(*child_pid, child_comm.clone());
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SWITCH: &str = "name: sched_switch\nID: 316\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
        \tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\
        \tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n\
        \tfield:int prev_prio;\toffset:28;\tsize:4;\tsigned:1;\n\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;\n\
        \tfield:char next_comm[16];\toffset:40;\tsize:16;\tsigned:0;\n\tfield:pid_t next_pid;\toffset:56;\tsize:4;\tsigned:1;\n\
        \tfield:int next_prio;\toffset:60;\tsize:4;\tsigned:1;\n";
    const EXIT: &str = "name: sys_exit\nID: 21\nformat:\n\tfield:long id;\toffset:8;\tsize:8;\tsigned:1;\n\
        \tfield:long ret;\toffset:16;\tsize:8;\tsigned:1;\n";

    fn record(id: u16, pid: i32, body: &[u8]) -> Vec<u8> {
        let mut d = id.to_ne_bytes().to_vec();
        d.extend([0, 0]);
        d.extend(pid.to_ne_bytes());
        d.extend(body);
        d
    }

    fn header(type_len: u32, delta: u32) -> [u8; 4] {
        (type_len | (delta << 5)).to_ne_bytes()
    }

    #[test]
    fn an_address_is_named_as_the_events_print_it_in_sixteen_hex_digits() {
        for a in [0u64, 1, 0xabc, 0xffff_8880_1234_5678, u64::MAX] {
            assert_eq!(address_name(a), format!("{a:016x}"));
        }
        assert_eq!(switch_state(1), "S");
        assert_eq!(switch_state(2 | 0x100), "D");
        assert_eq!(switch_state(0x100), "R+");
        assert_eq!(switch_state(3), "S|D");
    }

    #[test]
    fn a_page_gives_each_event_its_exact_nanosecond_through_deltas_and_time_extends() {
        let mut f = Formats::default();
        f.add(SWITCH);
        f.add(EXIT);
        let mut sw = vec![0u8; 56];
        sw[0..5].copy_from_slice(b"probe");
        sw[16..20].copy_from_slice(&77i32.to_ne_bytes());
        sw[20..24].copy_from_slice(&19i32.to_ne_bytes());
        sw[24..32].copy_from_slice(&1i64.to_ne_bytes());
        sw[32..38].copy_from_slice(b"kwork\0");
        sw[48..52].copy_from_slice(&5i32.to_ne_bytes());
        sw[52..56].copy_from_slice(&120i32.to_ne_bytes());
        let switch = record(316, 77, &sw);
        let mut body = 230i64.to_ne_bytes().to_vec();
        body.extend(0i64.to_ne_bytes());
        let exit = record(21, 77, &body);
        let mut data = Vec::new();
        // The switch: 64 bytes, too long for type_len (max 28 words): length word.
        data.extend(header(0, 7));
        data.extend(((switch.len() + 4) as u32).to_ne_bytes());
        data.extend(&switch);
        // A time extend of 2^27 + 3 ns, then the exit 5 ns later (6 words: type_len 6).
        data.extend(header(TYPE_TIME_EXTEND, 3));
        data.extend(1u32.to_ne_bytes());
        data.extend(header((exit.len() / 4) as u32, 5));
        data.extend(&exit);
        let mut page = 1_000_000_000u64.to_ne_bytes().to_vec();
        page.extend((data.len() as u64).to_ne_bytes());
        page.extend(&data);
        page.resize(4096, 0);
        let mut comms = HashMap::new();
        let got = decode_page(&page, 1, &f, &mut comms);
        assert_eq!(got.events.len(), 2, "{got:?}");
        assert_eq!((got.lost, got.undecoded), (0, 0));
        let (a, b) = (&got.events[0], &got.events[1]);
        assert_eq!(a.ts_ns, 1_000_000_007);
        assert_eq!(
            a.kind,
            Kind::Switch {
                prev_pid: 77,
                prev_comm: "probe".into(),
                prev_prio: 19,
                prev_state: "S".into(),
                next_pid: 5,
                next_comm: "kwork".into(),
                next_prio: 120
            }
        );
        assert_eq!(b.ts_ns, 1_000_000_007 + (1 << 27) + 3 + 5);
        assert_eq!((b.pid, b.comm.as_str(), b.cpu, &b.kind), (77, "probe", 1, &Kind::SysExit { nr: 230 }));
    }

    #[test]
    fn lost_events_flagged_on_a_page_are_counted_and_unknown_records_are_not_guessed() {
        let f = Formats::default();
        let mut page = 5u64.to_ne_bytes().to_vec();
        let mut data = header(2, 1).to_vec();
        data.extend(record(9, 1, &[]));
        page.extend((data.len() as u64 | MISSED_EVENTS | MISSED_STORED).to_ne_bytes());
        page.extend(&data);
        page.extend(42u64.to_ne_bytes());
        let got = decode_page(&page, 0, &f, &mut HashMap::new());
        assert_eq!((got.events.len(), got.lost, got.undecoded), (0, 42, 1));
    }

    #[test]
    fn states_read_as_the_text_stream_prints_them() {
        assert_eq!(switch_state(0), "R");
        assert_eq!(switch_state(0x100), "R+");
        assert_eq!(switch_state(1), "S");
        assert_eq!(switch_state(2), "D");
        assert_eq!(switch_state(0x81), "S|I");
    }
}
