// Test kernel: kernels/add.cpp for fp32 (kernels.h).
#define TL_ADD_NAME tl_test_add_f32
#define TL_ADD_T float
#include "add.cpp"
