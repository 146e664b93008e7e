//! Bad invocations across the newest surfaces (watch, working tasks and task sets, rt-app
//! files, importers, pictures and reports of hostile results, timerlat and `rtla`): each is
//! refused with exit 2 and one line naming the value, without a panic, within the bound, before
//! anything is measured.

mod common;
use common::*;
use serde_json::{json, Value};
use std::path::Path;

/// A directory with the files the refusals name: a result (`a.json`), results with series
/// that break the data model's rules, rt-app files that ask what cannot be honoured, a FIFO.
fn fixtures() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let run =
        rtlab().current_dir(d).args(["run", "--simulate", "seed:1", "-l", "20", "-q", "--json", "a.json"]).output();
    assert!(run.unwrap().status.success());
    let a: Value = serde_json::from_str(&std::fs::read_to_string(d.join("a.json")).unwrap()).unwrap();
    let with_series = |name: &str, series: Value| {
        let mut r = a.clone();
        r["threads"][0]["series"] = series;
        std::fs::write(d.join(name), serde_json::to_string(&r).unwrap()).unwrap();
    };
    let series = |interval: i64, n: usize, count: u64| json!({"interval_ns": interval, "samples": vec![count; n], "missed": vec![0; n], "max_ns": vec![1000; n], "span_ns": 1});
    with_series("zero-interval.json", series(0, 3, 1));
    with_series("negative-interval.json", series(-1_000_000_000, 3, 1));
    with_series("long-series.json", series(1_000_000_000, 3_601, 1));
    with_series("overflowing-series.json", series(1_000_000_000, 3, u64::MAX / 2));
    let mut mismatched = series(1_000_000_000, 3, 1);
    mismatched["missed"] = json!([0]);
    with_series("mismatched-series.json", mismatched);
    let rt_app = |name: &str, tasks: &str| {
        std::fs::write(d.join(name), format!("{{\"tasks\": {{{tasks}}}, \"global\": {{\"duration\": 1}}}}")).unwrap()
    };
    let timer = r#""timer": {"ref": "t", "period": 1000}"#;
    rt_app("huge-number.json", &format!(r#""t": {{"run": 1e400, {timer}}}"#));
    rt_app("huge-period.json", r#""t": {"run": 100, "timer": {"ref": "t", "period": 18446744073709551}}"#);
    rt_app("huge-delay.json", &format!(r#""t": {{"run": 100, "delay": 9223372036854776, {timer}}}"#));
    rt_app(
        "instances.json",
        &format!(r#""a": {{"instance": 4000, "run": 10, {timer}}}, "b": {{"instance": 4000, "run": 10, {timer}}}"#),
    );
    rt_app(
        "dl-short.json",
        &format!(r#""t": {{"policy": "SCHED_DEADLINE", "dl-runtime": 100, "dl-period": 1000, "run": 500, {timer}}}"#),
    );
    rt_app(
        "dl-huge.json",
        &format!(r#""t": {{"policy": "SCHED_DEADLINE", "dl-runtime": 18446744073709551, "run": 500, {timer}}}"#),
    );
    assert!(std::process::Command::new("mkfifo").arg(d.join("fifo")).status().unwrap().success());
    let log = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/rt-app/fuzz/header-after-data.log");
    std::fs::copy(log, d.join("glued.log")).unwrap();
    dir
}

/// Every row is refused within 20 s, its one line naming the row's text; nothing is written.
fn all_refused(dir: &Path, rows: &[(&str, &str)]) {
    let before: Vec<_> = std::fs::read_dir(dir).unwrap().flatten().map(|e| e.file_name()).collect();
    for (args, names) in rows {
        let args: Vec<&str> = args.split_whitespace().collect();
        let started = std::time::Instant::now();
        let e = refused_in(dir, &args);
        assert!(started.elapsed() < std::time::Duration::from_secs(20), "{args:?} took {:?}", started.elapsed());
        assert!(e.contains(names), "{args:?} should name '{names}': {e}");
        assert!(!e.contains("panicked"), "{e}");
    }
    let after: Vec<_> = std::fs::read_dir(dir).unwrap().flatten().map(|e| e.file_name()).collect();
    assert_eq!(before, after, "a refused command wrote something");
}

#[test]
fn numbers_past_what_nanoseconds_hold_are_refused_never_wrapped() {
    let dir = fixtures();
    all_refused(
        dir.path(),
        &[
            ("timerlat -T 9223372036854776", "-T 9223372036854776"),
            ("timerlat -i 9223372036854776", "-i 9223372036854776"),
            ("timerlat -a 9223372036854776", "9223372036854776"),
            ("timerlat -d 213503982334602d", "213503982334602d"),
            ("timerlat -d 18446744073709551615", "18446744073709551615"),
            ("run -D 213503982334602d", "213503982334602d"),
            ("run -i 9223372036854776us", "9223372036854776us"),
            ("run --rt-app huge-number.json", "1e400"),
            ("run --rt-app huge-period.json", "18446744073709551"),
            ("run --rt-app huge-delay.json", "9223372036854776"),
            ("run --rt-app dl-huge.json", "18446744073709551"),
        ],
    );
}

#[test]
fn requests_that_cannot_be_honoured_are_refused_before_anything_runs() {
    let dir = fixtures();
    all_refused(
        dir.path(),
        &[
            ("run --rt-app instances.json", "instance 4000"),
            ("run --rt-app dl-short.json", "dl-runtime 100 µs is shorter than the work of 500 µs"),
            ("run --policy deadline --dl-runtime 100us --work 200us -i 1ms -D 1", "--dl-runtime 100 µs"),
            ("run --task name=a,period=1ms,work=500us,policy=deadline,dl-runtime=100us -D 1", "dl-runtime 100 µs"),
            ("timerlat -T 10 --on-threshold signal,num=2,pid=-1", "pid=-1"),
            ("timerlat -T 10 --on-threshold signal,num=2,pid=0", "pid=0"),
            ("timerlat -T 10 --on-threshold signal,num=99999,pid=parent", "num=99999"),
            ("timerlat -T 10 --on-threshold shell,command=", "shell,command="),
            ("timerlat hist -b 1000000", "-b 1000000"),
            ("timerlat hist -b 0", "-b 0"),
            ("watch --comm rtlab -D 1", "--comm rtlab"),
            ("watch --comm rtlab-watch -D 1", "--comm rtlab-watch"),
            ("plot a.json --of stages -o p.png", "--of stages"),
        ],
    );
}

#[test]
fn hostile_inputs_are_refused_without_reading_what_they_hold() {
    let dir = fixtures();
    all_refused(
        dir.path(),
        &[
            ("run --simulate file:/etc/shadow -l 10", "--simulate"),
            ("run --simulate file:/dev/zero -l 10", "/dev/zero"),
            ("run --simulate file:fifo -l 10", "named pipe"),
            ("cyclictest --simulate file:/dev/zero -l 10", "/dev/zero"),
            ("import glued.log -o out.json", "a second, different column header"),
            ("show zero-interval.json", "interval_ns 0"),
            ("plot negative-interval.json -o p.png", "interval_ns -1000000000"),
            ("report long-series.json -o r.html", "3601 intervals"),
            ("compare a.json overflowing-series.json", "past 64 bits"),
            ("plot mismatched-series.json -k timeseries -o p.svg", "differ in length"),
        ],
    );
    let shadow = refused_in(dir.path(), &["run", "--simulate", "file:/etc/shadow", "-l", "10"]);
    assert!(!shadow.contains("root:"), "the file's content is never echoed: {shadow}");
}

#[test]
fn zero_thresholds_mean_none_as_in_rtla() {
    // `-T 0` is no threshold: the run is not told to explain anything, and needs no action.
    let out = rtlab()
        .args(["timerlat", "hist", "-T", "0", "-i", "0", "--on-end", "shell,command=true", "-d", "1", "-c", "0"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    // (An earlier rtlab turned -T 0 into `--explain=0us` and refused it.)
    assert!(!err.contains("invalid value"), "{err}");
    if is_root() {
        assert!(out.status.success(), "{err}");
    }
}

#[test]
fn a_thread_whose_name_is_not_utf8_is_watched_until_it_exits() {
    assert!(is_root(), "rtlab watch needs root: run the suite as root");
    let script = "import ctypes, time\nctypes.CDLL(None).prctl(15, b'\\xff\\xfebad', 0, 0, 0)\ntime.sleep(2)\n";
    let mut target = std::process::Command::new("python3").args(["-c", script]).spawn().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("w.json");
    let out = rtlab()
        .args(["watch", "-q", "-D", "15s", "-p", &target.id().to_string(), "--json"])
        .arg(&json)
        .output()
        .unwrap();
    target.wait().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let r = read_json(&json);
    assert_eq!(r["end_reason"], "exited", "it ended when the program did");
    assert_eq!(r["threads"][0]["name"], "\u{fffd}\u{fffd}bad");
}
