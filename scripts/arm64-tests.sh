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
    "hundreds_of_process_workers_do_not_make_a_run_outlast_its_duration — each worker process is its own emulator; hundreds start in seconds, not in the test's bound"
    "sigterm_stops_a_run_with_hundreds_of_process_workers_at_once — the same: hundreds of emulators to start and stop"
    "many_workers_count_only_the_work_done_inside_the_measured_window — the same: 60 emulated worker processes do not all start in the window"
    "without_erl_the_error_says_how_to_get_one — it empties PATH, where cargo's runner (qemu-aarch64-static) is found"
    "threads_named_later_are_found_by_their_name — the program it watches is built for this x86_64 host; its syscall numbers are not the aarch64 ones an aarch64 build decodes (on a board both are aarch64)"
    "long_runs_checkpoint_so_a_crash_keeps_the_results_so_far — the emulated histogram copy is slower than the probe's period: the checkpoint takes the documented racing path (the histogram of an instant before), which the test rules out for a native probe"
)
args=()
echo "rtlab on $target under qemu-user: NOT RUN here, with the reason:"
for s in "${skipped[@]}"; do
    echo "  - $s"
    args+=(--skip "${s%% — *}")
done

cargo clippy --locked --target "$target" --all-targets -- -D warnings
cargo build --locked --target "$target"
cargo test --locked --target "$target" --no-fail-fast -- "${args[@]}"
