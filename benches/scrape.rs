//! What a Prometheus scrape of `rtlab monitor` costs for 64 CPUs' worth of series: rendering
//! the exposition of a snapshot of 64 probes, and a whole `GET /metrics` over a real TCP
//! connection to the real server (connect, request, full response). Target: < 5 ms a scrape.

use rtlab::serve::exposition::{bucket_bounds_ns, render, ProbeInfo, ProbeSeries, Snapshot};
use rtlab::serve::http::Server;
use rtlab::serve::{Board, Published};
use std::io::{Read, Write};

const CPUS: usize = 64;

fn main() {
    divan::main();
}

/// A snapshot like a 64-CPU machine's after a day at 1 kHz (4 exceedance thresholds, 44 checks).
fn snapshot() -> Snapshot {
    let bounds = bucket_bounds_ns();
    let probes = (0..CPUS)
        .map(|c| {
            let total = 86_400_000u64;
            ProbeSeries {
                cpu: c.to_string(),
                thread: c,
                buckets: bounds.iter().map(|b| total.saturating_sub(total * 1_000 / (*b).max(1))).collect(),
                count: total,
                sum_s: 1234.5,
                missed: 3,
                exceedances: vec![12_345, 678, 9, 0],
                window_max: Some((0.000_123, 1_800_000_000.0)),
                max: Some((0.004_5, 1_799_990_000.0)),
                task: None,
                response: None,
            }
        })
        .collect();
    Snapshot {
        version: "0.1.0".into(),
        start_time_s: 1_799_900_000.0,
        window_s: 60.0,
        thresholds_ns: vec![50_000, 100_000, 1_000_000, 10_000_000],
        probes,
        info: ProbeInfo {
            runtime: "os".into(),
            method: "abs".into(),
            policy: "fifo".into(),
            priority: 95,
            interval_s: 0.001,
            degraded: false,
        },
        doctor: (0..44).map(|i| (format!("check.{i}"), "warn".to_string())).collect(),
        attribution: vec![],
        cpu_seconds: 100.0,
        resident_bytes: 30 << 20,
    }
}

#[divan::bench]
fn render_64_cpus(b: divan::Bencher) {
    let s = snapshot();
    eprintln!("exposition of {CPUS} CPUs: {} bytes", render(&s, false).len());
    b.bench(|| divan::black_box(render(divan::black_box(&s), false)).len());
}

#[divan::bench]
fn scrape_64_cpus_over_tcp(b: divan::Bencher) {
    let board = Board::default();
    board.publish(Published::new(snapshot(), b"{}".to_vec(), None));
    let server = Server::start("127.0.0.1:0".parse().unwrap(), board, None).unwrap();
    let addr = server.addr;
    b.bench(|| {
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
        let mut out = Vec::with_capacity(1 << 20);
        s.read_to_end(&mut out).unwrap();
        assert!(out.starts_with(b"HTTP/1.1 200"));
        out.len()
    });
    server.stop();
}
