//! Bad input: one line naming the value and the fix, exit code 2, before anything is measured.

mod common;
use common::rtlab;

/// `rtlab run ARGS`, refused (see `common::refused`).
fn refused(args: &[&str]) -> String {
    common::refused(&[&["run"], args].concat())
}

#[test]
fn a_zero_interval_is_refused_instead_of_hanging_like_cyclictest() {
    let e = refused(&["-i", "0", "-l", "10"]);
    assert!(e.contains("'0'") && e.contains("-i 1000"), "{e}");
}

#[test]
fn a_negative_interval_is_refused() {
    assert!(refused(&["-i", "-5"]).contains("'-5' is negative"));
}

#[test]
fn a_non_numeric_interval_is_refused() {
    assert!(refused(&["-i", "fast"]).contains("'fast' is not a time"));
}

#[test]
fn a_negative_loop_count_is_refused() {
    assert!(refused(&["--loops=-3"]).contains("'-3' is negative"));
}

#[test]
fn a_non_numeric_loop_count_is_refused() {
    assert!(refused(&["-l", "many"]).contains("'many' is not a whole number"));
}

#[test]
fn a_negative_priority_is_refused() {
    assert!(refused(&["-p", "-1"]).contains("negative"));
}

#[test]
fn a_priority_above_99_is_refused() {
    assert!(refused(&["-p", "100"]).contains("'100'"));
}

#[test]
fn a_real_time_priority_of_zero_is_out_of_range_for_fifo() {
    assert!(refused(&["--policy", "fifo", "-p", "0"]).contains("use 1 to 99"));
}

#[test]
fn a_priority_for_sched_other_is_out_of_range() {
    let e = refused(&["--policy", "other", "-p", "50"]);
    assert!(e.contains("SCHED_OTHER") && e.contains("--policy fifo"), "{e}");
}

#[test]
fn an_unknown_policy_is_refused_with_the_list_of_policies() {
    let e = refused(&["--policy", "fast"]);
    assert!(e.contains("'fast'") && e.contains("deadline"), "{e}");
}

#[test]
fn an_unknown_method_is_refused_with_the_valid_ones() {
    let e = refused(&["--method", "warp"]);
    assert!(e.contains("'warp'") && e.contains("posix-timer"), "{e}");
}

#[test]
fn a_cpu_that_does_not_exist_is_refused_with_the_online_cpus() {
    let e = refused(&["-a", "1000"]);
    assert!(e.contains("CPU 1000 does not exist or is offline") && e.contains("online CPUs are"), "{e}");
}

#[test]
fn an_offline_or_missing_cpu_for_the_reporting_thread_is_refused() {
    assert!(refused(&["--mainaffinity", "999"]).contains("--mainaffinity"));
}

#[test]
fn an_empty_cpu_set_is_refused() {
    assert!(refused(&["-a", ""]).contains("empty"));
    assert!(refused(&["-a", ","]).contains("','"));
}

#[test]
fn zero_threads_are_refused() {
    assert!(refused(&["-t", "0"]).contains("at least 1 thread"));
}

#[test]
fn a_duration_that_does_not_parse_is_refused() {
    assert!(refused(&["-D", "10x"]).contains("unknown unit 'x'"));
    assert!(refused(&["-D", "soon"]).contains("'soon'"));
}

#[test]
fn a_zero_duration_is_refused_with_the_way_to_run_forever() {
    assert!(refused(&["-D", "0"]).contains("Ctrl-C"));
}

#[test]
fn json_into_a_missing_directory_is_refused_before_measuring() {
    let e = refused(&["--json", "/nonexistent-dir/result.json", "-l", "10"]);
    assert!(e.contains("/nonexistent-dir") && e.contains("does not exist"), "{e}");
}

#[test]
fn deadline_runtime_above_the_period_is_refused() {
    let e = refused(&["--policy", "deadline", "--dl-runtime", "2ms", "--dl-period", "1ms"]);
    assert!(e.contains("runtime <= deadline <= period"), "{e}");
}

#[test]
fn a_deadline_shorter_than_the_runtime_is_refused() {
    let e = refused(&["--policy", "deadline", "--dl-runtime", "500us", "--dl-deadline", "300us"]);
    assert!(e.contains("runtime <= deadline <= period"), "{e}");
}

#[test]
fn a_deadline_longer_than_the_period_is_refused() {
    let e = refused(&["--policy", "deadline", "--dl-deadline", "2ms", "--dl-period", "1ms"]);
    assert!(e.contains("runtime <= deadline <= period"), "{e}");
}

#[test]
fn deadline_parameters_without_the_deadline_policy_are_refused() {
    assert!(refused(&["--dl-runtime", "100us"]).contains("--policy deadline"));
}

#[test]
fn pinning_deadline_threads_is_refused_with_the_reason() {
    assert!(refused(&["--policy", "deadline", "-a", "0"]).contains("root domain"));
}

#[test]
fn an_unknown_option_is_an_error_not_help() {
    let e = refused(&["--bogus"]);
    assert!(e.contains("'--bogus'"), "{e}");
}

