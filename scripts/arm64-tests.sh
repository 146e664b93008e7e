#!/usr/bin/env bash
# Cross-builds rtlab for aarch64-unknown-linux-gnu and runs its test suite under qemu-user
# (Debian's qemu-user-static): the emulated binary's clock sleeps, scheduling policies, mlockall,
# tracefs and /proc pass through to this machine's kernel, so the real runs run too. Root, on
# Debian with gcc-aarch64-linux-gnu, libc6-dev-arm64-cross and qemu-user-static installed
# (.ci/run installs them). Tests that cannot run under emulation are named below with the
# reason, and printed.
set -euo pipefail
cd "$(dirname "$0")/.."
target=aarch64-unknown-linux-gnu

if ! rustup target list --installed 2>/dev/null | grep -qx "$target"; then
    rustup target add "$target"
fi
# Tests that spawn the binary themselves (not through cargo's runner) need the kernel to hand
# aarch64 ELF files to qemu: binfmt_misc, registered as Debian's qemu-user-static describes it.
if [ ! -e /proc/sys/fs/binfmt_misc/register ]; then
    mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
fi
if [ ! -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ]; then
    sed 's|:/usr/libexec/qemu-binfmt/aarch64-binfmt-P:.*$|:/usr/bin/qemu-aarch64-static:OCF|' \
        /usr/lib/binfmt.d/qemu-aarch64.conf > /proc/sys/fs/binfmt_misc/register
fi
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER="qemu-aarch64-static -L /usr/aarch64-linux-gnu"
export QEMU_LD_PREFIX=/usr/aarch64-linux-gnu

# name — why it cannot run under qemu-user (it runs on x86_64 in the same CI, and needs the board
# to be checked on aarch64).
skipped=(
    "threads_named_later_are_found_by_their_name — the program it watches is built for this x86_64 host; its syscall numbers are not the aarch64 ones an aarch64 build decodes (on a board both are aarch64)"
    "the_measuring_thread_takes_no_page_fault_while_it_measures — /proc counts the faults of qemu's thread, which translates code and maps its own memory as it runs, not those of the emulated program"
    "a_watched_process_that_exits_is_not_replaced_by_the_stranger_that_takes_its_pid — the squatter that takes the dead target's PID is started by the emulated test harness, whose process creation qemu-user emulates (and the target is an x86_64 host program); checked by hand with the aarch64 binary: the stranger is not adopted"
    "a_run_records_the_findings_for_its_cpus_and_warns_about_an_irq_that_disturbs_them — the test rewrites its fake /proc/interrupts while the run samples it; emulated on a loaded machine the rewrite can come after the doctor's second read"
    "a_sched_other_sleeper_shows_the_kernels_50us_timer_slack — an exact count of 300 timer releases read from the trace by the emulated reader: seen failing emulated in a loaded CI run (its message was not kept; the likely cause is the emulated reader, ten times slower, falling behind); the decoding it checks is covered emulated by the other watch tests, and exactly natively"
    "the_predicted_interval_holds_ — (three tests, one per parent distribution) 540 GEV predictions of simulated runs, each a parametric bootstrap of sorts (pure arithmetic over a seeded generator): about 170 s emulated, half the library's time limit here, 15 s natively"
    "a_kernel_configuration_that_inflates_without_end_is_read_in_bounded_memory — it asserts the doctor's peak RSS, which emulated is qemu-user's own (it translates the code as it runs), and inflates 256 MiB: the bound it checks is the same code natively"
    "long_runs_checkpoint_so_a_crash_keeps_the_results_so_far — the emulated histogram copy is slower than the probe's period: the checkpoint takes the documented racing path (the histogram of an instant before), which the test rules out for a native probe"
)
# Whole test files not run emulated. The first three: their expectations are rates of busy CPUs
# and of worker processes, which emulation slows by 5 to 20 times, unevenly. The others test code
# that is the same on both instruction sets (text and file formats, HTTP, reports, the stand-ins'
# tables over the measuring code the emulated files already run, programs of this x86_64 host)
# and took most of this stage's time emulated: the emulated run keeps what can differ by
# instruction set (src/rt's syscalls, layouts and counter, the probes, rt-app's threads and
# mutexes, tracefs and /proc parsing, watch).
not_emulated=(
    "loads_sweeps — load throughputs and a command load's restarts within a second"
    "noise — busy-loop noise counts per second and the noise a FIFO task makes"
    "hardening — hundreds of worker processes started and stopped within bounds"
    "monitor — Prometheus exposition and scrapes over HTTP: no instruction-set-dependent code"
    "hlog — HdrHistogram log encoding, explicit in byte order and width"
    "rtla — rtla's tables and actions over the OS probe and the noise loop (emulated: real_runs, lib)"
    "timerlat — timerlat's tables and stages over the OS probe (emulated: real_runs, lib)"
    "reports — HTML, SVG and Markdown rendering checked in this host's Chromium"
    "guide — the README's walkthrough: commands covered emulated one by one elsewhere"
    "fleet — merging results from several machines: file formats and statistics"
    "beam — the Erlang VM probe: erl is this host's x86_64 program, rtlab only reads its pipe"
    "runtimes — the Ada, Go, Node.js and Python probes: this host's x86_64 programs, read over pipes"
    "cost — what a run costs rtlab: emulated, its memory and CPU time are qemu-user's, which translates the code as it runs"
    "watch_bpf — watch's BPF backend: qemu-user does not pass the bpf(2) system call through (the records' decoding runs emulated in the library's tests; the BPF object is built for aarch64 by build.rs)"
)
args=()
echo "rtlab on $target under qemu-user: NOT RUN here, with the reason (all run natively above):"
for s in "${skipped[@]}"; do
    echo "  - test $s"
    args+=(--skip "${s%% — *}")
