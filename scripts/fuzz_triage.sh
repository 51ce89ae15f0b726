#!/usr/bin/env bash
# Groups a fuzz campaign's crash artifacts by cause (docs/fuzzing.md): runs each through the
# target and keys it on the first sanitizer or harness report, digits and addresses blanked.
# Prints one line per distinct cause: the count, the report, the smallest reproducer.
#   scripts/fuzz_triage.sh ir_launch [DIR]   # DIR: build/fuzz/work/ir_launch/artifacts
set -uo pipefail
target=${1:?usage: scripts/fuzz_triage.sh ir_launch|tensor_api [DIR]}
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${2:-$root/build/fuzz/work/$target/artifacts}
bin=$root/build/fuzz/fuzz/fuzz_$target
declare -A count best
for f in "$dir"/*; do
  [ -f "$f" ] || continue
  report=$("$bin" "$f" 2>&1 | grep -m1 -E 'runtime error:|ERROR: AddressSanitizer|==== fuzz_|ERROR: libFuzzer|SUMMARY:')
  key=$(sed -E 's/0x[0-9a-f]+/ADDR/g; s/\[[^]]*\]/[...]/g; s/[0-9]+/N/g; s/^==N==//' <<< "${report:-no report (fixed?)}" | cut -c1-200)
  count[$key]=$(( ${count[$key]:-0} + 1 ))
  if [ -z "${best[$key]:-}" ] || [ "$(stat -c %s "$f")" -lt "$(stat -c %s "${best[$key]}")" ]; then best[$key]=$f; fi
done
for key in "${!count[@]}"; do printf '%5d  %s  <- %s\n' "${count[$key]}" "$key" "${best[$key]}"; done | sort -rn
