//! What kind of filesystem a path lives on: the kernel's pseudo-filesystems hold files that
//! look regular but block on read or never end (`trace_pipe`, `/proc/kmsg`).

use std::path::Path;

/// The kernel pseudo-filesystem `path` lives on (`proc`, `sysfs`, `tracefs`, …), or `None` for
/// an ordinary one (or when it cannot be told).
pub fn pseudo_filesystem(path: &Path) -> Option<&'static str> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: statfs is plain data, filled by the call.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: a NUL-terminated path and a writable struct.
    if unsafe { libc::statfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    // The magic numbers of linux/magic.h.
    match st.f_type as u64 {
        0x9fa0 => Some("proc"),
        0x6265_6572 => Some("sysfs"),
        0x7472_6163 => Some("tracefs"),
        0x6462_6720 => Some("debugfs"),
        0x7363_6673 => Some("securityfs"),
        0x6367_7270 => Some("cgroup2"),
        0x0027_e0eb => Some("cgroup"),
        0xcafe_4a11 => Some("bpf"),
        0x6e73_6673 => Some("nsfs"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_and_sys_are_pseudo_filesystems_and_a_temporary_directory_is_not() {
        assert_eq!(pseudo_filesystem(Path::new("/proc/self/status")), Some("proc"));
        assert_eq!(pseudo_filesystem(Path::new("/sys/kernel")), Some("sysfs"));
        assert_eq!(pseudo_filesystem(&std::env::temp_dir()), None);
    }
}