done
targets=(--lib)
for f in tests/*.rs; do
    name=$(basename "$f" .rs)
    skip=no
    for n in "${not_emulated[@]}"; do
        [ "${n%% — *}" = "$name" ] && skip=yes
    done
    [ "$skip" = no ] && targets+=("--test=$name")
done
for n in "${not_emulated[@]}"; do
    echo "  - tests/${n%% — *}.rs — ${n#* — }"
done

# No separate clippy for aarch64: its only own code is src/rt/counter.rs's cntvct_el0 read, which
# the build below compiles; clippy runs on all targets natively in .ci/run.
cargo build --locked --target "$target"
cargo test --locked --target "$target" --no-run

# qemu-user can deadlock the forked child of a multi-threaded emulated program before it execs
# (both of the child's threads asleep on futexes, no CPU, for ever): seen twice in one CI run, the
# test harness of tests/cyclictest_compat.rs and of tests/runtimes.rs each spawning rtlab, and in
# the library's tests that fork a worker (measure::relay's, here on 2026-11-29). Such a hang is
# the emulator's, not a result: each test binary has HANG_LIMIT seconds (the slowest, the
# library's unit tests, takes about 150 s emulated) and HANG_TRIES tries. A test that fails, or
# a binary that hangs at every try, fails the run; every hang is printed, with the tests that
# were still running. The tests' own bounds on a spawned rtlab are never shorter than HANG_LIMIT
# here (RTLAB_TEST_HANG_LIMIT, tests/common's `spawn_bound`), so that such a hang reaches this
# retry instead of failing its test as an empty run (tests/cyclictest_compat.rs and
# tests/cli_errors.rs in CI, 2026-11-29).
HANG_LIMIT=${HANG_LIMIT:-300}
HANG_TRIES=${HANG_TRIES:-3}
export RTLAB_TEST_HANG_LIMIT=$HANG_LIMIT
# Bounds that say "this ends within N s" are stretched by this factor (tests/common `slow`):
# emulated, rtlab and its children start and stop five to ten times slower.
export RTLAB_TEST_SLOWDOWN=${RTLAB_TEST_SLOWDOWN:-6}
# Emulated, the tests are the emulator's CPU time, not waits: one test per CPU (libtest's own
# default), not the six at a time .cargo/config.toml gives the native suite.
export RUST_TEST_THREADS=${RUST_TEST_THREADS:-$(nproc)}
# Each binary's output is kept until the end, where what failed is printed again: CI shows only the
# log's last lines, and a failure early in this stage would otherwise be out of sight. It goes to
# a file, printed when the binary ends, not through a pipe: a deadlocked child that outlives the
# timeout keeps its output open, and a reader of the pipe would wait for it for ever.
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
emulated() {
    local rc=0
    timeout --kill-after=10 "$HANG_LIMIT" \
        cargo test --locked --target "$target" --no-fail-fast "$1" -- "${args[@]}" > "$logs/last" 2>&1 || rc=$?
    cat "$logs/last"
    return "$rc"
}
# Keeps the failures section of the binary that just ran (or its last lines if it has none).
kept() {
    {
        echo "=== $1 under qemu-user: $2"
        if grep -q '^failures:$' "$logs/last"; then
            sed -n '/^failures:$/,$p' "$logs/last"
        else
            tail -n 40 "$logs/last"
        fi
    } >> "$logs/failed"
}
# What a hung binary leaves behind: emulated processes in their own process groups, which
# timeout's signals do not reach, still running (and holding root's signals and timers).
stragglers() {
    local left
    left=$(pgrep -f "target/$target/" || true)
    if [ -n "$left" ]; then
        echo "rtlab: killing what the hung $1 left running under qemu-user: $(echo $left)" >&2
        kill -KILL $left 2>/dev/null || true
    fi
    # Signals queued for root (all its processes): a leak here ends in every timer_create and
    # real-time signal failing with EAGAIN, as it once did in this stage.
    echo "rtlab: after $1, $(grep SigQ /proc/self/status)" >&2
}
status=0
for t in "${targets[@]}"; do
    for try in $(seq "$HANG_TRIES"); do
        rc=0
        emulated "$t" || rc=$?
        if [ "$rc" -ne 124 ] && [ "$rc" -ne 137 ]; then break; fi
        kept "$t" "did not finish in ${HANG_LIMIT} s (try $try of $HANG_TRIES)"
        echo "rtlab: $t did not finish in ${HANG_LIMIT} s under qemu-user (its fork deadlock), try $try of $HANG_TRIES" >&2
        stragglers "$t"
    done
    if [ "$rc" -ne 0 ]; then
        kept "$t" "failed (exit $rc)"
        echo "rtlab: $t failed under qemu-user (exit $rc)" >&2
        status=1
    fi
done
if [ -s "$logs/failed" ]; then
    echo
    echo "rtlab: what failed or hung in this stage, repeated from above:"
    cat "$logs/failed"
fi
exit "$status"
