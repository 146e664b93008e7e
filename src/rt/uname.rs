//! The running kernel's identity (`uname(2)`): what a trace's numbers mean depends on it, not
//! on what rtlab was built for (an aarch64 build under qemu-user traces an x86_64 kernel).

/// The kernel's machine (`uname -m`: `x86_64`, `aarch64`, …), if the call answers.
pub fn machine() -> Option<String> {
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
        let m = super::machine().expect("uname answers");
        assert!(!m.is_empty() && m.is_ascii(), "{m:?}");
    }
}