#[test]
fn tracemark_without_breaktrace_is_refused() {
    assert!(refused(&["--tracemark"]).contains("-b"));
}

#[test]
fn a_histogram_range_that_is_not_a_multiple_of_the_bucket_is_refused() {
    assert!(refused(&["--bucket-size", "1ms", "--range", "1500us"]).contains("multiple"));
}

#[test]
fn a_warm_up_that_is_neither_cycles_nor_time_is_refused() {
    assert!(refused(&["--warm-up", "later"]).contains("'later'"));
}

#[test]
fn priospread_below_priority_one_is_refused() {
    assert!(refused(&["-t", "5", "-p", "3", "--priospread"]).contains("below 1"));
}

#[test]
fn a_seeded_simulation_without_an_end_is_refused() {
    assert!(refused(&["--simulate", "seed:1"]).contains("-l or -D"));
}

#[test]
fn a_non_utf8_argument_is_an_error_not_a_panic() {
    use std::os::unix::ffi::OsStrExt;
    let out = rtlab().arg("run").arg("-i").arg(std::ffi::OsStr::from_bytes(b"\xff\xfe")).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn help_and_version_exit_zero() {
    let out = rtlab().args(["run", "--help"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let help = String::from_utf8(out.stdout).unwrap();
    assert!(help.contains("SCHED_FIFO priority 95") && help.contains("--max-latency"), "{help}");
    rtlab().arg("--version").assert().success().stdout(predicates::str::contains(env!("CARGO_PKG_VERSION")));
}

/// Files the refusals below name: a RunResult, a samples file, a directory and a text file
/// that is no result.
fn fixtures() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let run = rtlab()
        .current_dir(dir.path())
        .args(["run", "--simulate", "seed:1", "-l", "20", "-q", "--json", "a.json", "--samples", "s.smp"])
        .output()
        .unwrap();
    assert!(run.status.success());
    std::fs::create_dir(dir.path().join("d")).unwrap();
    std::fs::write(dir.path().join("g.txt"), "hello world\n").unwrap();
    dir
}

/// Every row is refused with exit 2 and one line that contains the row's text (the value it
/// names), within 10 s, without a panic; nothing is measured and no output is written.
fn all_refused(rows: &[(&str, &str)]) {
    let dir = fixtures();
    let before: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().map(|e| e.file_name()).collect();
    for (args, names) in rows {
        let args: Vec<&str> = args.split_whitespace().collect();
        let e = common::refused_in(dir.path(), &args);
        assert!(e.contains(names), "{args:?} should name '{names}': {e}");
        assert!(!e.contains("panicked"), "{e}");
    }
    let after: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().map(|e| e.file_name()).collect();
    assert_eq!(before, after, "a refused command wrote something");
}

#[test]
fn run_refuses_every_bad_value_before_measuring() {
    all_refused(&[
        ("run --load cpu:cpus=9 -D 1", "cpus=9"),
        ("run --load cpu:workers=2,workers=3 -D 1", "'workers' is given twice"),
        ("run --load messaging:fds=0 -D 1", "fds=0"),
        ("run --no-mlockall -m", "--no-mlockall"),
        ("run --json j.json --no-checkpoint --checkpoint 5s", "--no-checkpoint"),
        ("run --checkpoint 5s", "--json"),
        ("run --runtime tokio --missed-tick skip", "--missed-tick"),
        ("run --priospread --policy other", "--priospread"),
        ("run --samples -", "--samples -"),
        ("run -t 4 --range 50ms --bucket-size 1ns", "--bucket-size 1 ns"),
        ("run --load memory:size=100000G -D 1", "100000.0 GiB"),
        ("run --load cpu:workers=4000 -D 1", "4000 worker"),
        ("run --json /dev/null", "/dev/null"),
        ("run --json /proc/x.json -D 5", "/proc/x.json"),
        ("run --json same --samples same", "--samples same"),
        ("run --load cpu:policy=fifo:50", "fifo:50"),
    ]);
}

#[test]
fn cyclictest_and_load_refuse_every_bad_value() {
    all_refused(&[
        ("cyclictest -i 0", "'0'"),
        ("cyclictest -h 10000000 -t 100", "-h/-H 10000000"),
        ("cyclictest --json=/dev/null", "/dev/null"),
        ("cyclictest -p 200", "'200'"),
        ("cyclictest --bogus", "--bogus"),
        ("cyclictest -t 0", "'0'"),
        ("load cpu -D 0", "'0'"),
        ("load gpu -D 1", "'gpu'"),
        ("load cpu:cpus=9 -D 1", "cpus=9"),
        ("load cpu:workers=5000 -D 1", "'5000'"),
        ("load memory:size=100000G -D 1", "100000.0 GiB"),
        ("load cpu -D 1 --json /dev/null", "/dev/null"),
        ("load cpu", "--duration"),
    ]);
}

#[test]
fn sweep_refuses_every_bad_value_before_building_anything() {
    all_refused(&[
        ("sweep --out o --workers 0..99999999999 -D 1", "0..99999999999"),
        ("sweep --out o --workers 0..18446744073709551615 -D 1", "0..18446744073709551615"),
        ("sweep --out o --workers 0..999999999 -D 1", "0..999999999"),
        ("sweep --out o --workers 0..5", "-D"),
        ("sweep --out o --methods warp -D 1", "'warp'"),
        ("sweep --out o --probe-policy fifo:100 -D 1", "fifo:100"),
        ("sweep --out o --load-kind gpu -D 1", "'gpu'"),
        ("sweep --out /proc/x -D 1 --workers 0..1", "/proc/x"),
    ]);
}

#[test]
fn commands_that_read_results_refuse_every_bad_input() {
    all_refused(&[
        ("import /dev/zero -o out.json", "/dev/zero"),
        ("import a.json -o a.json", "a.json"),
        ("import missing.json -o out.json", "missing.json"),
        ("import a.json -o /proc/x.json", "/proc/x.json"),
        ("show /dev/urandom", "/dev/urandom"),
        ("show missing.json", "missing.json"),
        ("show d", "d: is a directory"),
        ("show g.txt", "g.txt"),
        ("samples /dev/zero", "/dev/zero"),
        ("samples a.json", "a.json"),
        ("samples s.smp --csv -o s.smp", "s.smp"),
        ("samples s.smp --csv -o /proc/x.csv", "/proc/x.csv"),
        ("samples missing.smp", "missing.smp"),
    ]);
}

#[test]
fn plot_report_compare_and_beam_refuse_every_bad_value() {
    all_refused(&[
        ("plot /dev/zero -o p.png", "/dev/zero"),
        ("plot a.json -o p.gif", "p.gif"),
        ("plot a.json -o /proc/p.png", "/proc/p.png"),
        ("plot missing.json -o p.png", "missing.json"),
        ("plot a.json -k sweep -o p.png", "a.json"),
        ("report a.json -o r.pdf", "r.pdf"),
        ("report /dev/zero -o r.html", "/dev/zero"),
        ("report a.json -o /proc/r.html", "/proc/r.html"),
        ("compare a.json", "give 2 inputs or more"),
        ("compare a.json a.json --fail-if-worse -5", "-5"),
        ("compare a.json /dev/zero", "/dev/zero"),
        ("compare a.json a.json --percentile p42", "p42"),
        ("beam run --period 0", "'0'"),
        ("beam run --json /dev/null", "/dev/null"),
        ("beam run --workers -1", "-1"),
        ("beam sweep --workers 0..99999999999 --out o", "0..99999999999"),
        ("beam run --method warp", "'warp'"),
        ("beam run -D 0", "'0'"),
    ]);
}

#[test]
fn a_value_given_to_explain_with_a_space_is_refused_with_the_joined_form() {
    let e = refused(&["-l", "10", "--explain", "300us"]);
    assert!(e.contains("did you mean --explain=300us?"), "{e}");
}

#[test]
fn an_output_directory_that_does_not_exist_is_bad_usage_before_anything_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let missing = format!("{}/", dir.path().join("missing-dir").display());
    let err = common::refused(&["import", "tests/fixtures/cyclictest/v2.10-t2-H60.json", "-o", &missing]);
    assert!(err.contains("missing-dir/: directory does not exist"), "{err}");
}

#[test]
fn a_sweep_axis_that_repeats_a_value_is_refused() {
    for (axis, value, says) in [
        ("--methods", "abs,abs", "gives abs twice"),
        ("--methods", "abs,rel,ABS", "gives ABS twice"),
        ("--workers", "0,2,2", "gives 2 workers twice"),
        ("--workers", "0..4,2", "gives 2 workers twice"),
        ("--load-policy", "other,other", "gives other twice"),
    ] {
        let err = common::refused(&["sweep", "--out", "/tmp/rtlab-never", axis, value, "-D", "1"]);
        assert!(err.contains(says), "{axis} {value}: {err}");
    }
}

#[test]
fn pseudo_files_that_block_or_never_end_are_refused_without_reading_them() {
    for path in ["/sys/kernel/tracing/trace_pipe", "/proc/kmsg", "/proc/self/status"] {
        if !std::path::Path::new(path).exists() {
            eprintln!("NOT CHECKED: {path} does not exist here");
            continue;
        }
        let err = common::refused(&["show", path]);
        assert!(err.contains("pseudo-file, not a result file"), "{path}: {err}");
    }
}

#[test]
fn a_prediction_horizon_that_is_not_a_duration_from_a_second_to_a_century_is_refused() {
    for bad in ["0", "500ms", "36600d", "soon", "-1h"] {
        let e = refused(&["--predict", bad]);
        assert!(e.contains(&format!("'{bad}'")), "{e}");
    }
    let e = common::refused(&["show", "x.json", "--predict", "0"]);
    assert!(e.contains("--predict '0'"), "{e}");
    let e = common::refused(&["monitor", "--predict", "24h"]);
    assert!(e.contains("add --json FILE"), "a monitor's prediction goes in its windows: {e}");
}
