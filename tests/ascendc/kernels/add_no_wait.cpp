// Test kernel: kernels/add.cpp with the WaitFlag<MTE2_V> before its Add deleted, the mutation
// the hazard checker must name (ascendc_model_tests, AscendcModel.MutantWithoutWaitFlag).
#define TL_ADD_NAME tl_test_add_f16_no_wait
#define TL_ADD_T half
#define TL_MUTANT_NO_WAIT
#include "add.cpp"
