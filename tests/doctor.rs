//! `rtlab doctor`: fake /proc and /sys trees (a tuned PREEMPT_RT machine, an untuned desktop,
//! a VM with steal, a container without rights, an Arm machine, unreadable files) read through
//! the hidden --sysroot, and the real machine (structure only).

mod common;

use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A fake machine: files under a temporary root.
struct Tree {
    dir: tempfile::TempDir,
}

impl Tree {
    fn new() -> Tree {
        Tree { dir: tempfile::tempdir().unwrap() }
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }

    fn put(&self, path: &str, content: &str) -> &Tree {
        self.bytes(path, content.as_bytes())
    }

    fn bytes(&self, path: &str, content: &[u8]) -> &Tree {
        let p = self.root().join(path.trim_start_matches('/'));
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, content).unwrap();
        self
    }

    fn gz(&self, path: &str, content: &str) -> &Tree {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(content.as_bytes()).unwrap();
        self.bytes(path, &e.finish().unwrap())
    }

    /// `/proc/interrupts` and the affinity of each IRQ: `(irq, counts per CPU, device, affinity)`.
    fn interrupts(&self, ncpu: usize, irqs: &[(u32, &[u64], &str, &str)], ipis: &[u64]) -> &Tree {
        let mut t: String = (0..ncpu).map(|c| format!("       CPU{c}")).collect::<String>() + "\n";
        for (irq, counts, dev, aff) in irqs {
            t += &format!(
                "{irq:>4}:{}  PCI-MSIX-0000:00:02.0   1-edge      {dev}\n",
                counts.iter().map(|c| format!("{c:>11}")).collect::<String>()
            );
            self.put(&format!("/proc/irq/{irq}/smp_affinity_list"), &format!("{aff}\n"));
            self.put(&format!("/proc/irq/{irq}/effective_affinity_list"), &format!("{aff}\n"));
        }
        for name in ["LOC", "RES", "CAL", "TLB"] {
            t += &format!("{name}:{}   interrupts\n", ipis.iter().map(|c| format!("{c:>11}")).collect::<String>());
        }
        self.put("/proc/interrupts", &t)
    }

    fn softirqs(&self, ncpu: usize, net_rx: &[u64]) -> &Tree {
        let mut t: String =
            "          ".to_string() + &(0..ncpu).map(|c| format!("  CPU{c}")).collect::<String>() + "\n";
        for name in ["HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "SCHED", "RCU"] {
            let row: Vec<u64> = if name == "NET_RX" { net_rx.to_vec() } else { vec![100; ncpu] };
            t += &format!("{name:>10}: {}\n", row.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(" "));
        }
        self.put("/proc/softirqs", &t)
    }

    /// `/proc/stat`: per CPU `(busy, idle, steal)` ticks.
    fn stat(&self, cpus: &[(u64, u64, u64)]) -> &Tree {
        let mut t = "cpu  1 0 1 1 0 0 0 0 0 0\n".to_string();
        for (i, (busy, idle, steal)) in cpus.iter().enumerate() {
            t += &format!("cpu{i} {busy} 0 0 {idle} 0 0 0 {steal} 0 0\n");
        }
        self.put("/proc/stat", &t)
    }

    fn path(&self) -> PathBuf {
        self.root().to_path_buf()
    }
}

const X86_CPUINFO: &str = "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Xeon\nflags\t\t: fpu tsc constant_tsc nonstop_tsc tsc_known_freq\n";

