#!/usr/bin/env bash
# How many samples per second the Erlang VM → pipe → rtlab path sustains, against the 1 kHz a
# 1 ms probe needs. A stand-in "erl" runs the real VM with a generator that writes N sample
# records the way rtlab_probe.erl does (batches of 64 through an fd port), as fast as it can;
# rtlab parses and records every one. Reports the wall time and the rate (median of 3).
#
# usage: scripts/beam-stream-bench.sh [N] [path/to/rtlab]
set -euo pipefail
N=${1:-2000000}
RTLAB=${2:-target/x86_64-unknown-linux-gnu/release/rtlab}
ERL=$(command -v erl) || { echo "erl not found: apt-get install erlang-nox" >&2; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cat > "$dir/flood.erl" <<ERLANG
-module(flood).
-export([main/1]).
main(N) ->
    Out = open_port({fd, 0, 1}, [out, binary]),
    port_command(Out, <<"V flood\nA flood\nC 25 2 2 2 unbound\nP normal none\nT 0\n">>),
    T0 = erlang:monotonic_time(nanosecond),
    loop(Out, N, 0, [], 0),
    T1 = erlang:monotonic_time(nanosecond),
    io:format(standard_error, "vm_ns ~b~n", [T1 - T0]),
    port_command(Out, ["E ", integer_to_list(N), " 0\n"]),
    erlang:halt(0).
loop(Out, 0, _, Buf, _) -> port_command(Out, Buf);
loop(Out, N, I, Buf, K) ->
    Rec = ["S ", integer_to_list(20000 + I rem 5000), \$\s, integer_to_list(I * 1000000), " 0\n"],
    case K + 1 >= 64 of
        true -> port_command(Out, [Buf | Rec]), loop(Out, N - 1, I + 1, [], 0);
        false -> loop(Out, N - 1, I + 1, [Buf | Rec], K + 1)
    end.
ERLANG
cat > "$dir/erl-flood" <<SH
#!/bin/sh
cd "$dir" && exec "$ERL" -noshell -noinput -eval '{ok, flood} = compile:file("flood.erl"), flood:main($N).'
SH
chmod +x "$dir/erl-flood"
echo "samples: $N (a 1 ms probe sends 1000/s)"
for i in 1 2 3; do
  start=$(date +%s.%N)
  "$RTLAB" beam run --erl "$dir/erl-flood" -D 600s --json "$dir/r.json" >/dev/null 2>"$dir/err" || { cat "$dir/err"; exit 1; }
  end=$(date +%s.%N)
  got=$(python3 -c "import json;print(json.load(open('$dir/r.json'))['all']['cycles'])")
  python3 -c "w=$end-$start; print(f'run $i: {w:.2f} s wall (VM start included), {$got} samples recorded, {$got/w/1e3:.0f} k samples/s = {$got/w/1000:.0f}x the 1 kHz needed')"
done
