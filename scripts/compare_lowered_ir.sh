#!/usr/bin/env bash
# Compares the lowered IR two builds of tlc print (docs/compiler.md, "Compile latency": a round
# that only makes the compiler faster must leave it byte-identical) for every registered kernel
# at its defaults and the developer kernels at the compile-time bench's shapes and at tails
# (sizes 1, 7, 33, 1000, 4097; loops of 1, 7, 8 and 33 trips around the unroll's fold).
#
#   scripts/compare_lowered_ir.sh OLD_TLC NEW_TLC     # e.g. /work/main/build/default/tlc
#
# Prints one line per differing case and exits 1 if any differs. In CI the same property is
# checked within one build by ReplayShortcuts.SameLoweredIrWithAndWithout (the shortcuts off
# are the tree before them); this script is for a round's before/after.
set -u
old=$1
new=$2
cases=()
for k in $("$new" list 2>/dev/null | awk '/^[a-z_0-9]+ /{print $1}'); do cases+=("$k"); done
cases+=(
  "gemm_dev M=2048 N=2048 K=2048"
  "gemm_dev M=4096 N=4096 K=4096"
  "gemm_dev M=512 N=512 K=65536"
  "gemm_dev M=1000 N=777 K=4097"
  "gemm_dev M=1 N=7 K=33"
  "gemm_dev M=33 N=1000 K=7"
  "gemm_dev M=2048 N=1024 K=3000 num_stages=3"
  "flash_attention_dev H=16 S=4096"
  "flash_attention_dev H=12 S=32768"
  "flash_attention_dev H=12 S=65536"
  "flash_attention_dev H=12 S=131072"
  "flash_attention_dev S=1"
  "flash_attention_dev S=7"
  "flash_attention_dev S=33"
  "flash_attention_dev S=1000 num_stages=3"
  "flash_attention_dev S=1024"
  "flash_attention_dev S=1152"
  "flash_attention_dev S=4352"
  "flash_attention_dev S=4097 H=2"
  "flash_attention_dev S=777 H=3 num_stages=4"
  "matmul_add_dev M=100 N=300 K=7000"
  "matmul_add_dev M=1 N=7 K=4097"
  "matmul_add_dev M=33 N=1000 K=1000"
  "softmax_dev M=4096 N=4096 tiles=22"
  "softmax_dev M=1000 N=333"
  "softmax_dev M=4097 N=33 tiles=33"
  "gelu_dev M=16416 tiles=171"
  "gelu_dev M=4097 N=33 tiles=33"
  "gelu_dev M=7 tiles=1"
  "rms_norm_dev M=8192 N=4096 tiles=128"
  "rms_norm_dev M=4097 N=777 tiles=33 dtype=float16"
  "add_dev M=4097 N=33 bM=7"
  "add_dev M=1 N=1"
)
bad=0
n=0
for c in "${cases[@]}"; do
  read -r -a w <<<"$c"
  args=("${w[0]}")
  for s in "${w[@]:1}"; do args+=(--set "$s"); done
  # --time-passes lowers and prints the lowered IR on stdout (the timings go to stderr).
  a=$("$old" print --time-passes "${args[@]}" 2>/dev/null; echo "exit $?")
  b=$("$new" print --time-passes "${args[@]}" 2>/dev/null; echo "exit $?")
  n=$((n + 1))
  if [[ "$a" != *"exit 0" ]]; then
    echo "FAILED TO LOWER: $c"
    bad=1
  elif [[ "$a" != "$b" ]]; then
    echo "DIFFERS: $c"
    bad=1
  fi
done
echo "$n cases compared"
exit $bad