/// A machine set up as the tuning guides say: PREEMPT_RT, CPUs 2-3 isolated, tickless,
/// offloaded, IRQs and kthreads on 0-1, fixed frequency, no deep idle, no SMT, stalld.
fn tuned_rt() -> Tree {
    let t = Tree::new();
    t.put("/proc/sys/kernel/version", "#1 SMP PREEMPT_RT Debian 6.1.0-rt\n")
        .put("/sys/kernel/realtime", "1\n")
        .put("/proc/sys/kernel/osrelease", "6.1.0-rt-amd64\n")
        .put("/proc/sys/kernel/arch", "x86_64\n")
        .put(
            "/boot/config-6.1.0-rt-amd64",
            "CONFIG_HZ=1000\nCONFIG_NO_HZ_FULL=y\nCONFIG_HIGH_RES_TIMERS=y\nCONFIG_PREEMPT_RT=y\nCONFIG_PREEMPT_RCU=y\nCONFIG_RCU_BOOST=y\nCONFIG_RCU_NOCB_CPU=y\n",
        )
        .put("/proc/cmdline", "BOOT_IMAGE=/vmlinuz isolcpus=managed_irq,domain,2-3 nohz_full=2-3 rcu_nocbs=2-3 irqaffinity=0-1 workqueue.unbound_cpus=0-1\n")
        .put("/proc/timer_list", &(0..4).map(|c| format!("cpu: {c}\n  .resolution: 1 nsecs\n  .hres_active    : 1\n")).collect::<String>())
        .put("/sys/devices/system/clocksource/clocksource0/current_clocksource", "tsc\n")
        .put("/sys/devices/system/clocksource/clocksource0/available_clocksource", "tsc hpet acpi_pm\n")
        .put("/proc/cpuinfo", X86_CPUINFO)
        .put("/sys/devices/system/cpu/online", "0-3\n")
        .put("/sys/devices/system/cpu/isolated", "2-3\n")
        .put("/sys/devices/system/cpu/nohz_full", "2-3\n")
        .put("/proc/irq/default_smp_affinity", "3\n")
        .put("/sys/devices/virtual/workqueue/cpumask", "3\n")
        .put("/proc/self/cgroup", "0::/\n")
        .put("/sys/fs/cgroup/cpuset.cpus.effective", "0-3\n")
        .put("/proc/sys/kernel/timer_migration", "0\n")
        .put("/sys/kernel/rcu_expedited", "0\n")
        .put("/sys/kernel/rcu_normal", "1\n")
        .interrupts(4, &[(24, &[100, 5, 0, 0], "eth0", "0-1"), (25, &[7, 0, 0, 0], "nvme0q0", "0")], &[1000, 1000, 1000, 1000])
        .softirqs(4, &[50, 50, 0, 0])
        .stat(&[(10, 100, 0), (10, 100, 0), (100, 10, 0), (100, 10, 0)])
        .put("/proc/1/comm", "systemd\n")
        .put("/proc/500/comm", "stalld\n")
        .put("/sys/devices/system/cpu/intel_pstate/no_turbo", "1\n")
        .put("/sys/devices/system/cpu/intel_pstate/status", "passive\n")
        .put("/sys/devices/system/cpu/cpuidle/current_driver", "intel_idle\n")
        .bytes("/dev/cpu_dma_latency", &0i32.to_ne_bytes())
        .put("/sys/devices/system/cpu/smt/control", "off\n")
        .put("/sys/devices/system/cpu/smt/active", "0\n")
        .put("/proc/sys/kernel/sched_rt_runtime_us", "-1\n")
        .put("/proc/sys/kernel/sched_rt_period_us", "1000000\n")
        .put("/proc/sys/kernel/sched_autogroup_enabled", "0\n")
        .put("/sys/kernel/mm/transparent_hugepage/enabled", "always madvise [never]\n")
        .put("/sys/kernel/mm/transparent_hugepage/defrag", "always defer defer+madvise madvise [never]\n")
        .put("/sys/kernel/mm/ksm/run", "0\n")
        .put("/proc/sys/kernel/numa_balancing", "0\n")
        .put("/proc/meminfo", "MemTotal: 16000000 kB\nSwapTotal: 0 kB\nSwapFree: 0 kB\n")
        .put("/proc/sys/vm/stat_interval", "10\n")
        .put("/proc/sys/kernel/watchdog", "0\n")
        .put("/proc/sys/kernel/nmi_watchdog", "0\n")
        .put("/proc/self/status", "Name:\trtlab\nUid:\t0\t0\t0\t0\nCapEff:\t000001ffffffffff\n")
        .put("/proc/self/limits", "Limit                     Soft Limit           Hard Limit           Units\nMax locked memory         unlimited            unlimited            bytes\nMax realtime priority     99                   99\n");
    for c in 0..4 {
        let cpu = format!("/sys/devices/system/cpu/cpu{c}");
        t.put(&format!("{cpu}/cpufreq/scaling_governor"), "performance\n")
            .put(&format!("{cpu}/cpufreq/scaling_min_freq"), "3000000\n")
            .put(&format!("{cpu}/cpufreq/scaling_max_freq"), "3000000\n")
            .put(&format!("{cpu}/cpufreq/cpuinfo_max_freq"), "3500000\n")
            .put(&format!("{cpu}/cpufreq/scaling_driver"), "intel_cpufreq\n")
            .put(&format!("{cpu}/topology/thread_siblings_list"), &format!("{c}\n"))
            .put(&format!("{cpu}/cpuidle/state0/name"), "POLL\n")
            .put(&format!("{cpu}/cpuidle/state0/latency"), "0\n")
            .put(&format!("{cpu}/cpuidle/state0/disable"), "0\n")
            .put(&format!("{cpu}/cpuidle/state1/name"), "C6\n")
            .put(&format!("{cpu}/cpuidle/state1/latency"), "133\n")
            .put(&format!("{cpu}/cpuidle/state1/disable"), "0\n")
            .put(&format!("/sys/kernel/debug/sched/fair_server/cpu{c}/runtime"), "0\n")
            .put(&format!("/sys/kernel/debug/sched/fair_server/cpu{c}/period"), "1000000000\n")
            .put(&format!("/sys/devices/system/machinecheck/machinecheck{c}/check_interval"), "0\n");
        let mut msr = vec![0u8; 0x40];
        msr[0x34..0x3c].copy_from_slice(&7u64.to_ne_bytes());
        t.bytes(&format!("/dev/cpu/{c}/msr"), &msr);
    }
    t
}

/// `rtlab doctor --sysroot ROOT ARGS --json -`: the report and the exit code.
fn doctor(root: &Path, args: &[&str]) -> (Value, i32) {
    let out =
        common::rtlab().arg("doctor").arg("--sysroot").arg(root).args(args).args(["--json", "-"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    let v: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    valid(&v);
    (v, out.status.code().unwrap())
}

/// The report follows docs/schemas/doctor.schema.json, and its counts are its checks'.
fn valid(v: &Value) {
    let schema: Value =
        serde_json::from_str(&std::fs::read_to_string("docs/schemas/doctor.schema.json").unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator.iter_errors(v).map(|e| format!("{} at {}", e, e.instance_path)).collect();
    assert!(errors.is_empty(), "{errors:#?}");
    assert_eq!(v["schema"], "rtlab.doctor/1");
    let checks = v["checks"].as_array().unwrap();
    for s in ["ok", "warn", "fail", "unknown"] {
        assert_eq!(
            v["counts"][s].as_u64().unwrap() as usize,
            checks.iter().filter(|c| c["status"] == s).count(),
            "{s}"
        );
    }
    let mut ids: Vec<&str> = checks.iter().map(|c| c["id"].as_str().unwrap()).collect();
    ids.sort_unstable();
    let n = ids.len();
    ids.dedup();
    assert_eq!(ids.len(), n, "check ids are unique");
    for c in checks {
        assert!(!c["finding"].as_str().unwrap().is_empty(), "{c}");
        match c["status"].as_str().unwrap() {
            "warn" | "fail" => {
                assert!(c["fix"].is_string(), "a {} check says how to fix it: {c}", c["status"]);
                assert!(!c["consequence"].as_str().unwrap().is_empty(), "{c}");
                assert!(!c["evidence"].as_array().unwrap().is_empty(), "{c}");
            }
            "ok" => assert!(c["fix"].is_null(), "{c}"),
            _ => {}
        }
    }
}

fn check<'a>(v: &'a Value, id: &str) -> &'a Value {
    v["checks"].as_array().unwrap().iter().find(|c| c["id"] == id).unwrap_or_else(|| panic!("no check {id}"))
}

fn status(v: &Value, id: &str) -> String {
    check(v, id)["status"].as_str().unwrap().to_string()
}

#[test]
fn a_tuned_preempt_rt_machine_passes_every_check() {
    let t = tuned_rt();
    let (v, code) = doctor(t.root(), &["--cpus", "2-3", "--strict"]);
    let bad: Vec<String> = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["status"] != "ok")
        .map(|c| format!("{} {}: {}", c["id"], c["status"], c["finding"]))
        .collect();
    assert!(bad.is_empty(), "{bad:#?}");
    assert_eq!(code, 0);
    assert_eq!(v["cpus"], "2-3");
    // The areas the issue names are all there.
    for id in [
        "kernel.preempt",
        "kernel.hz",
        "kernel.nohz",
        "kernel.hrtimers",
        "kernel.clocksource",
        "kernel.tsc",
        "isolation.isolcpus",
        "isolation.nohz_full",
        "isolation.rcu_nocbs",
        "isolation.irqaffinity",
        "isolation.housekeeping",
        "isolation.cpuset",
        "isolation.timer_migration",
        "isolation.rcu",
        "interrupts.affinity",
        "interrupts.local",
        "interrupts.irqbalance",
        "interrupts.softirq",
        "power.governor",
        "power.frequency",
        "power.boost",
        "power.pstate",
        "power.idle",
        "power.smt",
        "sched.rt_throttling",
        "sched.fair_server",
        "sched.autogroup",
        "sched.rt_cgroup",
        "memory.thp",
        "memory.thp_defrag",
        "memory.ksm",
        "memory.numa_balancing",
        "memory.swap",
        "memory.stat_interval",
        "noise.watchdog",
        "noise.stalld",
        "noise.virtualization",
        "noise.steal",
        "noise.smi",
        "noise.mce",
        "rights.root",
        "rights.cap_sys_nice",
        "rights.memlock",
        "rights.container",
    ] {
        check(&v, id);
    }
    // Measuring the housekeeping CPUs instead finds their IRQs.
    let (v, code) = doctor(t.root(), &["--cpus", "0"]);
    assert_eq!(status(&v, "isolation.isolcpus"), "warn");
    assert_eq!(status(&v, "interrupts.affinity"), "warn");
    assert!(check(&v, "interrupts.affinity")["finding"].as_str().unwrap().contains("24 (eth0)"), "{v}");
    assert_eq!(code, 0, "warnings alone exit 0 without --strict");
}

