//! The running kernel's machine: what a trace's numbers mean depends on it, not on what rtlab
//! was built for (an aarch64 build under qemu-user traces an x86_64 kernel).

/// The running kernel's machine (`x86_64`, `aarch64`, …): `/proc/sys/kernel/arch`, which an
/// emulator passes through from the kernel, else `uname(2)` (which qemu-user answers with the
/// emulated machine).
pub fn kernel() -> Option<String> {
    let arch = std::fs::read_to_string("/proc/sys/kernel/arch").ok().map(|s| s.trim().to_string());
    arch.filter(|a| !a.is_empty()).or_else(uname_machine)
}

/// `uname -m`, if the call answers.
fn uname_machine() -> Option<String> {
    // SAFETY: uname fills the struct it is given; a zeroed utsname is a valid one.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    if unsafe { libc::uname(&mut u) } != 0 {
        return None;
    }
    // SAFETY: the kernel NUL-terminates each field within its array.
    let m = unsafe { std::ffi::CStr::from_ptr(u.machine.as_ptr()) };
    Some(m.to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_kernels_machine_is_named() {
        let m = super::kernel().expect("the kernel names its machine");
        assert!(!m.is_empty() && m.is_ascii(), "{m:?}");
    }
}
