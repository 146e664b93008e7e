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

/// A stand-in server on 127.0.0.1 for 30 s at most: `answer(path, query)` writes each whole
/// HTTP response.
fn serve_raw(answer: impl Fn(&str, &str, &mut std::net::TcpStream) + Send + 'static) -> u16 {
    serve_seeing(move |path, query, _, s| answer(path, query, s))
}

/// The same, `answer` also given the request's header lines (as sent, without the CRLF).
fn serve_seeing(answer: impl Fn(&str, &str, &[String], &mut std::net::TcpStream) + Send + 'static) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        // Long enough for an emulated rtlab (qemu-user) to ask all its questions.
        let until = Instant::now() + Duration::from_secs(120);
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
            let mut headers = Vec::new();
            loop {
                let mut h = String::new();
                if reader.read_line(&mut h).unwrap() == 0 || h == "\r\n" {
                    break;
                }
                headers.push(h.trim_end().to_string());
            }
            let target = line.split_whitespace().nth(1).unwrap_or("");
            let (path, qs) = target.split_once('?').unwrap_or((target, ""));
            let query = qs
                .split('&')
                .filter_map(|kv| kv.split_once('='))
                .find(|(k, _)| *k == "query")
                .map_or(String::new(), |(_, v)| decode(v));
            let mut s = stream;
            answer(path, &query, &headers, &mut s);
        }
    });
    port
}

