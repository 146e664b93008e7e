"""rtlab's probe inside Python's asyncio (shipped inside rtlab; run as
`python3 rtlab_probe.py METHOD PERIOD_NS DURATION_NS WORKERS WORKER_KIND`).

A periodic coroutine wakes at absolute deadlines on CLOCK_MONOTONIC (asyncio's loop.time() is
time.monotonic()) and reports each wakeup's lateness on stdout, one line per sample:

  V <version>                 the runtime
  R <key>=<value> ...         what the runtime says of itself
  T <start_ns>                the schedule's start (CLOCK_MONOTONIC ns)
  S <latency_ns> <at_ns> <missed>
  E <samples> <work_units>    the end: samples sent, units of work the workers did

Methods: `sleep` (asyncio.sleep until the next deadline) and `call-at` (loop.call_at the
deadline). Workers: `coroutines` that compute without yielding for a slice of 10 ms, then yield
once; `threads` that compute and contend for the GIL.
"""
import asyncio
import platform
import sys
import threading
import time

SLICE_NS = 10_000_000


def missed_periods(latency, period):
    """Deadlines that passed strictly before a wakeup this late (rtlab's one rule)."""
    return (latency - 1) // period if latency > period else 0


class Probe:
    def __init__(self, period, duration):
        self.period = period
        self.periods = duration // period
        self.k = 1
        self.lines = []
        self.samples = 0
        self.work = 0
        self.done = False

    def emit(self, line):
        self.lines.append(line)
        if len(self.lines) >= 64:
            self.flush()

    def flush(self):
        if self.lines:
            sys.stdout.write("\n".join(self.lines) + "\n")
            sys.stdout.flush()
            self.lines.clear()

    def deadline(self, start):
        return start + self.k * self.period

    def sample(self, now, start):
        """Records the wakeup at `now` for deadline k; True while deadlines remain."""
        latency = now - self.deadline(start)
        missed = min(missed_periods(latency, self.period), self.periods - self.k)
        self.emit(f"S {latency} {now - start} {missed}")
        self.samples += 1
        self.k += 1 + missed
        return self.k <= self.periods


async def by_sleep(p, start):
    more = p.periods > 0
    while more:
        await asyncio.sleep(max(p.deadline(start) - time.monotonic_ns(), 0) / 1e9)
        more = p.sample(time.monotonic_ns(), start)


async def by_call_at(p, start):
    loop = asyncio.get_running_loop()
    finished = loop.create_future()

    def fire():
        if p.sample(time.monotonic_ns(), start):
            loop.call_at(p.deadline(start) / 1e9, fire)
        elif not finished.done():
            finished.set_result(None)

    loop.call_at(p.deadline(start) / 1e9, fire)
    await finished


async def spin_coroutine(p):
    while not p.done:
        t0 = time.monotonic_ns()
        while time.monotonic_ns() - t0 < SLICE_NS:
            p.work += 1
        await asyncio.sleep(0)


def spin_thread(p):
    while not p.done:
        p.work += 1


async def main():
    method, period, duration, workers, kind = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
    p = Probe(period, duration)
    loop = asyncio.get_running_loop()
    info = time.get_clock_info("monotonic")
    p.emit(f"V {platform.python_implementation()} {platform.python_version()}")
    p.emit(f"R loop={type(loop).__name__} clock_resolution_ns={int(info.resolution * 1e9)} "
           f"switch_interval_ns={int(sys.getswitchinterval() * 1e9)} workers={workers} worker_kind={kind}")
    tasks = []
    threads = []
    if kind == "coroutines":
        tasks = [asyncio.create_task(spin_coroutine(p)) for _ in range(workers)]
    else:
        threads = [threading.Thread(target=spin_thread, args=(p,), daemon=True) for _ in range(workers)]
        for t in threads:
            t.start()
    start = time.monotonic_ns()
    p.emit(f"T {start}")
    p.flush()
    if p.periods > 0:
        await (by_sleep if method == "sleep" else by_call_at)(p, start)
    p.done = True
    for t in tasks:
        await t
    for t in threads:
        t.join()
    p.emit(f"E {p.samples} {p.work}")
    p.flush()


if __name__ == "__main__":
    asyncio.run(main())
