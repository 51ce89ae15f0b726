#!/usr/bin/env bash
# Runs one fuzz campaign (docs/fuzzing.md) and prints its figures: inputs executed, wall
# time, coverage (libFuzzer's cov = edges, ft = features) and where any crash went.
#
#   cmake --preset fuzz && cmake --build --preset fuzz
#   scripts/fuzz.sh ir_launch            # 1e6 inputs
#   scripts/fuzz.sh tensor_api 200000    # a shorter run
#   scripts/fuzz.sh ir_launch 1000000 -seed=7 -jobs=...   # extra flags go to libFuzzer
#
# The campaign keeps its growing corpus, log and crash artifacts under
# build/fuzz/work/<target>/ (TL_FUZZ_WORK overrides), so a later run resumes from it; the
# committed seeds (fuzz/corpus/<target>) and fixed crashes (fuzz/regressions/<target>) are
# read, never written. libFuzzer stops at the first crash; the exit status is its own.
set -euo pipefail

target=${1:?usage: scripts/fuzz.sh ir_launch|tensor_api [RUNS] [libFuzzer flags...]}
runs=${2:-1000000}
shift $(( $# >= 2 ? 2 : 1 ))
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$root/build/fuzz/fuzz/fuzz_$target
[ -x "$bin" ] || { echo "no $bin: cmake --preset fuzz && cmake --build --preset fuzz" >&2; exit 2; }
case $target in
  ir_launch) max_len=16384 ;;
  tensor_api) max_len=4096 ;;
  *) echo "unknown target $target" >&2; exit 2 ;;
esac
work=${TL_FUZZ_WORK:-$root/build/fuzz/work/$target}
mkdir -p "$work/corpus" "$work/artifacts"
log=$work/log.txt

stamp=$work/.started
touch "$stamp"
start=$(date +%s.%N)
status=0
# One worker, deterministic per -seed; -timeout catches a hang (a launch is milliseconds),
# -rss_limit_mb a runaway allocation.
"$bin" -runs="$runs" -max_len=$max_len -timeout=20 -rss_limit_mb=4096 -print_final_stats=1 \
  -dict="$root/fuzz/$target.dict" -artifact_prefix="$work/artifacts/" "$@" \
  "$work/corpus" "$root/fuzz/corpus/$target" "$root/fuzz/regressions/$target" > "$log" 2>&1 || status=$?
end=$(date +%s.%N)

last=$(grep -E '^#[0-9]+' "$log" | tail -1 || true)
execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
echo "fuzz_$target: ${execs:-?} inputs in $(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.0f", b - a }') s (exit $status)"
echo "  last status: ${last:-none}"
echo "  cov (edges) $(sed -n 's/.*cov: \([0-9]*\).*/\1/p' <<< "$last"), ft (features) $(sed -n 's/.*ft: \([0-9]*\).*/\1/p' <<< "$last")"
grep -E '^stat::' "$log" | sed 's/^/  /' || true
if [ "$status" -ne 0 ]; then
  echo "  crash: see $log; reproducer(s):"
  find "$work/artifacts" -type f -newer "$stamp" | sed 's|^|    |'
fi
exit "$status"
