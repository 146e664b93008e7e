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
