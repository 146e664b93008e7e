//! CPU sets (`0`, `1,3`, `0-3,6`): parsing, formatting, online CPUs and thread affinity.

use std::fmt;
use std::io;

/// A set of CPU numbers, kept sorted and without duplicates.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct CpuSet(Vec<usize>);

/// The largest CPU number rtlab accepts in a set (the kernel's `cpu_set_t` holds 1024).
pub const MAX_CPU: usize = 1023;

impl CpuSet {
    /// A set from any list of CPU numbers.
    pub fn from_cpus(cpus: impl IntoIterator<Item = usize>) -> CpuSet {
        let mut v: Vec<usize> = cpus.into_iter().collect();
        v.sort_unstable();
        v.dedup();
        CpuSet(v)
    }

    /// Parses the kernel's list format: comma-separated CPUs and inclusive ranges
    /// (`0-3,6`), optionally with a stride (`0-7:2`). Whitespace around items is ignored.
    pub fn parse(text: &str) -> Result<CpuSet, String> {
        let t = text.trim();
        if t.is_empty() {
            return Err("the CPU set is empty: give CPUs such as 0, 1,3 or 0-3".into());
        }
        let mut cpus = Vec::new();
        for item in t.split(',') {
            let item = item.trim();
            let bad = || format!("invalid CPU set '{text}': '{item}' is not a CPU or a range such as 0-3");
            if item.is_empty() {
                return Err(bad());
            }
            let (range, stride) = match item.split_once(':') {
                Some((r, s)) => (r, s.trim().parse::<usize>().ok().filter(|s| *s > 0).ok_or_else(bad)?),
                None => (item, 1),
            };
            let (lo, hi) = match range.split_once('-') {
                Some((a, b)) => (parse_cpu(a).ok_or_else(bad)?, parse_cpu(b).ok_or_else(bad)?),
                None => {
                    let c = parse_cpu(range).ok_or_else(bad)?;
                    (c, c)
                }
            };
            if lo > hi {
                return Err(format!("invalid CPU set '{text}': range '{item}' runs backwards; write {hi}-{lo}"));
            }
            if hi > MAX_CPU {
                return Err(format!("invalid CPU set '{text}': CPU {hi} is above the limit of {MAX_CPU}"));
            }
            cpus.extend((lo..=hi).step_by(stride));
        }
        Ok(CpuSet::from_cpus(cpus))
    }

    /// The CPUs, ascending.
    pub fn cpus(&self) -> &[usize] {
        &self.0
    }

    /// Number of CPUs in the set.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True when the set holds no CPU.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// True when `cpu` is in the set.
    pub fn contains(&self, cpu: usize) -> bool {
        self.0.binary_search(&cpu).is_ok()
    }

    /// The CPUs of `self` that are not in `other`.
    pub fn difference(&self, other: &CpuSet) -> CpuSet {
        CpuSet(self.0.iter().copied().filter(|c| !other.contains(*c)).collect())
    }
}

fn parse_cpu(s: &str) -> Option<usize> {
    let s = s.trim();
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

impl fmt::Display for CpuSet {
    /// Formats in the kernel's compact list format (`0-3,6`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        let mut i = 0;
        while i < self.0.len() {
            let start = self.0[i];
            let mut end = start;
            while i + 1 < self.0.len() && self.0[i + 1] == end + 1 {
                i += 1;
                end = self.0[i];
            }
            if !first {
                f.write_str(",")?;
            }
            first = false;
            if end == start {
                write!(f, "{start}")?;
            } else {
                write!(f, "{start}-{end}")?;
            }
            i += 1;
        }
        Ok(())
    }
}

/// The CPUs the kernel reports online (`/sys/devices/system/cpu/online`), falling back to
/// the calling thread's affinity mask when sysfs is not readable.
pub fn online_cpus() -> CpuSet {
    std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|s| CpuSet::parse(&s).ok())
        .or_else(|| current_thread().ok())
        .unwrap_or_else(|| CpuSet::from_cpus([0]))
}

/// Restricts the calling thread to `set`.
pub fn set_current_thread(set: &CpuSet) -> io::Result<()> {
    // SAFETY: cpu_set_t is plain data; all-zero is the empty set.
    let mut mask: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &c in set.cpus() {
        // SAFETY: c <= MAX_CPU < CPU_SETSIZE, checked by CpuSet::parse / callers.
        unsafe { libc::CPU_SET(c, &mut mask) };
    }
    // SAFETY: `mask` is a valid cpu_set_t of the size passed; pid 0 is the calling thread.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mask) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The calling thread's CPU affinity mask.
pub fn current_thread() -> io::Result<CpuSet> {
    // SAFETY: cpu_set_t is plain data; all-zero is the empty set.
    let mut mask: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `mask` is writable and of the size passed; pid 0 is the calling thread.
    let rc = unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut mask) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `mask` was filled by the kernel; CPU_ISSET only reads it.
    Ok(CpuSet::from_cpus((0..=MAX_CPU).filter(|&c| unsafe { libc::CPU_ISSET(c, &mask) })))
}

/// The CPU the calling thread is running on right now (`sched_getcpu`).
pub fn current_cpu() -> Option<usize> {
    // SAFETY: sched_getcpu takes no arguments and only returns a number.
    let c = unsafe { libc::sched_getcpu() };
    usize::try_from(c).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_ranges_and_strides_parse_into_sorted_sets() {
        assert_eq!(CpuSet::parse("0").unwrap().cpus(), &[0]);
        assert_eq!(CpuSet::parse("3,1").unwrap().cpus(), &[1, 3]);
        assert_eq!(CpuSet::parse("0-3,6").unwrap().cpus(), &[0, 1, 2, 3, 6]);
        assert_eq!(CpuSet::parse(" 0-7:2 ").unwrap().cpus(), &[0, 2, 4, 6]);
        assert_eq!(CpuSet::parse("2,2,1-2").unwrap().cpus(), &[1, 2]);
    }

    #[test]
    fn malformed_sets_are_rejected_with_the_offending_item() {
        for bad in ["", " ", "a", "1,", "-1", "3-1", "1-", "0-3:0", "1;2", "+1", "2000"] {
            let e = CpuSet::parse(bad).unwrap_err();
            assert!(!e.is_empty(), "{bad}");
        }
        assert!(CpuSet::parse("3-1").unwrap_err().contains("1-3"));
    }

    #[test]
    fn formatting_compacts_runs_into_ranges() {
        assert_eq!(CpuSet::from_cpus([0, 1, 2, 3, 6, 8, 9]).to_string(), "0-3,6,8-9");
        assert_eq!(CpuSet::from_cpus([5]).to_string(), "5");
        assert_eq!(CpuSet::default().to_string(), "");
    }

    #[test]
    fn the_calling_thread_may_run_on_at_least_one_online_cpu() {
        let mask = current_thread().unwrap();
        assert!(!mask.is_empty());
        assert!(mask.cpus().iter().any(|c| online_cpus().contains(*c)));
    }

    proptest::proptest! {
        #[test]
        fn formatting_then_parsing_gives_back_the_same_set(cpus in proptest::collection::vec(0usize..200, 1..40)) {
            let set = CpuSet::from_cpus(cpus);
            proptest::prop_assert_eq!(CpuSet::parse(&set.to_string()).unwrap(), set);
        }
    }
}