#[test]
fn rcu_nocbs_is_read_in_every_form_the_kernel_takes() {
    let t = tuned_rt();
    t.put("/sys/devices/system/cpu/possible", "0-3\n");
    for (cmdline, expected) in [
        ("rcu_nocbs=all", "ok"),
        ("rcu_nocbs=2-N", "ok"),
        ("rcu_nocbs=0-3:1/2", "warn"), // CPUs 0 and 2: CPU 3 runs its own callbacks
        ("rcu_nocbs=N", "warn"),       // CPU 3 only
        ("rcu_nocbs", "warn"),         // nothing offloaded at boot
    ] {
        t.put("/proc/cmdline", &format!("BOOT_IMAGE=/vmlinuz isolcpus=managed_irq,domain,2-3 {cmdline}\n"));
        let (v, _) = doctor(t.root(), &["--cpus", "2-3"]);
        let c = check(&v, "isolation.rcu_nocbs");
        assert_eq!(c["status"], expected, "{cmdline}: {c:#}");
    }
    let (v, _) = doctor(t.root(), &["--cpus", "2-3"]);
    assert!(check(&v, "isolation.rcu_nocbs")["finding"].as_str().unwrap().contains("CPU 2-3 runs its own"));
    t.put("/proc/cmdline", "BOOT_IMAGE=/vmlinuz rcu_nocbs=0-3:1/2\n");
    let (v, _) = doctor(t.root(), &["--cpus", "2-3"]);
    assert!(check(&v, "isolation.rcu_nocbs")["finding"].as_str().unwrap().contains("CPU 3 runs its own"), "{v:#}");
}

#[test]
fn the_housekeeping_fix_names_mainline_parameters_only() {
    let t = tuned_rt();
    t.put("/sys/devices/virtual/workqueue/cpumask", "f\n");
    let (v, _) = doctor(t.root(), &["--cpus", "2-3"]);
    let c = check(&v, "isolation.housekeeping");
    assert_eq!(c["status"], "warn");
    let fix = c["fix"].as_str().unwrap();
    assert!(fix.contains("workqueue.unbound_cpus=0-1") && fix.contains("nohz_full="), "{fix}");
    assert!(!fix.contains("kthread_cpus"), "not a mainline parameter: {fix}");
}

#[test]
fn an_irq_allowed_on_a_measured_cpu_is_found_even_when_it_is_delivered_elsewhere() {
    let t = tuned_rt();
    // IRQ 25 is delivered to CPU 0 but allowed on every CPU: it may move to CPU 2 at any time.
    t.put("/proc/irq/25/smp_affinity_list", "0-3\n").put("/proc/irq/25/effective_affinity_list", "0\n");
    let (v, _) = doctor(t.root(), &["--cpus", "2-3"]);
    let c = check(&v, "interrupts.affinity");
    assert_eq!(c["status"], "warn", "{c:#}");
    assert!(c["finding"].as_str().unwrap().contains("25 (nvme0q0)"), "{c:#}");
}

