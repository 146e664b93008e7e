// rtlab's probe inside the Go runtime (shipped inside rtlab; built with `go build` and run as
// `rtlab_probe METHOD PERIOD_NS DURATION_NS WORKERS GOMAXPROCS LOCK`).
//
// A goroutine waits for absolute deadlines start + k*period on the runtime's monotonic clock
// and reports each wakeup's lateness on stdout, one line each:
//
//	V <version>                 the runtime
//	R <key>=<value> ...         what the runtime says of itself
//	T <start_ns>                the schedule's start
//	S <latency_ns> <at_ns> <missed>
//	E <samples> <work_units>    the end: samples sent, units of work the workers did
//
// Methods: `ticker` (time.Ticker: latency against the k-th tick), `sleep-until` (time.Sleep
// until the deadline), `timer-reset` (one time.Timer reset to each deadline). Workers are
// goroutines that compute without ever calling into the scheduler (Go preempts them
// asynchronously since 1.14). GOMAXPROCS 0 keeps the runtime's default; LOCK 1 locks the
// measuring goroutine to its OS thread.
package main

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync/atomic"
	"time"
)

func arg(i int) int64 {
	v, err := strconv.ParseInt(os.Args[i], 10, 64)
	if err != nil {
		fmt.Fprintf(os.Stderr, "argument %d: %v\n", i, err)
		os.Exit(2)
	}
	return v
}

// missed: deadlines that passed strictly before a wakeup this late (rtlab's one rule).
func missed(latency, period int64) int64 {
	if latency <= period {
		return 0
	}
	return (latency - 1) / period
}

// schedLatencyP99 reads the runtime's own view of its scheduling delay: the 99th percentile of
// /sched/latencies:seconds (time goroutines spent runnable before running), in ns.
func schedLatencyP99() int64 {
	s := []metrics.Sample{{Name: "/sched/latencies:seconds"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindFloat64Histogram {
		return -1
	}
	h := s[0].Value.Float64Histogram()
	var total uint64
	for _, c := range h.Counts {
		total += c
	}
	if total == 0 {
		return 0
	}
	var seen uint64
	for i, c := range h.Counts {
		seen += c
		if float64(seen) >= 0.99*float64(total) {
			return int64(h.Buckets[i+1] * 1e9)
		}
	}
	return -1
}

func main() {
	method := os.Args[1]
	period, duration, workers := arg(2), arg(3), arg(4)
	if procs := arg(5); procs > 0 {
		runtime.GOMAXPROCS(int(procs))
	}
	lock := arg(6) == 1
	out := bufio.NewWriterSize(os.Stdout, 1<<16)
	fmt.Fprintf(out, "V %s\n", runtime.Version())
	fmt.Fprintf(out, "R arch=%s gomaxprocs=%d num_cpu=%d locked_os_thread=%t workers=%d timer=runtime-netpoller\n",
		runtime.GOARCH, runtime.GOMAXPROCS(0), runtime.NumCPU(), lock, workers)
	var done atomic.Bool
	var work atomic.Int64
	finished := make(chan struct{})
	for i := int64(0); i < workers; i++ {
		go func() {
			var n int64
			for !done.Load() {
				for j := 0; j < 100000; j++ {
					n++
				}
			}
			work.Add(n)
			finished <- struct{}{}
		}()
	}
	if lock {
		runtime.LockOSThread()
	}
	base := time.Now()
	mono := func() int64 { return int64(time.Since(base)) }
	periods := duration / period
	var ticker *time.Ticker
	var timer *time.Timer
	switch method {
	case "ticker":
		ticker = time.NewTicker(time.Duration(period))
	case "timer-reset":
		timer = time.NewTimer(time.Duration(period))
	}
	start := mono()
	fmt.Fprintf(out, "T %d\n", start)
	out.Flush()
	samples := int64(0)
	for k := int64(1); k <= periods; {
		deadline := start + k*period
		switch method {
		case "ticker":
			<-ticker.C
		case "timer-reset":
			<-timer.C
		default:
			time.Sleep(time.Duration(deadline - mono()))
		}
		now := mono()
		lat := now - deadline
		m := missed(lat, period)
		if m > periods-k {
			m = periods - k
		}
		fmt.Fprintf(out, "S %d %d %d\n", lat, now-start, m)
		samples++
		if samples%64 == 0 {
			out.Flush()
		}
		k += 1 + m
		if timer != nil && k <= periods {
			timer.Reset(time.Duration(start + k*period - mono()))
		}
	}
	done.Store(true)
	for i := int64(0); i < workers; i++ {
		<-finished
	}
	fmt.Fprintf(out, "R sched_latency_p99_ns=%d\n", schedLatencyP99())
	fmt.Fprintf(out, "E %d %d\n", samples, work.Load())
	out.Flush()
}
