// rtlab's probe inside Node.js (shipped inside rtlab; run as
// `node rtlab_probe.js METHOD PERIOD_NS DURATION_NS WORKERS WORKER_KIND`).
//
// A callback on the event loop waits for absolute deadlines start + k*period
// (process.hrtime.bigint(), CLOCK_MONOTONIC) and reports each wakeup's lateness on stdout:
//
//   V <version>                 the runtime
//   R <key>=<value> ...         what the runtime says of itself
//   T <start_ns>                the schedule's start
//   S <latency_ns> <at_ns> <missed>
//   E <samples> <work_units>    the end: samples sent, units of work the workers did
//
// Methods: `interval` (setInterval(period): latency against the k-th tick) and `timeout-until`
// (setTimeout re-armed to each absolute deadline). Node's timers count whole milliseconds.
// Workers: `loop` — CPU-bound callbacks on the event loop itself, each computing for a 10 ms
// slice before the next is queued with setImmediate; `threads` — worker_threads that compute.
'use strict';
const { monitorEventLoopDelay } = require('perf_hooks');
const { Worker, isMainThread, parentPort } = require('worker_threads');

if (!isMainThread) {
  let n = 0;
  const spin = () => {
    const until = Date.now() + 50;
    while (Date.now() < until) n++;
    parentPort.postMessage(n);
    n = 0;
    setImmediate(spin);
  };
  spin();
  return;
}

const SLICE_NS = 10_000_000n;
const [method, periodArg, durationArg, workersArg, kind] = process.argv.slice(2);
const period = BigInt(periodArg);
const duration = BigInt(durationArg);
const workers = Number(workersArg);
const now = () => process.hrtime.bigint();
const lines = [];
const flush = () => {
  if (lines.length) {
    process.stdout.write(lines.join('\n') + '\n');
    lines.length = 0;
  }
};
const emit = (l) => {
  lines.push(l);
  if (lines.length >= 64) flush();
};
// Deadlines that passed strictly before a wakeup this late (rtlab's one rule).
const missed = (lat) => (lat <= period ? 0n : (lat - 1n) / period);

const delay = monitorEventLoopDelay({ resolution: 1 });
delay.enable();
emit(`V node ${process.version} v8 ${process.versions.v8} uv ${process.versions.uv}`);
emit(`R arch=${process.arch} workers=${workers} worker_kind=${kind} timer=libuv-ms uv_threadpool=${process.env.UV_THREADPOOL_SIZE || 4}`);

let work = 0;
let done = false;
const threads = [];
if (kind === 'threads') {
  for (let i = 0; i < workers; i++) {
    const w = new Worker(__filename);
    w.on('message', (n) => { work += n; });
    threads.push(w);
  }
} else {
  for (let i = 0; i < workers; i++) {
    const spin = () => {
      if (done) return;
      const t0 = now();
      while (now() - t0 < SLICE_NS) work++;
      setImmediate(spin);
    };
    setImmediate(spin);
  }
}

const start = now();
const periods = duration / period;
emit(`T ${start}`);
flush();
let k = 1n;
let samples = 0;
let timer = null;

function sample() {
  const t = now();
  const lat = t - (start + k * period);
  let m = missed(lat);
  if (m > periods - k) m = periods - k;
  emit(`S ${lat} ${t - start} ${m}`);
  samples++;
  k += 1n + m;
  return k <= periods;
}

function end() {
  done = true;
  if (timer) clearInterval(timer);
  delay.disable();
  emit(`R event_loop_delay_p99_ns=${Math.round(delay.percentile(99))} event_loop_delay_max_ns=${delay.max}`);
  Promise.all(threads.map((w) => w.terminate())).then(() => {
    emit(`E ${samples} ${work}`);
    flush();
  });
}

function rearm() {
  const ms = Number(start + k * period - now()) / 1e6;
  setTimeout(() => (sample() ? rearm() : end()), Math.max(ms, 0));
}

if (method === 'interval') {
  timer = setInterval(() => {
    if (!sample()) end();
  }, Number(period) / 1e6);
} else {
  rearm();
}