#[test]
fn the_table_shows_status_evidence_consequence_and_fix() {
    let t = tuned_rt();
    t.put("/sys/kernel/mm/transparent_hugepage/enabled", "[always] madvise never\n");
    let out = common::rtlab().arg("doctor").arg("--sysroot").arg(t.root()).args(["--cpus", "2-3"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.starts_with("rtlab doctor: CPU 2-3"), "{text}");
    let thp = text.lines().position(|l| l.starts_with("warn") && l.contains("transparent hugepages")).expect(&text);
    let block: String = text.lines().skip(thp).take(8).collect::<Vec<_>>().join("\n");
    assert!(block.contains("read: /sys/kernel/mm/transparent_hugepage/enabled = [always] madvise never"), "{block}");
    assert!(block.contains("why:"), "{block}");
    assert!(block.contains("fix:  echo madvise > /sys/kernel/mm/transparent_hugepage/enabled"), "{block}");
    assert!(text.contains("0 fail · 1 warn · ") && text.trim_end().ends_with("· 0 unknown"), "{text}");
    // What to fix comes first, before the checks.
    let first = text.find("Fix these first:\n1. warn transparent hugepages").expect(&text);
    assert!(first < text.find("[kernel]").unwrap(), "{text}");
    // --strict turns the warning into exit 3.
    let (_, code) = doctor(t.root(), &["--cpus", "2-3", "--strict"]);
    assert_eq!(code, 3);
}

/// A desktop kernel and machine: voluntary preemption, nothing isolated, power saving on.
fn untuned_desktop() -> Tree {
    let t = tuned_rt();
    t.put("/proc/sys/kernel/version", "#1 SMP PREEMPT_DYNAMIC Debian 6.12\n")
        .put("/sys/kernel/realtime", "0\n")
        .put("/proc/sys/kernel/osrelease", "6.12.0-amd64\n")
        .gz("/proc/config.gz", "CONFIG_HZ=250\nCONFIG_NO_HZ_IDLE=y\nCONFIG_HIGH_RES_TIMERS=y\nCONFIG_PREEMPT_VOLUNTARY=y\nCONFIG_PREEMPT_DYNAMIC=y\nCONFIG_PREEMPT_RCU=y\n")
        .put("/proc/cmdline", "BOOT_IMAGE=/vmlinuz quiet splash\n")
        .put("/sys/devices/system/cpu/isolated", "\n")
        .put("/sys/devices/system/cpu/nohz_full", "(null)\n")
        .put("/proc/irq/default_smp_affinity", "f\n")
        .put("/sys/devices/virtual/workqueue/cpumask", "f\n")
        .put("/proc/sys/kernel/timer_migration", "1\n")
        .put("/proc/600/comm", "irqbalance\n")
        .put("/sys/devices/system/cpu/intel_pstate/no_turbo", "0\n")
        .put("/sys/devices/system/cpu/intel_pstate/status", "active\n")
        .bytes("/dev/cpu_dma_latency", &2_000_000_000i32.to_ne_bytes())
        .put("/sys/devices/system/cpu/smt/control", "on\n")
        .put("/sys/devices/system/cpu/smt/active", "1\n")
        .put("/sys/devices/system/cpu/cpu2/topology/thread_siblings_list", "0,2\n")
        .put("/proc/sys/kernel/sched_rt_runtime_us", "950000\n")
        .put("/proc/sys/kernel/sched_autogroup_enabled", "1\n")
        .put("/sys/kernel/mm/transparent_hugepage/enabled", "[always] madvise never\n")
        .put("/proc/meminfo", "SwapTotal: 8000000 kB\nSwapFree: 7000000 kB\n")
        .put("/proc/sys/vm/stat_interval", "1\n")
        .put("/proc/sys/kernel/watchdog", "1\n")
        .put("/proc/sys/kernel/nmi_watchdog", "1\n");
    std::fs::remove_file(t.root().join("proc/500/comm")).unwrap();
    for c in 0..4 {
        t.put(&format!("/sys/devices/system/cpu/cpu{c}/cpufreq/scaling_governor"), "powersave\n")
            .put(&format!("/sys/devices/system/cpu/cpu{c}/cpufreq/scaling_min_freq"), "800000\n")
            .put(&format!("/sys/kernel/debug/sched/fair_server/cpu{c}/runtime"), "50000000\n");
    }
    t
}

#[test]
fn a_kernel_configuration_that_inflates_without_end_is_read_in_bounded_memory() {
    // 256 MiB of text without a line break, 256 KiB compressed: a hostile sysroot's
    // config.gz. The doctor reads at most 8 MiB of any file's text.
    let t = untuned_desktop();
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let block = vec![b'A'; 1 << 20];
    for _ in 0..256 {
        e.write_all(&block).unwrap();
    }
    t.bytes("/proc/config.gz", &e.finish().unwrap());
    let (v, _) = doctor(t.root(), &["--cpus", "2"]);
    assert_eq!(check(&v, "kernel.hz")["status"], "unknown", "no option was found: {}", check(&v, "kernel.hz"));
    // SAFETY: getrusage fills a plain struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) };
    assert!(ru.ru_maxrss < 128 << 10, "a doctor held {} KiB at its peak", ru.ru_maxrss);
}

#[test]
fn a_dynamic_kernel_built_for_full_preemption_is_read_as_full_from_config_preempt() {
    // Kconfig's full preemption is CONFIG_PREEMPT=y (there is no CONFIG_PREEMPT_PREEMPT).
    let t = untuned_desktop();
    t.gz("/proc/config.gz", "CONFIG_HZ=250\nCONFIG_NO_HZ_IDLE=y\nCONFIG_HIGH_RES_TIMERS=y\nCONFIG_PREEMPT=y\nCONFIG_PREEMPT_DYNAMIC=y\nCONFIG_PREEMPT_RCU=y\n");
    let (v, _) = doctor(t.root(), &["--cpus", "2"]);
    let preempt = check(&v, "kernel.preempt");
    assert!(preempt["finding"].as_str().unwrap().contains("full"), "{preempt}");
    assert!(preempt["evidence"].to_string().contains("CONFIG_PREEMPT=y"), "{preempt}");
}

#[test]
fn an_untuned_desktop_fails_on_preemption_and_warns_on_power_memory_and_irqbalance() {
    let t = untuned_desktop();
    let (v, code) = doctor(t.root(), &["--cpus", "2"]);
    assert_eq!(code, 3, "a failing check exits 3");
    let preempt = check(&v, "kernel.preempt");
    assert_eq!(preempt["status"], "fail");
    assert!(preempt["finding"].as_str().unwrap().contains("voluntary"), "{preempt}");
    assert!(preempt["fix"].as_str().unwrap().contains("preempt=full"), "{preempt}");
    assert!(
        preempt["evidence"].to_string().contains("/proc/config.gz"),
        "the configuration is read from config.gz: {preempt}"
    );
    for id in [
        "isolation.isolcpus",
        "isolation.nohz_full",
        "isolation.rcu_nocbs",
        "isolation.irqaffinity",
        "isolation.housekeeping",
        "isolation.timer_migration",
        "interrupts.irqbalance",
        "power.governor",
        "power.frequency",
        "power.boost",
        "power.pstate",
        "power.idle",
        "power.smt",
        "sched.rt_throttling",
        "sched.fair_server",
        "sched.autogroup",
        "memory.thp",
        "memory.swap",
        "memory.stat_interval",
        "noise.watchdog",
    ] {
        assert_eq!(status(&v, id), "warn", "{id}: {}", check(&v, id));
    }
    assert!(check(&v, "power.idle")["finding"].as_str().unwrap().contains("C6 (exit latency 133 µs)"));
    assert!(
        check(&v, "isolation.irqaffinity")["fix"].as_str().unwrap().contains("irqaffinity=0-1,3"),
        "{}",
        check(&v, "isolation.irqaffinity")
    );
    assert!(check(&v, "power.smt")["finding"].as_str().unwrap().contains("CPU 2 with 0"));
    assert!(check(&v, "sched.fair_server")["finding"].as_str().unwrap().contains("50 ms of every 1000 ms"));
    assert_eq!(check(&v, "memory.swap")["finding"], "976 MiB of 7812 MiB swap in use");
}

#[test]
fn a_vm_with_steal_and_irq_traffic_is_caught_while_the_counters_are_sampled() {
    let t = tuned_rt();
    t.put("/proc/cpuinfo", &X86_CPUINFO.replace("nonstop_tsc", "nonstop_tsc hypervisor"))
        .put("/sys/hypervisor/type", "xen\n")
        .put("/sys/devices/system/cpu/cpu2/topology/thread_siblings_list", "2-3\n")
        .put("/sys/devices/system/cpu/smt/active", "1\n")
        .stat(&[(10, 100, 0), (10, 100, 0), (100, 10, 3), (100, 10, 0)]);
    let root = t.path();
    let stat = root.join("proc/stat");
    let past = std::time::SystemTime::now() - Duration::from_secs(60);
    let file = std::fs::File::options().write(true).open(&stat).unwrap();
    file.set_times(std::fs::FileTimes::new().set_accessed(past).set_modified(past)).unwrap();
    let child = std::process::Command::new(common::rtlab_path())
        .arg("doctor")
        .arg("--sysroot")
        .arg(&root)
        .args(["--cpus", "2", "--json", "-"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The doctor's first reading is done when it has read /proc/stat (the last file of its
    // snapshot): the file's access time, set in the past, moves then (relatime). A slow start
    // (a busy machine, qemu-user) must not find the second state already there.
    let read = |p: &Path| std::fs::metadata(p).is_ok_and(|m| m.accessed().unwrap() > past);
    let waited = Instant::now();
    while !read(&stat) {
        assert!(
            waited.elapsed() < Duration::from_secs(60),
            "the doctor never read {} (a noatime mount?)",
            stat.display()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    // Between the doctor's two readings: IRQ 24 fires 850 times on CPU 2, the host steals
    // 20 of CPU 2's 100 ticks, CPU 3 (its SMT sibling) is busy, and CPU 2 runs NET_RX.
    t.interrupts(
        4,
        &[(24, &[100, 5, 850, 0], "virtio0-input", "0-3"), (25, &[7, 0, 0, 0], "nvme0q0", "0")],
        &[1000, 1000, 1000, 1000],
    )
    .softirqs(4, &[50, 50, 300, 0])
    .stat(&[(10, 100, 0), (10, 100, 0), (170, 20, 23), (190, 20, 0)]);
    let out = child.wait_with_output().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    valid(&v);
    let s = v["sample_s"].as_f64().unwrap();
    assert!(s >= 1.0, "the counters are sampled for a second: {s}");
    let irq = check(&v, "interrupts.irq24");
    assert_eq!(irq["status"], "warn");
    assert_eq!(irq["alarm"], true);
    let expected = format!("CPU 2 receives IRQ 24 (virtio0-input) {:.0} times/s", 850.0 / s);
    assert_eq!(irq["finding"], expected.as_str());
    let steal = check(&v, "noise.steal");
    assert_eq!(steal["alarm"], true);
    assert_eq!(steal["finding"], "the host took 20.0% of CPU 2 during the sample", "{steal}");
    assert_eq!(check(&v, "power.smt")["finding"], "the sibling of CPU 2 (CPU 3) is busy 90% of the time");
    assert!(check(&v, "interrupts.softirq")["finding"].as_str().unwrap().starts_with("CPU 2 runs NET_RX"));
    let virt = check(&v, "noise.virtualization");
    assert_eq!(virt["status"], "warn");
    assert_eq!(virt["finding"], "a guest of xen");
}

#[test]
fn a_container_without_rights_says_what_it_cannot_do() {
    let t = tuned_rt();
    t.put("/.dockerenv", "")
        .put("/proc/self/status", "Name:\trtlab\nUid:\t1000\t1000\t1000\t1000\nCapEff:\t0000000000000000\n")
        .put("/proc/self/limits", "Limit                     Soft Limit           Hard Limit           Units\nMax locked memory         65536                65536                bytes\nMax realtime priority     0                    0\n")
        .put("/proc/self/cgroup", "0::/docker/abc\n")
        .put("/sys/fs/cgroup/docker/abc/cpuset.cpus.effective", "0-1\n");
    let (v, code) = doctor(t.root(), &["--cpus", "2-3"]);
    assert_eq!(code, 3);
    assert_eq!(status(&v, "rights.root"), "warn");
    assert_eq!(check(&v, "rights.cap_sys_nice")["finding"], "no CAP_SYS_NICE and RLIMIT_RTPRIO is 0");
    assert_eq!(status(&v, "rights.cap_sys_nice"), "fail");
    assert_eq!(check(&v, "rights.memlock")["finding"], "no CAP_IPC_LOCK; RLIMIT_MEMLOCK is 64 KiB");
    assert_eq!(check(&v, "rights.container")["finding"], "inside a docker container");
    let cpuset = check(&v, "isolation.cpuset");
    assert_eq!(cpuset["status"], "fail");
    assert_eq!(cpuset["finding"], "rtlab's cgroup may not run on CPU 2-3");
    assert!(cpuset["evidence"].to_string().contains("/sys/fs/cgroup/docker/abc/cpuset.cpus.effective"));
    // A cgroup path that climbs out of the tree is not followed.
    t.put("/proc/self/cgroup", "0::/../../etc\n");
    let (v, _) = doctor(t.root(), &["--cpus", "2-3"]);
    assert_eq!(status(&v, "isolation.cpuset"), "unknown");
}

#[test]
fn an_arm_machine_says_unknown_for_what_only_x86_has() {
    let t = tuned_rt();
    t.put("/proc/sys/kernel/arch", "aarch64\n")
        .put("/proc/cpuinfo", "processor\t: 0\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd\nCPU implementer\t: 0x41\n")
        .put("/sys/devices/system/clocksource/clocksource0/current_clocksource", "arch_sys_counter\n");
    for c in 0..4 {
        std::fs::remove_file(t.root().join(format!("dev/cpu/{c}/msr"))).unwrap();
        std::fs::remove_dir_all(t.root().join(format!("sys/devices/system/machinecheck/machinecheck{c}"))).unwrap();
    }
    std::fs::remove_dir_all(t.root().join("sys/devices/system/cpu/intel_pstate")).unwrap();
    let (v, code) = doctor(t.root(), &["--cpus", "2-3"]);
    assert_eq!(code, 0);
    // What Arm has instead: the generic timer for the TSC, no SMIs to count, no MCE polling.
    assert!(v["checks"].as_array().unwrap().iter().all(|c| c["id"] != "kernel.tsc"), "no TSC check on Arm");
    assert_eq!(status(&v, "kernel.arch_timer"), "ok");
    assert!(check(&v, "kernel.arch_timer")["finding"].as_str().unwrap().contains("generic timer"));
    assert_eq!(status(&v, "noise.smi"), "unknown");
    assert!(check(&v, "noise.smi")["finding"].as_str().unwrap().contains("no SMIs on Arm"));
    assert_eq!(status(&v, "noise.mce"), "ok");
    assert!(check(&v, "noise.mce")["finding"].as_str().unwrap().contains("no machine-check polling on Arm"));
    assert_eq!(status(&v, "kernel.clocksource"), "ok");
    assert_eq!(status(&v, "noise.virtualization"), "ok");
}

#[test]
fn unreadable_files_are_unknown_with_the_reason_never_a_guess() {
    let t = tuned_rt();
    for f in ["proc/cmdline", "proc/interrupts", "proc/sys/kernel/timer_migration", "proc/timer_list"] {
        let p = t.root().join(f);
        std::fs::remove_file(&p).unwrap();
        std::fs::create_dir(&p).unwrap();
    }
    std::fs::remove_file(t.root().join("boot/config-6.1.0-rt-amd64")).unwrap();
    let (v, _) = doctor(t.root(), &["--cpus", "2-3"]);
    let tm = check(&v, "isolation.timer_migration");
    assert_eq!(tm["status"], "unknown");
    assert_eq!(tm["finding"], "cannot read /proc/sys/kernel/timer_migration (is a directory)");
    assert_eq!(status(&v, "isolation.rcu_nocbs"), "unknown");
    assert_eq!(status(&v, "interrupts.affinity"), "unknown");
    assert_eq!(status(&v, "interrupts.local"), "unknown");
    let hz = check(&v, "kernel.hz");
    assert_eq!(hz["status"], "unknown");
    assert!(hz["finding"].as_str().unwrap().contains("/boot/config-6.1.0-rt-amd64 (does not exist)"), "{hz}");
    let hr = check(&v, "kernel.hrtimers");
    assert_eq!(hr["status"], "unknown", "{hr}");
}

#[test]
fn bad_cpus_and_outputs_are_refused_before_anything_is_read() {
    let t = tuned_rt();
    let root = t.root().to_str().unwrap();
    let e = common::refused(&["doctor", "--sysroot", root, "--cpus", "7"]);
    assert!(e.contains("--cpus 7: CPU 7 is not online (online: 0-3)"), "{e}");
    let e = common::refused(&["doctor", "--sysroot", root, "--cpus", "x"]);
    assert!(e.contains("--cpus x"), "{e}");
    let e = common::refused(&["doctor", "--json", "/nonexistent/dir/d.json"]);
    assert!(e.contains("/nonexistent/dir"), "{e}");
    let e = common::refused(&["doctor", "--sysroot", "/nonexistent"]);
    assert!(e.contains("--sysroot /nonexistent: not a directory"), "{e}");
}

#[test]
fn this_machine_is_examined_in_about_a_second_with_a_valid_report() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("doctor.json");
    let start = Instant::now();
    let out = common::rtlab().args(["doctor", "--json"]).arg(&json).output().unwrap();
    let took = start.elapsed();
    assert!(matches!(out.status.code(), Some(0 | 3)), "{out:?}");
    assert!(took >= Duration::from_secs(1), "counters are sampled for a second");
    assert!(took < Duration::from_secs(10), "the doctor does not hang: {took:?}");
    let v = common::read_json(&json);
    valid(&v);
    assert!(String::from_utf8_lossy(&out.stdout).contains(" ok · "));
    let exit = if v["counts"]["fail"].as_u64().unwrap() > 0 { 3 } else { 0 };
    assert_eq!(out.status.code(), Some(exit));
}

#[test]
fn an_unprivileged_user_gets_a_report_with_the_root_only_files_unknown() {
    if !common::is_root() {
        eprintln!("SKIPPED LOUDLY: this test drops root to show what an unprivileged user sees; run it as root");
        return;
    }
    let (mut cmd, _dir) = common::unprivileged("rtlab");
    let out = cmd.args(["doctor", "--json", "-"]).output().unwrap();
    assert!(matches!(out.status.code(), Some(0 | 3)), "{out:?}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    valid(&v);
    assert_eq!(status(&v, "rights.root"), "warn");
    let hr = check(&v, "kernel.hrtimers");
    assert!(hr["evidence"].to_string().contains("/proc/timer_list"), "{hr}");
    assert!(hr["evidence"].to_string().contains("permission denied"), "{hr}");
}

/// `rtlab run ARGS --sysroot ROOT --json FILE`, with `during` called while the doctor samples:
/// the result and stderr.
fn run_on(root: &Path, args: &[&str], during: impl FnOnce()) -> (Value, String) {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let child = std::process::Command::new(common::rtlab_path())
        .arg("run")
        .args(args)
        .arg("--sysroot")
        .arg(root)
        .arg("--json")
        .arg(&json)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(400));
    during();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(matches!(out.status.code(), Some(0 | 3)), "{err}");
    let v = common::read_json(&json);
    common::assert_valid_run_result(&v);
    (v, err)
}

#[test]
fn a_run_records_the_findings_for_its_cpus_and_warns_about_an_irq_that_disturbs_them() {
    let t = tuned_rt();
    let (v, err) = run_on(t.root(), &["-t1", "-a1", "-i1ms", "-D", "2s", "-q"], || {
        t.interrupts(
            4,
            &[(24, &[100, 855, 0, 0], "virtio0-input", "0-3"), (25, &[7, 0, 0, 0], "nvme0q0", "0")],
            &[1000; 4],
        );
    });
    let d = &v["environment"]["doctor"];
    valid(d);
    assert_eq!(d["cpus"], "1", "the doctor examines the CPU the thread is pinned to");
    let irq = check(d, "interrupts.irq24");
    assert_eq!(irq["alarm"], true);
    let line = err
        .lines()
        .find(|l| l.starts_with("rtlab: warning: doctor: CPU 1 receives IRQ 24 (virtio0-input)"))
        .expect(&err);
    assert!(line.contains("times/s") && line.contains("fix: echo 0 > /proc/irq/24/smp_affinity_list"), "{line}");
    let w: Vec<&Value> = v["warnings"].as_array().unwrap().iter().filter(|w| w["kind"] == "machine_setup").collect();
    assert_eq!(w.len(), 1, "{w:?}");
    assert_eq!(w[0]["check"], "interrupts.irq24");
    // What is wrong but does not disturb the measured CPU now stays in the findings only.
    assert!(!err.contains("isolated"), "{err}");
}

#[test]
fn a_run_shorter_than_the_sample_records_findings_over_the_run() {
    let t = tuned_rt();
    let (v, _) = run_on(t.root(), &["-t1", "-a1", "-i1ms", "-l", "100", "-q"], || {});
    let d = &v["environment"]["doctor"];
    valid(d);
    let s = d["sample_s"].as_f64().unwrap();
    assert!(s > 0.0 && s < 1.0, "sampled over the 0.1 s run: {s}");
}

#[test]
fn compare_lists_the_findings_that_differ_and_the_report_shows_them() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.json"), dir.path().join("b.json"));
    let t = tuned_rt();
    for (file, thp) in [(&a, "always madvise [never]"), (&b, "[always] madvise never")] {
        t.put("/sys/kernel/mm/transparent_hugepage/enabled", thp);
        let out = common::rtlab()
            .args(["run", "-q", "-i", "1ms", "--simulate", "seed:3", "-l", "200", "--sysroot"])
            .arg(t.root())
            .arg("--json")
            .arg(file)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
    }
    let out = common::rtlab().arg("compare").args([&a, &b]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().find(|l| l.contains("doctor.memory.thp ")).unwrap_or_else(|| panic!("{text}"));
    assert!(line.contains("ok: never") && line.contains("warn: always"), "{line}");
    assert!(!text.contains("doctor.kernel.preempt"), "identical findings are not listed: {text}");
    let html = dir.path().join("r.html");
    let out = common::rtlab().arg("report").arg(&b).arg("-o").arg(&html).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("Machine setup (rtlab doctor)"), "the report has the findings");
    assert!(page.contains("transparent hugepages") && page.contains("echo madvise"), "worst first, with the fix");
}

#[test]
fn cyclictest_records_the_findings_with_rtlab_json_only() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("c.json");
    let out = common::rtlab()
        .args(["cyclictest", "-q", "-t1", "-a1", "-i1000", "-l200", "--rtlab-json"])
        .arg(&json)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let v = common::read_json(&json);
    let d = &v["environment"]["doctor"];
    valid(d);
    assert_eq!(d["cpus"], "1");
    let plain = common::rtlab()
        .args(["cyclictest", "-q", "-t1", "-a1", "-i1000", "-l50", "--json"])
        .arg(dir.path().join("p.json"))
        .output()
        .unwrap();
    assert!(plain.status.success());
    assert!(
        !String::from_utf8_lossy(&plain.stderr).contains("rtlab: warning: doctor:"),
        "cyclictest's own outputs carry no findings"
    );
}

#[test]
fn ctrl_c_ends_the_sample_early_and_every_output_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("d.json");
    let child = std::process::Command::new(common::rtlab_path())
        .args(["doctor", "--json"])
        .arg(&json)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let _ = std::process::Command::new("kill").args(["-INT", &child.id().to_string()]).status();
    let out = child.wait_with_output().unwrap();
    assert!(matches!(out.status.code(), Some(0 | 3)), "{out:?}");
    let v = common::read_json(&json);
    valid(&v);
    assert!(v["sample_s"].as_f64().unwrap() < 1.0, "the sample ended at Ctrl-C: {}", v["sample_s"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains(" ok · "), "the table is printed too");
}

#[test]
fn brief_leads_with_what_to_fix_and_ends_with_one_kernel_command_line_and_one_sysctl_block() {
    let t = untuned_desktop();
    let run = |args: &[&str]| {
        let out = common::rtlab()
            .arg("doctor")
            .arg("--sysroot")
            .arg(t.root())
            .args(args)
            .env("COLUMNS", "80")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(3));
        String::from_utf8(out.stdout).unwrap()
    };
    let text = run(&["--cpus", "2", "--brief"]);
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("rtlab doctor: CPU 2, ") && lines[0].contains(": 1 fail · "), "{text}");
    assert!(text.contains("\nFix these first:\n1. fail preemption model"), "{text}");
    assert!(!text.contains("[kernel]") && !text.contains("read: "), "--brief leaves the checks out: {text}");
    let cmdline = lines[lines.iter().position(|l| l.starts_with("Kernel command line")).expect(&text) + 2];
    for p in ["preempt=full", "isolcpus=managed_irq,domain,2", "nohz_full=2", "irqaffinity=0-1,3"] {
        assert!(cmdline.split_whitespace().any(|w| w == p), "{p} in {cmdline}");
    }
    let sysctl = &text[text.find("sysctl settings").expect(&text)..];
    for kv in ["kernel.timer_migration = 0", "kernel.sched_rt_runtime_us = -1", "vm.stat_interval = 10"] {
        assert!(sysctl.contains(&format!("\n  {kv}\n")), "{kv}: {sysctl}");
    }
    // Explanations wrap to the terminal; fixes and the command line stay whole to copy.
    let full = run(&["--cpus", "2"]);
    for l in full.lines().filter(|l| !l.trim_start().starts_with("fix:") && !l.starts_with("  ")) {
        assert!(l.chars().count() <= 80, "wider than the terminal: {l}");
    }
    // Without --cpus the housekeeping advice is said once, not in every fix.
    let all = run(&["--brief"]);
    assert_eq!(all.matches("name the CPUs your real-time").count(), 1, "{all}");
    assert!(!all.contains("unmeasured"), "{all}");
}

