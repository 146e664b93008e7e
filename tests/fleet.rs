//! Fleet reports against a stand-in Prometheus (a small HTTP server on 127.0.0.1 that answers
//! the API's queries with a fleet whose truth is known, and stops by itself): the window is
//! judged on its own samples, never on a spike from before it.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// `%XX` and `+` decoded.
fn decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() => {
                out.push(u8::from_str_radix(std::str::from_utf8(&b[i + 1..i + 3]).unwrap(), 16).unwrap());
                i += 2;
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8(out).unwrap()
}

/// What the stand-in holds for host `lab-1`, CPU 1.
struct Fleet {
    /// Cumulative `(le, count)` of the window's increase.
    buckets: Vec<(&'static str, u64)>,
    /// The window-max gauge: `(seconds after the window's start, value s, when s after the start)`.
    gauge: Vec<(f64, f64, f64)>,
    /// What `max_over_time` of the gauge over the window answers (the gauge's whole reach).
    max_over_time: f64,
}

/// Serves `fleet` for 30 s at most; the window ends about when the server starts.
fn serve(fleet: Fleet, since_s: f64) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let end = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs_f64();
    let start = end - since_s;
    std::thread::spawn(move || {
        let until = Instant::now() + Duration::from_secs(30);
        listener.set_nonblocking(true).unwrap();
        while Instant::now() < until {
            let Ok((stream, _)) = listener.accept() else {
                std::thread::sleep(Duration::from_millis(10));
                continue;
            };
            stream.set_nonblocking(false).unwrap();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            loop {
                let mut h = String::new();
                if reader.read_line(&mut h).unwrap() == 0 || h == "\r\n" {
                    break;
                }
            }
            let target = line.split_whitespace().nth(1).unwrap_or("");
            let (path, qs) = target.split_once('?').unwrap_or((target, ""));
            let params: Vec<(String, String)> =
                qs.split('&').filter_map(|kv| kv.split_once('=')).map(|(k, v)| (k.into(), decode(v))).collect();
            let query = params.iter().find(|p| p.0 == "query").map_or("", |p| p.1.as_str());
            let labels = r#""instance":"lab-1","job":"rtlab","cpu":"1","thread":"0""#;
            let result = if path.ends_with("/query_range") && query.starts_with("rtlab_wakeup_latency_window_max") {
                let time = query.starts_with("rtlab_wakeup_latency_window_max_time");
                let points: Vec<String> = fleet
                    .gauge
                    .iter()
                    .map(|(t, v, w)| format!("[{:.3},\"{}\"]", start + t, if time { start + w } else { *v }))
                    .collect();
                format!(r#"[{{"metric":{{{labels}}},"values":[{}]}}]"#, points.join(","))
            } else if query.contains("increase(rtlab_wakeup_latency_seconds_bucket") && path.ends_with("/query") {
                let series: Vec<String> = fleet
                    .buckets
                    .iter()
                    .map(|(le, n)| {
                        format!(r#"{{"metric":{{"instance":"lab-1","cpu":"1","le":"{le}"}},"value":[{end},"{n}"]}}"#)
                    })
                    .collect();
                format!("[{}]", series.join(","))
            } else if query.contains("max_over_time(rtlab_wakeup_latency_window_max_seconds") {
                format!(r#"[{{"metric":{{"instance":"lab-1","cpu":"1"}},"value":[{end},"{}"]}}]"#, fleet.max_over_time)
            } else if query.contains("rtlab_wakeup_latency_seconds_sum") {
                format!(r#"[{{"metric":{{"instance":"lab-1","cpu":"1"}},"value":[{end},"0.009"]}}]"#)
            } else if query.contains("rtlab_missed_periods_total") {
                format!(r#"[{{"metric":{{"instance":"lab-1","cpu":"1"}},"value":[{end},"0"]}}]"#)
            } else if query.contains("rtlab_build_info") {
                format!(r#"[{{"metric":{{"instance":"lab-1","version":"0.1.0"}},"value":[{end},"1"]}}]"#)
            } else {
                "[]".to_string()
            };
            let kind = if path.ends_with("/query_range") { "matrix" } else { "vector" };
            let body = format!(r#"{{"status":"success","data":{{"resultType":"{kind}","result":{result}}}}}"#);
            let mut s = stream;
            let _ = write!(
                s,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    port
}

/// `rtlab report --prometheus … --since 300s --max-latency 100us`: exit code and the verdict line.
fn judged(port: u16) -> (i32, String) {
    let dir = tempfile::tempdir().unwrap();
    let out = common::rtlab()
        .args(["report", "--prometheus", &format!("http://127.0.0.1:{port}"), "--since", "300s"])
        .args(["--max-latency", "100us", "-o"])
        .arg(dir.path().join("fleet.html"))
        .output()
        .unwrap();
    let page = std::fs::read_to_string(dir.path().join("fleet.html")).unwrap_or_default();
    let text = format!("{}{}{page}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.code().unwrap_or(-1), text)
}

#[test]
fn a_spike_from_before_the_window_does_not_fail_a_window_whose_samples_are_all_within() {
    // 300 wakeups, all ≤ 50 µs; the gauge still shows a 2 ms spike from 50 s before the window
    // during the window's first ten seconds.
    let mut gauge: Vec<(f64, f64, f64)> = (0..=10).map(|t| (t as f64, 0.002, -50.0)).collect();
    gauge.extend((11..=300).step_by(15).map(|t| (t as f64, 0.000_040, t as f64 - 3.0)));
    let port = serve(
        Fleet {
            buckets: vec![("0.00003", 200), ("0.00005", 300), ("0.0001", 300), ("+Inf", 300)],
            gauge,
            max_over_time: 0.002,
        },
        300.0,
    );
    let (code, text) = judged(port);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("PASS: no CPU of lab-1 exceeded 100.0 µs in the window"), "{text}");
}

#[test]
fn a_window_maximum_the_histogram_contradicts_is_not_trusted_and_the_buckets_decide() {
    // The gauge saw 40 µs in the window, but the histogram holds 3 samples in (1 ms, 1.5 ms]:
    // the largest is not known exactly; at least 3 samples are above 100 µs.
    let gauge: Vec<(f64, f64, f64)> = (0..=300).step_by(15).map(|t| (t as f64, 0.000_040, t as f64)).collect();
    let port = serve(
        Fleet {
            buckets: vec![("0.00005", 297), ("0.001", 297), ("0.0015", 300), ("+Inf", 300)],
            gauge,
            max_over_time: 0.000_040,
        },
        300.0,
    );
    let (code, text) = judged(port);
    assert_eq!(code, 3, "{text}");
    assert!(text.contains("CPU 1: max at least 1000.0 µs (at least 3 samples above)"), "{text}");
}

#[test]
fn a_threshold_inside_the_top_bucket_with_no_maximum_known_fails_without_an_invented_count() {
    // Samples up to (70 µs, 100 µs]… and (100, 150 µs] with no gauge point in the window.
    let port = serve(
        Fleet {
            buckets: vec![("0.00007", 290), ("0.00015", 300), ("+Inf", 300)],
            gauge: vec![(5.0, 0.002, -50.0)],
            max_over_time: 0.002,
        },
        300.0,
    );
    let (code, text) = judged(port);
    assert_eq!(code, 3, "{text}");
    assert!(text.contains("CPU 1: 10 samples between 70.0 µs and 150.0 µs may be above"), "{text}");
    assert!(!text.contains("2000.0 µs"), "the spike before the window is not the window's: {text}");
}
