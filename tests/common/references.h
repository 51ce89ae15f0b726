// Plain C++ fp64 references of the example kernels and the helpers tests use to compare a
// device tensor against one (the operators' textbook math). References live only under tests/.
#pragma once

#include <string>
#include <vector>

#include "tl/runtime.h"

namespace tl::ref {

std::vector<double> matmul(const std::vector<double>& a, const std::vector<double>& b, int M, int N,
                           int K);
/// y = w * x * rsqrt(mean(x^2) + eps), per row of x [M, N].
std::vector<double> rms_norm(const std::vector<double>& x, const std::vector<double>& w, int M,
                             int N, double eps);
/// O = softmax(scale * Q K^T) V for one (batch, head): Q, K, V [S, D].
std::vector<double> attention(const std::vector<double>& q, const std::vector<double>& k,
                              const std::vector<double>& v, int S, int D, double scale);

/// Compares got against want with |got - want| <= atol + rtol * |want|; returns "" or a
/// description of the first few mismatches (coordinates in a [rows, cols] view).
std::string compare(const std::vector<double>& got, const std::vector<double>& want, int64_t cols,
                    double atol, double rtol);

}  // namespace tl::ref
