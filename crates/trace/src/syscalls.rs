//! System calls by the numbers the kernel's `raw_syscalls` events carry: what a watched thread
//! blocked in (`rtlab watch` names it), and which calls are an event loop's wait for its
//! descriptors. The numbers are the *kernel's* (a thread traced on an x86_64 kernel carries
//! x86_64 numbers whatever rtlab was built for, e.g. under qemu-user), so the table is chosen
//! by the running kernel's machine, not by rtlab's build.

/// The system call tables rtlab knows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Arch {
    /// x86_64's own table (`arch/x86/entry/syscalls/syscall_64.tbl`).
    #[default]
    X86_64,
    /// The generic table arm64 uses (`include/uapi/asm-generic/unistd.h`).
    Aarch64,
    /// A machine whose numbers rtlab does not know: calls are shown by number.
    Unknown,
}

impl Arch {
    /// The table of a kernel whose `uname -m` is `machine`.
    pub fn of_machine(machine: &str) -> Arch {
        match machine {
            "x86_64" => Arch::X86_64,
            "aarch64" | "arm64" => Arch::Aarch64,
            _ => Arch::Unknown,
        }
    }

    fn table(self) -> &'static [(i64, &'static str)] {
        match self {
            Arch::X86_64 => X86_64,
            Arch::Aarch64 => AARCH64,
            Arch::Unknown => &[],
        }
    }

    /// The name of call `nr`, if it is one a thread blocks in or an event loop is built on.
    pub fn name(self, nr: i64) -> Option<&'static str> {
        self.table().iter().find(|(n, _)| *n == nr).map(|(_, name)| *name)
    }

    /// How a report names call `nr`: its name, or `syscall N`.
    pub fn describe(self, nr: i64) -> String {
        self.name(nr).map_or_else(|| format!("syscall {nr}"), str::to_string)
    }

    /// True when `nr` waits for descriptors or messages (an event loop's wait: `epoll_wait`,
    /// `poll`, `select`, `read`, `recvmsg`, …) rather than for a lock or a time.
    pub fn waits_for_input(self, nr: i64) -> bool {
        self.name(nr).is_some_and(|n| WAITS.contains(&n))
    }

    /// The call number of `name` in this table (tests and fixtures).
    pub fn number(self, name: &str) -> Option<i64> {
        self.table().iter().find(|(_, n)| *n == name).map(|(nr, _)| *nr)
    }
}

/// The calls an event loop waits in.
const WAITS: &[&str] = &[
    "read",
    "readv",
    "pread64",
    "poll",
    "ppoll",
    "select",
    "pselect6",
    "epoll_wait",
    "epoll_pwait",
    "epoll_pwait2",
    "recvfrom",
    "recvmsg",
    "recvmmsg",
    "accept",
    "accept4",
    "msgrcv",
    "mq_timedreceive",
    "rt_sigtimedwait",
    "io_getevents",
    "io_uring_enter",
];

const X86_64: &[(i64, &str)] = &[
    (0, "read"),
    (1, "write"),
    (2, "open"),
    (3, "close"),
    (7, "poll"),
    (9, "mmap"),
    (10, "mprotect"),
    (11, "munmap"),
    (12, "brk"),
    (16, "ioctl"),
    (17, "pread64"),
    (18, "pwrite64"),
    (19, "readv"),
    (20, "writev"),
    (23, "select"),
    (24, "sched_yield"),
    (26, "msync"),
    (34, "pause"),
    (35, "nanosleep"),
    (42, "connect"),
    (43, "accept"),
    (44, "sendto"),
    (45, "recvfrom"),
    (46, "sendmsg"),
    (47, "recvmsg"),
    (61, "wait4"),
    (70, "msgrcv"),
    (72, "fcntl"),
    (73, "flock"),
    (74, "fsync"),
    (75, "fdatasync"),
    (128, "rt_sigtimedwait"),
    (130, "rt_sigsuspend"),
    (202, "futex"),
    (208, "io_getevents"),
    (220, "semtimedop"),
    (228, "clock_gettime"),
    (230, "clock_nanosleep"),
    (232, "epoll_wait"),
    (243, "mq_timedreceive"),
    (247, "waitid"),
    (257, "openat"),
    (270, "pselect6"),
    (271, "ppoll"),
    (281, "epoll_pwait"),
    (286, "timerfd_settime"),
    (288, "accept4"),
    (299, "recvmmsg"),
    (318, "getrandom"),
    (426, "io_uring_enter"),
    (441, "epoll_pwait2"),
    (449, "futex_waitv"),
];

const AARCH64: &[(i64, &str)] = &[
    (4, "io_getevents"),
    (21, "epoll_ctl"),
    (22, "epoll_pwait"),
    (25, "fcntl"),
    (29, "ioctl"),
    (32, "flock"),
    (56, "openat"),
    (57, "close"),
    (63, "read"),
    (64, "write"),
    (65, "readv"),
    (66, "writev"),
    (67, "pread64"),
    (68, "pwrite64"),
    (72, "pselect6"),
    (73, "ppoll"),
    (82, "fsync"),
    (83, "fdatasync"),
    (86, "timerfd_settime"),
    (95, "waitid"),
    (98, "futex"),
    (101, "nanosleep"),
    (113, "clock_gettime"),
    (115, "clock_nanosleep"),
    (124, "sched_yield"),
    (133, "rt_sigsuspend"),
    (137, "rt_sigtimedwait"),
    (183, "mq_timedreceive"),
    (188, "msgrcv"),
    (192, "semtimedop"),
    (202, "accept"),
    (203, "connect"),
    (206, "sendto"),
    (207, "recvfrom"),
    (211, "sendmsg"),
    (212, "recvmsg"),
    (214, "brk"),
    (215, "munmap"),
    (222, "mmap"),
    (226, "mprotect"),
    (227, "msync"),
    (242, "accept4"),
    (243, "recvmmsg"),
    (260, "wait4"),
    (278, "getrandom"),
    (426, "io_uring_enter"),
    (441, "epoll_pwait2"),
    (449, "futex_waitv"),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kernels_machine_picks_the_table_and_unknown_calls_are_shown_by_number() {
        assert_eq!(Arch::of_machine("x86_64").name(230), Some("clock_nanosleep"));
        assert_eq!(Arch::of_machine("aarch64").name(115), Some("clock_nanosleep"));
        assert_eq!(Arch::of_machine("aarch64").name(230), None);
        assert_eq!(Arch::of_machine("riscv64").describe(98), "syscall 98");
        assert_eq!(Arch::X86_64.describe(202), "futex");
    }

    #[test]
    fn descriptor_waits_are_an_event_loops_and_locks_and_sleeps_are_not() {
        for arch in [Arch::X86_64, Arch::Aarch64] {
            for name in ["epoll_pwait", "read", "ppoll", "recvmsg"] {
                assert!(arch.waits_for_input(arch.number(name).unwrap()), "{arch:?} {name}");
            }
            for name in ["futex", "clock_nanosleep", "nanosleep", "write"] {
                assert!(!arch.waits_for_input(arch.number(name).unwrap()), "{arch:?} {name}");
            }
        }
    }

    #[test]
    fn each_table_names_each_number_once() {
        for t in [X86_64, AARCH64] {
            let mut nrs: Vec<i64> = t.iter().map(|(n, _)| *n).collect();
            nrs.sort_unstable();
            nrs.dedup();
            assert_eq!(nrs.len(), t.len());
        }
    }
}
