#![allow(dead_code)]
//! Helpers shared by the integration tests.

use assert_cmd::Command;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The rtlab binary under test.
pub fn rtlab() -> Command {
    // A run that never ends fails its test with what it printed, instead of holding the suite
    // (and CI) until an outer limit kills everything.
    let mut c = Command::cargo_bin("rtlab").unwrap();
    c.timeout(spawn_bound(std::time::Duration::from_secs(300)));
    c
}

/// The bound on how long a spawned rtlab may take before its test fails: [`slow`]`(d)`, and
/// under qemu-user never shorter than `RTLAB_TEST_HANG_LIMIT` (`scripts/arm64-tests.sh`'s limit
/// on a whole test binary). qemu-user can deadlock a forked child before its exec; such a hang is
/// the emulator's, and the script retries the binary for it. A shorter bound here would kill the
/// child first and fail its test as an empty run (CI, 2026-11-29, twice).
pub fn spawn_bound(d: std::time::Duration) -> std::time::Duration {
    let floor = std::env::var("RTLAB_TEST_HANG_LIMIT").ok().and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    slow(d).max(std::time::Duration::from_secs(floor))
}

/// Waits until `ok()` holds, looking every 20 ms; fails naming `what` once `bound` has passed.
/// What a test waits for (a run's instance, a reader thread, a state changed), never a fixed sleep.
pub fn wait_for(what: &str, bound: std::time::Duration, mut ok: impl FnMut() -> bool) {
    let start = std::time::Instant::now();
    while !ok() {
        assert!(start.elapsed() < bound, "timed out after {bound:?} waiting for {what}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// `d` stretched by how much slower than native this run is: `RTLAB_TEST_SLOWDOWN` (a whole
/// factor, 1 when unset), which `scripts/arm64-tests.sh` sets for its run under qemu-user. Only
/// for bounds that say "this ends", never for a latency figure.
pub fn slow(d: std::time::Duration) -> std::time::Duration {
    let factor = std::env::var("RTLAB_TEST_SLOWDOWN").ok().and_then(|v| v.parse::<u32>().ok()).unwrap_or(1);
    d * factor.max(1)
}

/// Path of the built binary.
pub fn rtlab_path() -> PathBuf {
    assert_cmd::cargo::cargo_bin("rtlab")
}

/// Validates `instance` against docs/schemas/run.schema.json (generated from the types), listing every violation.
pub fn assert_valid_run_result(instance: &Value) {
    let schema: Value = serde_json::from_str(include_str!("../../docs/schemas/run.schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("the schema itself is valid");
    let errors: Vec<String> =
        validator.iter_errors(instance).map(|e| format!("{} at {}", e, e.instance_path)).collect();
    assert!(errors.is_empty(), "result does not match the schema:\n{}", errors.join("\n"));
}

/// Reads a JSON file.
pub fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Writes a simulation samples file and returns its `--simulate` spec.
pub fn samples_file(dir: &Path, text: &str) -> String {
    let p = dir.join("samples.txt");
    std::fs::write(&p, text).unwrap();
    format!("file:{}", p.display())
}

/// A command that runs a copy of rtlab named `name` without privileges: as the user `nobody`
/// (through setpriv) when the tests run as root, as this user otherwise. The copy lives in a
/// world-readable temporary directory (also the command's working directory), kept alive by the
/// returned guard.
pub fn unprivileged(name: &str) -> (std::process::Command, tempfile::TempDir) {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let bin = dir.path().join(name);
    std::fs::copy(rtlab_path(), &bin).unwrap();
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut cmd = if is_root() {
        let mut c = std::process::Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all"]).arg(&bin);
        c
    } else {
        std::process::Command::new(&bin)
    };
    cmd.current_dir(dir.path());
    (cmd, dir)
}

/// Runs `rtlab ARGS` expecting bad usage: exit 2, one line on stderr that starts with
/// "rtlab: ", nothing on stdout. Returns the line.
pub fn refused(args: &[&str]) -> String {
    refused_in(Path::new("."), args)
}

/// [`refused`], run in `dir`, within 10 s.
pub fn refused_in(dir: &Path, args: &[&str]) -> String {
    let out =
        rtlab().current_dir(dir).args(args).timeout(spawn_bound(std::time::Duration::from_secs(10))).output().unwrap();
    assert!(out.status.code().is_some(), "args {args:?}: no exit code (killed, a panic abort or the 10 s bound)");
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(2), "args {args:?}: stderr {err}");
    assert!(out.stdout.is_empty(), "args {args:?} printed to stdout");
    assert_eq!(err.trim_end().lines().count(), 1, "args {args:?}: not one line: {err}");
    assert!(err.starts_with("rtlab: "), "{err}");
    err
}

/// True when this process is root (real runs then check that RT policies were obtained).
pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|v| v.split_whitespace().nth(1).map(|s| s == "0"))
        .unwrap_or(false)
}

/// A stand-in `erl` that ignores the VM and prints `body` (a shell snippet; `$w` is the worker
/// count rtlab asked for) after the probe's greeting.
pub fn fake_erl(dir: &Path, name: &str, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let p = dir.join(name);
    let script = format!(
        "#!/bin/sh\nexpr=$(printf '%s\\n' \"$@\" | grep rtlab_probe:main)\n\
         w=$(printf '%s' \"$expr\" | sed -n 's/.*rtlab_probe:main([^,]*, *[0-9]*, *[0-9]*, *\\([0-9]*\\),.*/\\1/p')\n\
         echo 'V Erlang/OTP 99 [fake]'\necho 'A fake-arch'\necho 'C 99 2 2 2 unbound'\n\
         if [ \"$w\" = 0 ]; then echo 'P normal none'; else echo 'P normal normal'; fi\necho 'T 0'\n{body}\n"
    );
    std::fs::write(&p, script).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

/// Debian's `erl` (erlang-nox, installed by .ci/run); the test fails loudly without it.
pub fn real_erl() -> PathBuf {
    ["/usr/bin/erl", "/usr/local/bin/erl"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
        .expect("erl is not installed: apt-get install erlang-nox (.ci/run does)")
}

/// tests/programs/watched.c (threads of known behaviour for `rtlab watch`), built once with
/// the system's C compiler.
pub fn watched() -> &'static Path {
    static BIN: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BIN.get_or_init(|| {
        let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("watched");
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/programs/watched.c");
        let st = std::process::Command::new("cc")
            .args(["-O2", "-pthread", "-Wall", "-o"])
            .arg(&out)
            .arg(&src)
            .status()
            .unwrap_or_else(|e| panic!("no C compiler ({e}): the watch tests build tests/programs/watched.c with cc"));
        assert!(st.success(), "cc failed on {}", src.display());
        out
    })
}

/// The last online CPU (the measured one in the real-kernel tests).
pub fn last_cpu() -> usize {
    let text = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    text.trim().rsplit([',', '-']).next().unwrap().parse().unwrap()
}

/// stress-ng busy 1 ms every 50 ms at SCHED_FIFO `prio` on `cpu` for 10 s (a blocker of known
/// size), given 700 ms to start; kill it with [`stop_bursts`].
pub fn fifo_bursts(cpu: usize, prio: u32) -> std::process::Child {
    fifo_bursts_of(cpu, prio, 2, 10)
}

/// A SCHED_FIFO `prio` stress-ng worker on `cpu`, busy 1 ms slices `percent` % of the time,
/// ending by itself after `timeout_s`; in a process group of its own ([`group_pids`],
/// [`stop_bursts`]).
pub fn fifo_bursts_of(cpu: usize, prio: u32, percent: u32, timeout_s: u32) -> std::process::Child {
    use std::os::unix::process::CommandExt;
    let child = std::process::Command::new("stress-ng")
        .args([
            "--cpu",
            "1",
            "--cpu-load",
            &percent.to_string(),
            "--cpu-load-slice",
            "1",
            "--taskset",
            &cpu.to_string(),
        ])
        .args(["--sched", "fifo", "--sched-prio", &prio.to_string(), "--timeout", &format!("{timeout_s}s")])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .process_group(0)
        .spawn()
        .expect("stress-ng (apt install stress-ng)");
    std::thread::sleep(std::time::Duration::from_millis(700));
    child
}

/// The processes of the group `leader` started (stress-ng and its workers), as the `:PID`
/// ending of the names rtlab gives tasks (`comm:pid`): a test's own load told from any other
/// stress-ng running on the machine (another test's, or a busy machine's).
pub fn group_pids(leader: &std::process::Child) -> Vec<String> {
    let group = leader.id().to_string();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            let after = stat.rsplit_once(')')?.1;
            (after.split_whitespace().nth(2)? == group).then(|| format!(":{}", e.file_name().to_string_lossy()))
        })
        .collect()
}

/// Ends a load started in a process group of its own ([`fifo_bursts`], a test's stress-ng):
/// stress-ng and its workers, the whole group (killing the parent alone leaves its workers).
pub fn stop_bursts(mut child: std::process::Child) {
    let _ = std::process::Command::new("kill").args(["-KILL", "--", &format!("-{}", child.id())]).status();
    let _ = child.wait();
}

/// Runs `rtlab ARGS --json JSON` where the probe's program breaks its stream (`name` is the
/// case): rtlab must exit 1 saying `expect`, and leave a valid result that failed, kept what
/// arrived and says why in a `runtime_failed` warning.
pub fn assert_broken_run(name: &str, args: &[&std::ffi::OsStr], json: &Path, expect: &str) {
    let o = rtlab().args(args).arg("--json").arg(json).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{name}: {err}");
    assert!(err.contains(expect), "{name}: {err}");
    let v = read_json(json);
    assert_valid_run_result(&v);
    assert_eq!(v["end_reason"], "failed", "{name}");
    assert!(v["threads"][0]["cycles"].as_u64().unwrap() >= 1, "{name}: what arrived is kept");
    assert!(v["warnings"].as_array().unwrap().iter().any(|w| w["kind"] == "runtime_failed"), "{name}");
}