/// A Raspberry Pi 4 Model B running a PREEMPT_RT kernel, from the public layout of its /proc and
/// /sys (Raspberry Pi OS 12, a 6.6 -rt kernel): four Cortex-A72 cores, the generic timer as its
/// clocksource, cpufreq-dt with the ondemand governor, no cpuidle states (WFI only), no MSRs, no
/// machine-check devices, its kernel command line in `/boot/firmware/cmdline.txt`; CPUs 2-3
/// isolated, but not tickless.
fn raspberry_pi_4_rt() -> Tree {
    let t = tuned_rt();
    t.put("/proc/sys/kernel/arch", "aarch64\n")
        .put("/proc/sys/kernel/version", "#1 SMP PREEMPT_RT Thu Oct 10 12:00:00 UTC 2024\n")
        .put("/proc/sys/kernel/osrelease", "6.6.51-v8-rt+\n")
        .put(
            "/boot/config-6.6.51-v8-rt+",
            "CONFIG_HZ=1000\nCONFIG_NO_HZ_FULL=y\nCONFIG_HIGH_RES_TIMERS=y\nCONFIG_PREEMPT_RT=y\nCONFIG_PREEMPT_RCU=y\nCONFIG_RCU_BOOST=y\nCONFIG_RCU_NOCB_CPU=y\n",
        )
        .put(
            "/proc/cmdline",
            "coherent_pool=1M 8250.nr_uarts=0 snd_bcm2835.enable_headphones=0 bcm2708_fb.fbwidth=0 bcm2708_fb.fbheight=0 vc_mem.mem_base=0x3ec00000 vc_mem.mem_size=0x40000000  console=tty1 root=PARTUUID=8a4f1e2b-02 rootfstype=ext4 fsck.repair=yes rootwait isolcpus=managed_irq,domain,2-3 rcu_nocbs=2-3 irqaffinity=0-1 workqueue.unbound_cpus=0-1\n",
        )
        .put("/boot/firmware/cmdline.txt", "console=tty1 root=PARTUUID=8a4f1e2b-02 rootfstype=ext4 fsck.repair=yes rootwait\n")
        .put("/boot/firmware/config.txt", "arm_64bit=1\n")
        .bytes("/proc/device-tree/model", b"Raspberry Pi 4 Model B Rev 1.4\0")
        .put(
            "/proc/cpuinfo",
            &((0..4)
                .map(|c| format!("processor\t: {c}\nBogoMIPS\t: 108.00\nFeatures\t: fp asimd evtstrm crc32 cpuid\nCPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x0\nCPU part\t: 0xd08\nCPU revision\t: 3\n\n"))
                .collect::<String>()
                + "Revision\t: c03114\nSerial\t\t: 10000000abcdef12\nModel\t\t: Raspberry Pi 4 Model B Rev 1.4\n"),
        )
        .put("/sys/devices/system/clocksource/clocksource0/current_clocksource", "arch_sys_counter\n")
        .put("/sys/devices/system/clocksource/clocksource0/available_clocksource", "arch_sys_counter\n")
        .put("/sys/devices/system/cpu/nohz_full", "(null)\n")
        .put("/sys/devices/system/cpu/cpuidle/current_driver", "none\n")
        .put("/sys/devices/system/cpu/cpufreq/boost", "0\n");
    std::fs::remove_dir_all(t.root().join("sys/devices/system/cpu/intel_pstate")).unwrap();
    std::fs::remove_dir_all(t.root().join("sys/devices/system/cpu/smt")).unwrap();
    for c in 0..4 {
        let cpu = format!("/sys/devices/system/cpu/cpu{c}");
        t.put(&format!("{cpu}/cpufreq/scaling_governor"), "ondemand\n")
            .put(&format!("{cpu}/cpufreq/scaling_min_freq"), "600000\n")
            .put(&format!("{cpu}/cpufreq/scaling_max_freq"), "1500000\n")
            .put(&format!("{cpu}/cpufreq/cpuinfo_max_freq"), "1500000\n")
            .put(&format!("{cpu}/cpufreq/scaling_driver"), "cpufreq-dt\n");
        std::fs::remove_dir_all(t.root().join(format!("sys/devices/system/cpu/cpu{c}/cpuidle"))).unwrap();
        std::fs::remove_file(t.root().join(format!("dev/cpu/{c}/msr"))).unwrap();
        std::fs::remove_dir_all(t.root().join(format!("sys/devices/system/machinecheck/machinecheck{c}"))).unwrap();
    }
    t
}

