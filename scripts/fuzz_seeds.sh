#!/bin/sh
# Regenerates the registry part of the ir_launch fuzz seed corpus (fuzz/corpus/ir_launch/
# kernel_*.ir): every registered kernel printed at a size small enough for the fuzz target to
# launch (a few blocks, tiny tensors). Run from the repository root after building tlc:
#   ./scripts/fuzz_seeds.sh [path/to/tlc]
# The hand-written seeds (snippet_*.ir) are edited by hand. docs/fuzzing.md has the rest.
set -eu
TLC=${1:-build/default/tlc}
OUT=fuzz/corpus/ir_launch

# seed FILE DIRECTIVES KERNEL --set ... : the kernel's IR text, then `#fuzz:` bindings if any.
seed() {
  file=$1 directives=$2
  shift 2
  "$TLC" print --no-loc "$@" > "$OUT/$file.ir"
  if [ -n "$directives" ]; then echo "#fuzz: $directives" >> "$OUT/$file.ir"; fi
}

seed kernel_copy_gm_ub "" copy_gm_ub --set M=32 --set N=128 --set tM=16 --set tN=64 --set blocks=2
seed kernel_elementwise_add "" elementwise_add --set M=2 --set N=256 --set tile=128 --set blocks=2
seed kernel_elementwise_add_f32 "" elementwise_add --set M=3 --set N=128 --set tile=64 --set blocks=1 --set dtype=float32
seed kernel_add_dev "" add_dev --set M=4 --set N=256 --set bM=2
seed kernel_rms_norm_dev "eps=1e-6" rms_norm_dev --set M=16 --set N=256 --set rM=8
seed kernel_gelu_dev "" gelu_dev --set M=4 --set N=256 --set bM=2 --set dtype=float16
seed kernel_softmax_dev "" softmax_dev --set M=16 --set N=64 --set bM=8
seed kernel_gemm_dev "" gemm_dev --set M=64 --set N=64 --set K=64 --set bM=32 --set bN=32 --set bK=32
# Tails (legalize_copies): a short last block, rows that are not whole 32-byte blocks, K tails.
seed kernel_add_dev_tails "" add_dev --set M=5 --set N=37 --set bM=2
seed kernel_rms_norm_dev_tails "eps=1e-6" rms_norm_dev --set M=11 --set N=100 --set rM=8 --set dtype=float16
seed kernel_softmax_dev_tails "" softmax_dev --set M=9 --set N=37 --set bM=8
seed kernel_gemm_dev_tails "" gemm_dev --set M=40 --set N=24 --set K=40 --set bM=32 --set bN=16 --set bK=32
# A cube -> vector channel through a compiler-made workspace (insert_channel_syncs).
seed kernel_matmul_add_dev "" matmul_add_dev --set M=40 --set N=32 --set K=40 --set bM=32 --set bN=16 --set bK=32
seed kernel_flash_attention_dev "" flash_attention_dev --set S=128 --set D=32 --set bM=64 --set bN=32
seed kernel_gelu "" gelu --set M=2 --set N=256 --set tile=128 --set blocks=2
seed kernel_flash_attention "" flash_attention --set S=64 --set D=64 --set bM=32 --set bN=32 --set bK=32 --set bD=32
seed kernel_flash_attention_pipelined "" flash_attention_pipelined --set S=64 --set D=64 --set bM=32 --set bN=32 \
  --set bK=32 --set bD=32
seed kernel_gemm "" gemm --set M=64 --set N=64 --set K=64 --set bM=32 --set bN=32 --set bK=32
seed kernel_gemm_pipelined "" gemm_pipelined --set M=64 --set N=64 --set K=64 --set bM=32 --set bN=32 --set bK=32 \
  --set kL1=64 --set blocks=2
seed kernel_minicv "" minicv --set M=64 --set N=64 --set K=32 --set bM=32 --set bN=32
seed kernel_rms_norm "eps=1e-6" rms_norm --set M=32 --set N=256 --set rM=8 --set bN=128 --set blocks=2
seed kernel_rms_norm_1pass "eps=0.5 seed=7" rms_norm --set M=32 --set N=256 --set rM=8 --set bN=128 --set blocks=2 \
  --set passes=1
seed kernel_rms_norm_dynamic "M=19 eps=1e-6" rms_norm_dynamic --set N=256 --set rM=8 --set bN=128 --set blocks=2
