//! `rtlab export`: cyclictest's end-of-run blocks and files are exporters over RunResult, so a
//! saved result writes them again byte for byte.

mod common;

use common::{rtlab, samples_file};

const SAMPLES: &str = "1000\n2000\n2500\n70000\n3000\n1500\n90000\n";

fn export(file: &std::path::Path, args: &[&str]) -> String {
    let o = rtlab().arg("export").arg(file).args(args).output().unwrap();
    assert!(o.status.success(), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

#[test]
fn a_saved_cyclictest_result_writes_its_histogram_spikes_and_json_again_byte_for_byte() {
    for (compat, nsecs) in [("2.10", false), ("2.4", false), ("2.10", true)] {
        let dir = tempfile::tempdir().unwrap();
        let spec = samples_file(dir.path(), SAMPLES);
        let (saved, json) = (dir.path().join("r.json"), dir.path().join("ct.json"));
        let mut args = vec!["cyclictest", "-q", "-i", "1000", "-H", "60", "--spike", "2", "--compat", compat];
        if nsecs {
            args.push("-N");
        }
        let o = rtlab()
            .args(&args)
            .arg("--simulate")
            .arg(&spec)
            .arg("--rtlab-json")
            .arg(&saved)
            .arg("--json")
            .arg(&json)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let printed = String::from_utf8(o.stdout).unwrap();
        let mut common = vec!["--compat", compat];
        if nsecs {
            common.push("-N");
        }
        let spikes = export(&saved, &[&["--format", "cyclictest-spikes"], common.as_slice()].concat());
        let hist = export(
            &saved,
            &[&["--format", "cyclictest-hist", "--histogram-size", "60", "--histofall"], common.as_slice()].concat(),
        );
        assert!(spikes.contains("spikes = 3\n") && hist.starts_with("# Histogram\n"), "{spikes}{hist}");
        assert!(
            printed.contains(&format!("{spikes}{hist}")),
            "{compat} -N {nsecs}:\nprinted:\n{printed}\nexported:\n{spikes}{hist}"
        );
        let again =
            export(&saved, &[&["--format", "cyclictest-json", "--histogram-size", "60"], common.as_slice()].concat());
        assert_eq!(again, std::fs::read_to_string(&json).unwrap(), "the --json file again");
    }
}

#[test]
fn the_histogram_size_defaults_to_the_results_range_and_bad_combinations_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let spec = samples_file(dir.path(), SAMPLES);
    let saved = dir.path().join("r.json");
    rtlab()
        .args(["cyclictest", "-q", "-i", "1000", "-h", "80", "--simulate", &spec, "--rtlab-json"])
        .arg(&saved)
        .assert()
        .success();
    let hist = export(&saved, &["--format", "cyclictest-hist", "--compat", "2.4"]);
    assert_eq!(hist.lines().filter(|l| l.chars().next().is_some_and(|c| c.is_ascii_digit())).count(), 80, "{hist}");
    for bad in [
        vec!["export", "x.json", "--format", "json", "-N"],
        vec!["export", "x.json", "--format", "cyclictest-spikes", "--histofall"],
        vec!["export", "x.json", "--format", "pdf"],
    ] {
        let err = common::refused(&bad);
        assert_eq!(err.trim().lines().count(), 1, "{bad:?}: {err}");
    }
    // A plain `rtlab run` result has no logged spikes: the error says where they come from.
    let run = dir.path().join("run.json");
    rtlab().args(["run", "-q", "--simulate", &spec, "--json"]).arg(&run).assert().success();
    let o = rtlab().arg("export").arg(&run).args(["--format", "cyclictest-spikes"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("rtlab cyclictest"));
}
