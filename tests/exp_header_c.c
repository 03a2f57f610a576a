/* include/akv/exp.h compiled as C, as a kernel library compiles it, for A4_ExpHeader
 * (test_exp_header.cpp). */
#include <akv/exp.h>

void akv_test_exp_header_c(float* out, const float* x, int n);

void akv_test_exp_header_c(float* out, const float* x, int n) {
  for (int i = 0; i < n; ++i) out[i] = akv_exp(x[i]);
}