#[test]
fn a_raspberry_pi_4_on_preempt_rt_is_examined_as_an_arm_board_with_its_own_boot_files() {
    let t = raspberry_pi_4_rt();
    let (v, code) = doctor(t.root(), &["--cpus", "2-3"]);
    valid(&v);
    assert_eq!(code, 0, "warnings only: {v:#}");
    assert_eq!(v["model"], "Raspberry Pi 4 Model B Rev 1.4");
    assert_eq!(v["cmdline_file"], "/boot/firmware/cmdline.txt");
    assert_eq!(status(&v, "kernel.preempt"), "ok", "{}", check(&v, "kernel.preempt"));
    assert_eq!(status(&v, "kernel.arch_timer"), "ok");
    assert_eq!(status(&v, "noise.smi"), "unknown");
    assert_eq!(status(&v, "noise.mce"), "ok");
    assert_eq!(status(&v, "power.idle"), "ok", "WFI only: {}", check(&v, "power.idle"));
    assert!(check(&v, "power.pstate")["finding"].as_str().unwrap().contains("cpufreq-dt"));
    assert_eq!(status(&v, "power.governor"), "warn");
    // The fix that adds to the kernel command line names the Pi's file.
    let nohz = check(&v, "isolation.nohz_full");
    assert_eq!(nohz["status"], "warn");
    assert!(
        nohz["fix"]
            .as_str()
            .unwrap()
            .contains("nohz_full=2-3 to the kernel command line (/boot/firmware/cmdline.txt, one line)"),
        "{nohz}"
    );
    // On the terminal: the board in the first line, the boot block pointing at cmdline.txt.
    let out = common::rtlab()
        .arg("doctor")
        .arg("--sysroot")
        .arg(t.root())
        .args(["--cpus", "2-3", "--brief"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("rtlab doctor: CPU 2-3 of Raspberry Pi 4 Model B Rev 1.4, "), "{text}");
    let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(words.contains("append to the one line of /boot/firmware/cmdline.txt on the boot partition"), "{text}");
    assert!(!text.contains("GRUB"), "{text}");
    let cmdline =
        text.lines().skip_while(|l| !l.starts_with("Kernel command line")).find(|l| l.starts_with("  ")).expect(&text);
    assert!(cmdline.split_whitespace().any(|w| w == "nohz_full=2-3"), "{cmdline}");
}
