// The hand-written AscendC test kernels of tests/ascendc/kernels/ (our own code, in the form the
// AscendC emitter produces, docs/ascendc.md), as the host sees them: extern "C"
// entries over GM addresses and scalars. Each is compiled against the CPU model
// (include/ascendc_cpu/kernel_operator.h) and run by ascendc_model_tests next to its tl::T
// twin on the virtual NPU (tests/ascendc/twins.h).
#pragma once

#include <cstdint>

extern "C" {
// Z = X + Y over [M, N], R rows per AIV (block b's AIV v takes rows (2b + v) R ...), padded
// DataCopyPad both ways; fp16 and fp32.
void tl_test_add_f16(uint8_t* X, uint8_t* Y, uint8_t* Z, int32_t M, int32_t N, int32_t R);
void tl_test_add_f32(uint8_t* X, uint8_t* Y, uint8_t* Z, int32_t M, int32_t N, int32_t R);
// The fp16 add with the WaitFlag<MTE2_V> before the Add deleted (the mutation test).
void tl_test_add_f16_no_wait(uint8_t* X, uint8_t* Y, uint8_t* Z, int32_t M, int32_t N, int32_t R);
// Row softmax of fp32 X [M, N] into Y, 8 rows per AIV: ReduceMax / ReduceSum (Pattern AR), Brcb
// and the mask + repeat forms of Sub and Mul, Exp, Duplicate, Div.
void tl_test_softmax(uint8_t* X, uint8_t* Y, int32_t M, int32_t N);
}
