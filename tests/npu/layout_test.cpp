// Fractal layouts: hand-computed offsets (including asc-devkit's (20, 28) fp16 ND->NZ example),
// ND->NZ->ND round trips on odd sizes with zero padding, L1->L0A/L0B loads with and without
// transpose, a LoadData2D-style fractal copy, and a mini cube matmul written against the
// physical fractal order (not the offset helpers) that must agree with a plain matmul.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "tl/npu/layout.h"

namespace tl::npu {
namespace {

using Bytes = std::vector<unsigned char>;

// A row-major matrix of `eb`-byte elements whose element (r, c) has a distinct non-zero value.
Bytes arange(int64_t rows, int64_t cols, int64_t pitch, int eb, uint32_t seed = 0) {
  Bytes b(size_t(rows * pitch * eb), 0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      uint64_t v = uint64_t(r * cols + c) * 2654435761u + seed + 1;
      if (eb == 1) v = (v % 255) + 1;
      std::memcpy(&b[size_t((r * pitch + c) * eb)], &v, size_t(eb));
    }
  return b;
}
uint64_t elem(const Bytes& b, int64_t idx, int eb) {
  uint64_t v = 0;
  std::memcpy(&v, &b[size_t(idx * eb)], size_t(eb));
  return v;
}

TEST(Layout, C0PerDtype) {
  EXPECT_EQ(c0_elems(DType::Float16), 16);
  EXPECT_EQ(c0_elems(DType::BFloat16), 16);
  EXPECT_EQ(c0_elems(DType::Int8), 32);
  EXPECT_EQ(c0_elems(DType::Float8E4M3), 32);
  EXPECT_EQ(c0_elems(DType::Float32), 8);
  EXPECT_EQ(c0_elems(DType::Int32), 8);
}

TEST(Layout, HandComputedOffsets) {
  // 32 x 32 fp16 in NZ (16 x 16 fractals, column blocks 32 rows tall).
  EXPECT_EQ(nz_offset(0, 0, 32, 16), 0);
  EXPECT_EQ(nz_offset(0, 15, 32, 16), 15);
  EXPECT_EQ(nz_offset(1, 0, 32, 16), 16);
  EXPECT_EQ(nz_offset(16, 0, 32, 16), 256);  // second fractal: row block 1 of column block 0
  EXPECT_EQ(nz_offset(0, 16, 32, 16), 512);  // column block 1 starts after 2 fractals
  EXPECT_EQ(nz_offset(17, 3, 32, 16), 275);
  EXPECT_EQ(nz_offset(31, 31, 32, 16), 1023);
  // 16 x 64 int8 in NZ: 16 x 32 fractals of 512 bytes.
  EXPECT_EQ(nz_offset(0, 32, 16, 32), 512);
  EXPECT_EQ(nz_offset(5, 40, 16, 32), 512 + 5 * 32 + 8);
  EXPECT_EQ(nz_offset(15, 31, 16, 32), 511);
  // 16 x 16 fp32 in L1 (16 x 8 fractals) and in L0C (16 x 16 fractals).
  EXPECT_EQ(nz_offset(0, 8, 16, 8), 128);
  EXPECT_EQ(l0c_offset(0, 8, 16), 8);
  EXPECT_EQ(l0c_offset(3, 17, 32), 512 + 3 * 16 + 1);
  // ZZ (L0A), A = 32 x 32 fp16: fractals row-block-major.
  EXPECT_EQ(zz_offset(0, 16, 32, 16), 256);
  EXPECT_EQ(zz_offset(16, 0, 32, 16), 512);
  EXPECT_EQ(zz_offset(17, 18, 32, 16), 512 + 256 + 16 + 2);
  // ZZ, A = 32 x 64 int8: 16 x 32 fractals.
  EXPECT_EQ(zz_offset(0, 32, 64, 32), 512);
  EXPECT_EQ(zz_offset(16, 0, 64, 32), 1024);
  // ZN (L0B), B = 32 x 32 fp16: fractals (k1, n1) row-major, column-major inside.
  EXPECT_EQ(zn_offset(1, 0, 32, 16), 1);
  EXPECT_EQ(zn_offset(0, 1, 32, 16), 16);
  EXPECT_EQ(zn_offset(0, 16, 32, 16), 256);
  EXPECT_EQ(zn_offset(16, 0, 32, 16), 512);
  // ZN, B = 64 x 32 int8: 32(k) x 16(n) fractals.
  EXPECT_EQ(zn_offset(1, 0, 32, 32), 1);
  EXPECT_EQ(zn_offset(0, 1, 32, 32), 32);
  EXPECT_EQ(zn_offset(0, 16, 32, 32), 512);
  EXPECT_EQ(zn_offset(32, 0, 32, 32), 1024);
}

TEST(Layout, AscDevkitNdToNzExample) {
  // (20, 28) fp16 holding 0..559 -> NZ of shape (N1=2, M1=2, 16, 16).
  std::vector<uint16_t> a(20 * 28);
  for (int i = 0; i < 20 * 28; ++i) a[size_t(i)] = uint16_t(i);
  std::vector<uint16_t> nz(2 * 2 * 16 * 16, 0xffff);
  nd_to_nz(a.data(), 20, 28, 28, DType::Float16, nz.data());
  auto at = [&](int n1, int m1, int m0, int n0) {
    return nz[size_t(((n1 * 2 + m1) * 16 + m0) * 16 + n0)];
  };
  EXPECT_EQ(at(0, 0, 0, 0), 0);
  EXPECT_EQ(at(0, 0, 1, 0), 28);
  EXPECT_EQ(at(0, 0, 15, 15), 435);
  EXPECT_EQ(at(0, 1, 0, 0), 448);
  EXPECT_EQ(at(0, 1, 3, 0), 532);  // row 19, the last real row
  EXPECT_EQ(at(0, 1, 4, 0), 0);    // row padding
  EXPECT_EQ(at(0, 1, 2, 15), 519);
  EXPECT_EQ(at(1, 0, 0, 0), 16);
  EXPECT_EQ(at(1, 0, 1, 0), 44);
  EXPECT_EQ(at(1, 0, 0, 11), 27);
  EXPECT_EQ(at(1, 0, 0, 12), 0);  // column padding
  EXPECT_EQ(at(1, 1, 0, 0), 464);
  EXPECT_EQ(at(1, 1, 15, 15), 0);
}

TEST(Layout, NdNzRoundTripOddSizes) {
  for (DType t : {DType::Int8, DType::Float16, DType::Float32}) {
    const int eb = dtype_bytes(t), c0 = c0_elems(t);
    for (int64_t rows : {1, 5, 16, 17, 33})
      for (int64_t cols : {1, 7, 16, 31, 33, 65})
        for (int64_t extra_rows : {0, 16}) {
          const int64_t pitch = cols + 3;
          Bytes src = arange(rows, cols, pitch, eb);
          const int64_t rp = align_up(rows, 16) + extra_rows, cp = align_up(cols, c0);
          Bytes nz(size_t(rp * cp * eb), 0xAB);
          nd_to_nz(src.data(), rows, cols, pitch, t, nz.data(), rp);
          // Every element of the NZ buffer is either the mapped source element or zero padding.
          std::vector<char> hit(size_t(rp * cp), 0);
          for (int64_t r = 0; r < rows; ++r)
            for (int64_t c = 0; c < cols; ++c) {
              int64_t o = nz_offset(r, c, rp, c0);
              ASSERT_EQ(elem(nz, o, eb), elem(src, r * pitch + c, eb))
                  << dtype_name(t) << " " << r << "," << c;
              hit[size_t(o)] = 1;
            }
          for (int64_t o = 0; o < rp * cp; ++o)
            if (!hit[size_t(o)]) {
              ASSERT_EQ(elem(nz, o, eb), 0u) << "padding at " << o;
            }
          Bytes back(size_t(rows * pitch * eb), 0);
          nz_to_nd(nz.data(), rows, cols, rp, t, back.data(), pitch);
          ASSERT_EQ(back, src) << dtype_name(t) << " " << rows << "x" << cols;
        }
  }
}

// Build the NZ image (rows padded to rp) of a rows x cols row-major matrix.
Bytes to_nz(const Bytes& nd, int64_t rows, int64_t cols, DType t, int64_t rp) {
  Bytes nz(size_t(rp * align_up(cols, c0_elems(t)) * dtype_bytes(t)), 0);
  nd_to_nz(nd.data(), rows, cols, cols, t, nz.data(), rp);
  return nz;
}
Bytes transpose_nd(const Bytes& a, int64_t rows, int64_t cols, int eb) {
  Bytes t(a.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      std::memcpy(&t[size_t((c * rows + r) * eb)], &a[size_t((r * cols + c) * eb)], size_t(eb));
  return t;
}

TEST(Layout, L1ToL0AWithAndWithoutTranspose) {
  for (DType t : {DType::Float16, DType::Int8, DType::Float32})
    for (int64_t m : {16, 20, 48})
      for (int64_t k : {16, 40, 64}) {
        const int eb = dtype_bytes(t), c0 = c0_elems(t);
        const int64_t mp = align_up(m, 16), kp = align_up(k, c0);
        Bytes a = arange(m, k, k, eb, 7);
        Bytes plain(size_t(mp * kp * eb), 0xCD), trans(plain.size(), 0xCD);
        // No transpose: L1 holds NZ(A), with a taller column block than needed.
        Bytes nz_a = to_nz(a, m, k, t, mp + 16);
        nz_to_zz(nz_a.data(), mp + 16, m, k, t, /*transpose=*/false, plain.data());
        // Transpose: L1 holds NZ(A^T) of shape [k, m].
        Bytes at = transpose_nd(a, m, k, eb);
        int64_t trp = align_up(k, 16);
        Bytes nz_at(size_t(trp * align_up(align_up(m, 16), c0) * eb), 0);
        nd_to_nz(at.data(), k, m, m, t, nz_at.data(), trp);
        nz_to_zz(nz_at.data(), trp, m, k, t, /*transpose=*/true, trans.data());
        for (int64_t i = 0; i < mp; ++i)
          for (int64_t j = 0; j < kp; ++j) {
            uint64_t want = i < m && j < k ? elem(a, i * k + j, eb) : 0;
            int64_t o = zz_offset(i, j, kp, c0);
            ASSERT_EQ(elem(plain, o, eb), want)
                << dtype_name(t) << " m=" << m << " k=" << k << " " << i << "," << j;
            ASSERT_EQ(elem(trans, o, eb), want) << dtype_name(t) << " transposed " << i << "," << j;
          }
      }
}

TEST(Layout, L1ToL0BWithAndWithoutTranspose) {
  for (DType t : {DType::Float16, DType::Int8, DType::Float32})
    for (int64_t k : {16, 40, 64})
      for (int64_t n : {16, 20, 48}) {
        const int eb = dtype_bytes(t), c0 = c0_elems(t);
        const int64_t kp = align_up(k, c0), np = align_up(n, 16);
        Bytes b = arange(k, n, n, eb, 3);
        Bytes plain(size_t(kp * np * eb), 0xCD), trans(plain.size(), 0xCD);
        // No transpose: L1 holds NZ(B^T) of shape [n, k].
        Bytes bt = transpose_nd(b, k, n, eb);
        Bytes nz_bt = to_nz(bt, n, k, t, np);
        nz_to_zn(nz_bt.data(), np, k, n, t, /*transpose=*/false, plain.data());
        EXPECT_EQ(0, std::memcmp(plain.data(), nz_bt.data(), plain.size()))
            << "ZN(B) == NZ(B^T) byte for byte";
        // Transpose: L1 holds NZ(B) of shape [k, n].
        int64_t rp = align_up(k, 16);
        Bytes nz_b(size_t(rp * align_up(np, c0) * eb), 0);
        nd_to_nz(b.data(), k, n, n, t, nz_b.data(), rp);
        nz_to_zn(nz_b.data(), rp, k, n, t, /*transpose=*/true, trans.data());
        for (int64_t kk = 0; kk < kp; ++kk)
          for (int64_t nn = 0; nn < np; ++nn) {
            uint64_t want = kk < k && nn < n ? elem(b, kk * n + nn, eb) : 0;
            int64_t o = zn_offset(kk, nn, np, c0);
            ASSERT_EQ(elem(plain, o, eb), want)
                << dtype_name(t) << " k=" << k << " n=" << n << " " << kk << "," << nn;
            ASSERT_EQ(elem(trans, o, eb), want)
                << dtype_name(t) << " transposed " << kk << "," << nn;
          }
      }
}

TEST(Layout, LoadData2DFractalCopyMatchesZz) {
  // asc-devkit LoadData_2D example for A not transposed: per row block m1, repeatTimes =
  // ceil(k / 16) fractals from startIndex m1 with srcStride ceil(m / 16).
  const int64_t m = 48, k = 64;
  const int64_t M1 = m / 16, K1 = k / 16;
  Bytes a = arange(m, k, k, 2, 11);
  Bytes l1 = to_nz(a, m, k, DType::Float16, m);
  Bytes l0a(l1.size()), want(l1.size());
  for (int64_t m1 = 0; m1 < M1; ++m1)
    for (int64_t rep = 0; rep < K1; ++rep)
      std::memcpy(&l0a[size_t((m1 * K1 + rep) * kFractalBytes)],
                  &l1[size_t((m1 + rep * M1) * kFractalBytes)], kFractalBytes);
  nz_to_zz(l1.data(), m, m, k, DType::Float16, false, want.data());
  EXPECT_EQ(l0a, want);
}

TEST(Layout, MiniCubeMatmulThroughFractals) {
  // A [m, k] and B [k, n] of small integers in "fp16 slots" (uint16 holding the integer), moved
  // GM -> L1 (NZ) -> L0A (ZZ) / L0B (ZN, via the transposing load), multiplied fractal by
  // fractal the way the cube walks its buffers, written to L0C (NZ 16x16) and fixpiped to ND.
  const int64_t m = 37, k = 50, n = 29;
  const int64_t mp = align_up(m, 16), kp = align_up(k, 16), np = align_up(n, 16);
  const int64_t M1 = mp / 16, K1 = kp / 16, N1 = np / 16;
  std::mt19937 rng(1);
  std::vector<uint16_t> a(size_t(m * k)), b(size_t(k * n));
  for (auto& x : a) x = uint16_t(rng() % 7);
  for (auto& x : b) x = uint16_t(rng() % 5);
  std::vector<uint16_t> l1a(size_t(mp * kp)), l1b(size_t(kp * np)), l0a(l1a.size()),
      l0b(l1b.size());
  nd_to_nz(a.data(), m, k, k, DType::Float16, l1a.data());
  nd_to_nz(b.data(), k, n, n, DType::Float16, l1b.data());
  nz_to_zz(l1a.data(), mp, m, k, DType::Float16, false, l0a.data());
  nz_to_zn(l1b.data(), kp, k, n, DType::Float16, true, l0b.data());
  std::vector<float> l0c(size_t(mp * np), 0.0f);
  for (int64_t m1 = 0; m1 < M1; ++m1)
    for (int64_t n1 = 0; n1 < N1; ++n1) {
      float* c = &l0c[size_t((n1 * M1 + m1) * 256)];  // L0C fractal (m1, n1), NZ order
      for (int64_t k1 = 0; k1 < K1; ++k1) {
        const uint16_t* fa = &l0a[size_t((m1 * K1 + k1) * 256)];  // 16(m) x 16(k), row-major
        const uint16_t* fb = &l0b[size_t((k1 * N1 + n1) * 256)];  // 16(n) x 16(k), row-major
        for (int i = 0; i < 16; ++i)
          for (int j = 0; j < 16; ++j)
            for (int p = 0; p < 16; ++p)
              c[i * 16 + j] += float(fa[i * 16 + p]) * float(fb[j * 16 + p]);
      }
    }
  std::vector<float> out(size_t(m * (n + 5)), -1.0f);
  l0c_to_nd(l0c.data(), m, n, mp, DType::Float32, out.data(), n + 5);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      float want = 0;
      for (int64_t p = 0; p < k; ++p)
        want += float(a[size_t(i * k + p)]) * float(b[size_t(p * n + j)]);
      ASSERT_EQ(out[size_t(i * (n + 5) + j)], want) << i << "," << j;
    }
  EXPECT_EQ(out[size_t(n)], -1.0f) << "fixpipe wrote past n";
}

TEST(Layout, TransposedLoadEqualsLoadOfTranspose) {
  // For 16-bit types: LoadData with transpose from NZ(S) == plain load from NZ(S^T).
  const int64_t r = 48, c = 32;
  Bytes s = arange(r, c, c, 2, 5);
  Bytes st = transpose_nd(s, r, c, 2);
  Bytes nz_s = to_nz(s, r, c, DType::BFloat16, r), nz_st = to_nz(st, c, r, DType::BFloat16, c);
  Bytes x(size_t(r * c * 2)), y(x.size());
  nz_to_zz(nz_s.data(), r, /*m=*/c, /*k=*/r, DType::BFloat16, true, x.data());
  nz_to_zz(nz_st.data(), c, c, r, DType::BFloat16, false, y.data());
  EXPECT_EQ(x, y);
  nz_to_zn(nz_s.data(), r, /*k=*/r, /*n=*/c, DType::BFloat16, true, x.data());
  nz_to_zn(nz_st.data(), c, r, c, DType::BFloat16, false, y.data());
  EXPECT_EQ(x, y);
}

}  // namespace
}  // namespace tl::npu