/// A 200 answer with a JSON body.
fn ok_json(s: &mut std::net::TcpStream, body: &str) {
    let _ = write!(
        s,
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
}

/// Serves `fleet` for 30 s at most; the window ends about when the server starts.
fn serve(fleet: Fleet, since_s: f64) -> u16 {
    let end = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs_f64();
    let start = end - since_s;
    serve_raw(move |path, query, s| {
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
        ok_json(s, &format!(r#"{{"status":"success","data":{{"resultType":"{kind}","result":{result}}}}}"#));
    })
}

/// `rtlab report --prometheus … --since 300s --max-latency 100us`: exit code and the verdict line.
fn judged(port: u16) -> (i32, String) {
    judged_at(&format!("http://127.0.0.1:{port}"))
}

/// [`judged`] with the server at `url`; the text holds stdout, stderr and the HTML report.
fn judged_at(url: &str) -> (i32, String) {
    let dir = tempfile::tempdir().unwrap();
    let out = common::rtlab()
        .args(["report", "--prometheus", url, "--since", "300s"])
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

/// Instant-query answers for one host and CPU: `le` → count, the rest empty.
fn buckets_only(series: Vec<String>) -> impl Fn(&str, &str, &mut std::net::TcpStream) + Send + 'static {
    move |path: &str, query: &str, s: &mut std::net::TcpStream| {
        let result = if path.ends_with("/query") && query.contains("_bucket") {
            format!("[{}]", series.join(","))
        } else {
            "[]".to_string()
        };
        let kind = if path.ends_with("/query_range") { "matrix" } else { "vector" };
        ok_json(s, &format!(r#"{{"status":"success","data":{{"resultType":"{kind}","result":{result}}}}}"#));
    }
}

fn bucket(instance: &str, le: &str, n: &str) -> String {
    format!(r#"{{"metric":{{"instance":"{instance}","cpu":"1","le":"{le}"}},"value":[1,"{n}"]}}"#)
}

#[test]
fn a_host_without_a_usable_maximum_is_judged_by_its_buckets_never_passed() {
    // No window-max series at all; a third of the samples above 1 s.
    let port = serve_raw(buckets_only(vec![
        bucket("lab-2", "0.00005", "200"),
        bucket("lab-2", "1", "200"),
        bucket("lab-2", "+Inf", "300"),
    ]));
    let (code, text) = judged(port);
    assert_eq!(code, 3, "{text}");
    assert!(text.contains("FAIL: lab-2 exceeded 100.0 µs"), "{text}");
}

#[test]
fn bucket_series_without_le_are_refused_not_reported_empty() {
    let port = serve_raw(buckets_only(vec![r#"{"metric":{"instance":"lab-2","cpu":"1"},"value":[1,"5"]}"#.into()]));
    let (code, text) = judged(port);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("has no usable (with an le label) rtlab_wakeup_latency_seconds_bucket"), "{text}");
}

#[test]
fn non_finite_or_negative_counts_leave_that_host_out_with_a_warning() {
    let port = serve_raw(buckets_only(vec![
        bucket("good", "0.00005", "10"),
        bucket("good", "+Inf", "10"),
        bucket("bad", "0.00005", "NaN"),
        bucket("bad", "+Inf", "+Inf"),
        bucket("worse", "0.00005", "-3"),
        bucket("worse", "+Inf", "10"),
    ]));
    let (code, text) = judged(port);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("rtlab: warning: bad CPU 1 is left out"), "{text}");
    assert!(text.contains("rtlab: warning: worse CPU 1 is left out"), "{text}");
    assert!(!text.contains("18446744073709551615"), "no infinite count is shown");
    assert!(text.contains("PASS: no CPU of good exceeded"), "{text}");
}

#[test]
fn a_redirect_is_not_followed_and_never_aborts_rtlab() {
    let port = serve_raw(|_, _, s| {
        let _ = write!(s, "HTTP/1.1 302 Found\r\nLocation: file:///etc/passwd\r\nContent-Length: 0\r\n\r\n");
    });
    let (code, text) = judged(port);
    assert_eq!(code, 1, "an error, not a panic: {text}");
    assert!(text.contains("answered a redirect (302) to file:///etc/passwd"), "{text}");
}

#[test]
fn credentials_in_the_url_are_sent_but_never_shown_or_written() {
    let answer = buckets_only(vec![bucket("lab-3", "0.00005", "10"), bucket("lab-3", "+Inf", "10")]);
    // Prometheus behind Basic authentication: alice:s3cr3t, base64.
    let port = serve_seeing(move |path, query, headers, s| {
        let sent = |h: &String| {
            h.split_once(':')
                .is_some_and(|(n, v)| n.eq_ignore_ascii_case("authorization") && v.trim() == "Basic YWxpY2U6czNjcjN0")
        };
        if headers.iter().any(sent) {
            answer(path, query, s);
        } else {
            let _ = write!(s, "HTTP/1.1 401 Unauthorized\r\nContent-Length: 12\r\n\r\nno password!");
        }
    });
    let (code, text) = judged_at(&format!("http://alice:s3cr3t@127.0.0.1:{port}"));
    assert_eq!(code, 0, "{text}");
    assert!(text.contains(&format!("http://127.0.0.1:{port}")), "the URL is shown without them: {text}");
    assert!(!text.contains("s3cr3t") && !text.contains("alice"), "{text}");
    // An error names the server without them too.
    let (_, text) = judged_at("http://alice:s3cr3t@127.0.0.1:9/");
    assert!(text.contains("cannot query http://127.0.0.1:9/api/v1/query"), "{text}");
    assert!(!text.contains("s3cr3t"), "{text}");
}

#[test]
fn an_answer_larger_than_the_limit_is_refused_by_its_size() {
    let port = serve_raw(|_, _, s| {
        let n = (64usize << 20) + 4096;
        let _ = write!(s, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {n}\r\n\r\n");
        let chunk = vec![b' '; 1 << 20];
        let mut left = n;
        while left > 0 {
            let k = left.min(chunk.len());
            if s.write_all(&chunk[..k]).is_err() {
                return;
            }
            left -= k;
        }
    });
    let (code, text) = judged(port);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("answer larger than 64 MiB"), "{text}");
}

#[test]
fn hostile_labels_and_error_bodies_cannot_drive_the_terminal_or_break_the_report() {
    let evil = "lab\\u001b]0;pwned\\u0007\\u001b[2J<script>x</script>\\nFAIL";
    let port = serve_raw(buckets_only(vec![bucket(evil, "0.00005", "10"), bucket(evil, "+Inf", "10")]));
    let (code, text) = judged(port);
    assert_eq!(code, 0, "an SVG and a report are made: {text}");
    assert!(!text.contains('\u{1b}') && !text.contains('\u{7}'), "{text:?}");
    // A server's error body is shown without its escape sequences.
    let port = serve_raw(|_, _, s| {
        let body = "\u{1b}[2J\u{1b}]0;owned\u{7}bad query";
        let _ = write!(s, "HTTP/1.1 400 Bad Request\r\nContent-Length: {}\r\n\r\n{body}", body.len());
    });
    let (code, text) = judged(port);
    assert_eq!(code, 1);
    assert!(text.contains("bad query") && !text.contains('\u{1b}'), "{text:?}");
    // The Markdown report escapes HTML and line breaks from labels.
    let port = serve_raw(buckets_only(vec![bucket(evil, "0.00005", "10"), bucket(evil, "+Inf", "10")]));
    let dir = tempfile::tempdir().unwrap();
    let md = dir.path().join("fleet.md");
    let out = common::rtlab()
        .args(["report", "--prometheus", &format!("http://127.0.0.1:{port}"), "--since", "300s", "-o"])
        .arg(&md)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let md = std::fs::read_to_string(&md).unwrap();
    assert!(!md.contains("<script>") && md.contains("&lt;script&gt;"), "{md}");
    assert!(!md.lines().any(|l| l.starts_with("FAIL")), "no forged line: {md}");
}

#[test]
fn more_hosts_than_a_report_holds_are_cut_and_said_so() {
    let series: Vec<String> = (0..1100)
        .flat_map(|h| [bucket(&format!("h{h:04}"), "0.00005", "10"), bucket(&format!("h{h:04}"), "+Inf", "10")])
        .collect();
    let port = serve_raw(buckets_only(series));
    let (code, text) = judged(port);
    assert_eq!(code, 0, "{}", &text[..text.len().min(2000)]);
    assert!(text.contains("1100 hosts answered; the report holds the first 1000 by name"), "said so");
    assert!(text.contains("h0999") && !text.contains("h1000"), "the first 1000 by name");
}
