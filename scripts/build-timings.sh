#!/usr/bin/env bash
# Measures a clean build of the workspace as a newcomer's first command does it:
#   scripts/build-timings.sh <git source (path or URL)> <fresh directory> [ref]
# clones <source> (at <ref>, else its HEAD) into <directory>, builds every target there with
# `cargo build --workspace --all-targets --timings` in its own target directory, and prints
# the wall time, the load average before and after, the total CPU time of the build (user +
# system of every process it ran), the CPU time of each compiled unit (scripts/rustc-cpu, a
# RUSTC_WRAPPER), the ten dearest units, and the number of test binaries. The report lands in
# <directory>/build-timings.txt beside cargo's own HTML (<directory>/target/cargo-timings/).
# docs/build-timings.md holds the figures measured with it.
set -euo pipefail
src=$1 dir=$2 ref=${3:-}
here=$(cd "$(dirname "$0")" && pwd)
git clone -q "$src" "$dir"
[ -z "$ref" ] || git -C "$dir" checkout -q "$ref"
cd "$dir"
# A copy of the wrapper: the clone being measured may predate it, and editing it meanwhile
# must not reach a running build.
wrapper=$dir/.git/rustc-cpu
cp "$here/rustc-cpu" "$wrapper"
log=$dir/rustc-cpu.log
: >"$log"
load0=$(cut -d' ' -f1-3 /proc/loadavg)
t0=$(date +%s.%N)
CARGO_INCREMENTAL=0 RUSTC_WRAPPER="$wrapper" RUSTC_CPU_LOG="$log" \
  /usr/bin/time -f '%U %S' -o "$dir/cargo-cpu.txt" \
  cargo build --workspace --all-targets --timings 2>"$dir/build.err"
t1=$(date +%s.%N)
load1=$(cut -d' ' -f1-3 /proc/loadavg)
{
  echo "commit $(git rev-parse --short HEAD)  $(rustc -V)"
  printf 'wall %.0f s; load average (1, 5, 15 min) before: %s, after: %s\n' "$(echo "$t1 - $t0" | bc)" "$load0" "$load1"
  read -r u s <"$dir/cargo-cpu.txt"
  printf 'total CPU %.0f s (user %.0f + system %.0f), every process the build ran\n' "$(echo "$u + $s" | bc)" "$u" "$s"
  awk '{n++; c += $3 + $4} END {printf "rustc CPU %.0f s over %d units\n", c, n}' "$log"
  echo "test binaries: $(awk '$2 == "test"' "$log" | wc -l) ($(awk '$2 == "test" {print $1}' "$log" | sort | tr '\n' ' '))"
  echo "the ten dearest units (CPU s = user + system; wall s under the load above):"
  awk '{printf "%8.1f %7.1f  %s (%s)\n", $3 + $4, $5, $1, $2}' "$log" | sort -rn | head -10 || true # head closes the pipe early
} | tee "$dir/build-timings.txt"
