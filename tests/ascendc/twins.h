// The tl::T twins of the hand-written AscendC test kernels (kernels/kernels.h): the same
// instructions, buffers and synchronisation written as expert-mode Tile IR, run on the virtual
// NPU so that ascendc_model_tests can compare the CPU model's outputs with the VM's bit for bit.
#pragma once

#include "tl/ir.h"

namespace tl::ascendc_tests {

/// Z = X + Y over [M, N], R rows per AIV (kernels/add.cpp).
PrimFunc add_twin(int M, int N, int R, DType dtype);
/// Row softmax of fp32 X [M, N], 8 rows per AIV (kernels/softmax.cpp).
PrimFunc softmax_twin(int M, int N);

}  // namespace tl::ascendc_tests
