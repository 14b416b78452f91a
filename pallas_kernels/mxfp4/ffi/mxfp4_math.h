// Shared MXFP4 arithmetic for the CPU (g++) and CUDA (nvcc) FFI handlers.
//
// Both libraries include this header so that the CPU oracle and the GPU
// kernels perform the same IEEE float32 operations in the same order. Every
// fused multiply-add is written out as fmaf() and both compilers are run with
// contraction disabled (g++ -ffp-contract=off, nvcc --fmad=false), so the
// results do not depend on which compiler emitted them.
//
// Formats (OCP Microscaling v1.0, spec quartet_fp4.md section 2.1):
//   E2M1 code: bit 3 = sign, bits 0-2 index {0, .5, 1, 1.5, 2, 3, 4, 6}.
//   Packing: two codes per byte, even element in the low nibble.
//   E8M0 scale byte b: 2^(b - 127); groups of 32 along the last axis.
//
// References: Castro et al., "Quartet: Native FP4 Training Can Be Optimal for
// Large Language Models", NeurIPS 2025.
#ifndef QUARTET_MXFP4_FFI_MXFP4_MATH_H_
#define QUARTET_MXFP4_FFI_MXFP4_MATH_H_

#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define MX_HD __host__ __device__ __forceinline__
#else
#define MX_HD inline
#endif

namespace quartet_mxfp4 {

#if !defined(__CUDACC__)
using std::isfinite;
using std::memcpy;
#endif

constexpr int kGroup = 32;
// Gaussian-MSE-optimal clip 2.92247856 sigma mapped onto the grid max 6: the
// one value of pallas_kernels/mxfp4/reference.py (QUEST_SIGMA_SCALE), which
// the build (pallas_kernels.mxfp4.ffi.build) passes in as a float literal.
#ifndef QUARTET_QUEST_SIGMA_SCALE
#error "define QUARTET_QUEST_SIGMA_SCALE: build with python -m pallas_kernels.mxfp4.ffi.build"
#endif
constexpr float kQuestScale = QUARTET_QUEST_SIGMA_SCALE;
constexpr float kQuestEps = 1e-8f;
// 1/sqrt(32): normalises the Sylvester Hadamard matrix to be orthogonal.
constexpr float kInvSqrt32 = 0.17677669529663687f;

enum Method : int32_t {
  kQuest = 0,       // RMS scale, floor(log2(kQuestScale sigma + 1e-8)), RNE
  kAbsmaxRtn = 1,   // scale 2^floor(log2 amax), values x3 (3/4 headroom), RNE
  kAbsmaxSr = 2,    // as kAbsmaxRtn with unbiased stochastic rounding
};

// Magnitude of E2M1 code bits 0-2 without a table (device code may not
// reference host arrays).
MX_HD float e2m1_magnitude(uint32_t m) {
  // m: 0..7 -> 0, .5, 1, 1.5, 2, 3, 4, 6. Exponent field = m >> 1,
  // mantissa = m & 1; subnormal when the exponent field is 0.
  const uint32_t e = m >> 1, f = m & 1u;
  return e == 0 ? 0.5f * static_cast<float>(f)
                : ldexpf(1.0f + 0.5f * static_cast<float>(f),
                         static_cast<int>(e) - 1);
}

MX_HD float e2m1_decode(uint32_t code) {
  const float v = e2m1_magnitude(code & 7u);
  return (code & 8u) ? -v : v;
}


// The functions below mirror pallas_kernels/mxfp4/reference.py operation by
// operation (including where XLA:CPU fuses a multiply-add into an FMA), so
// that codes and scales equal the reference bit for bit on unrotated input.

// floor(log2(v)) for v >= 0 from the float32 exponent bits; exact for
// normal numbers, -127 for zero and subnormals (E8M0 byte 0).
MX_HD int floor_log2(float v) {
  uint32_t bits;
  memcpy(&bits, &v, sizeof(bits));
  return static_cast<int>((bits >> 23) & 0xFFu) - 127;
}

// Exact 2^e for integer e in [-128, 127] built from the bits (as the
// reference: e < -126 yields half of 2^-126).
MX_HD float exp2_int(int e) {
  const int eb = e < -126 ? -126 : e;
  const uint32_t bits = static_cast<uint32_t>(eb + 127) << 23;
  float v;
  memcpy(&v, &bits, sizeof(v));
  return e < -126 ? 0.5f * v : v;
}

// 2^(b - 127) for an E8M0 byte; 255 encodes NaN.
MX_HD float e8m0_decode(uint32_t b) {
  return b == 255u ? NAN : exp2_int(static_cast<int>(b) - 127);
}

// E8M0 byte of 2^e clipped to [0, 254], or 255 (NaN) for a non-finite group.
MX_HD uint32_t scale_byte(int e, bool finite) {
  if (!finite) return 255u;
  const int b = e + 127;
  return static_cast<uint32_t>(b < 0 ? 0 : (b > 254 ? 254 : b));
}

// Scale byte of one group of 32 (already rotated) values from its
// reductions (pairwise-tree sums: the order of XLA:CPU row reductions and of
// a warp xor-butterfly).
//   quest:  floor(log2(kQuestScale * sigma + 1e-8)), sigma = population std
//   absmax: floor(log2(max |v|))
MX_HD uint32_t group_scale_byte(int32_t method, float sum, float sum_sq,
                                float amax) {
  if (method == kQuest) {
    const float mean = sum * (1.0f / kGroup);
    const float mean_sq = sum_sq * (1.0f / kGroup);
    float var = fmaf(-mean, mean, mean_sq);
    var = var < 0.0f ? 0.0f : var;  // max(var, 0) that keeps NaN
    const float v = fmaf(kQuestScale, sqrtf(var), kQuestEps);
    return scale_byte(floor_log2(v), isfinite(v));
  }
  return scale_byte(floor_log2(amax), isfinite(amax));
}

// Scaled value a = v / 2^(byte - 127), times 3 for the absmax rules (3/4
// headroom; their dequantisation divides by 3 through the GEMM's alpha).
MX_HD float scaled_value(int32_t method, float v, uint32_t byte) {
  const float inv = exp2_int(127 - static_cast<int>(byte));
  return method == kQuest ? v * inv : (3.0f * v) * inv;
}

MX_HD uint32_t sign_bit(float a) { return a < 0.0f ? 8u : 0u; }

// Round-to-nearest-even onto the E2M1 grid, saturating at 6 (the semantics
// of cvt.rn.satfinite.e2m1x2.f32 and of astype(float4_e2m1fn)). Ties go to
// the even code: .25->0, .75->1, 1.25->1, 1.75->2, 2.5->2, 3.5->4, 5->4.
MX_HD uint32_t e2m1_encode_rne(float a) {
  const float m = fabsf(a);
  const uint32_t idx = static_cast<uint32_t>(m > 0.25f) + (m >= 0.75f) +
                       (m > 1.25f) + (m >= 1.75f) + (m > 2.5f) +
                       (m >= 3.5f) + (m > 5.0f);
  return idx | sign_bit(a);
}

// Stochastic rounding between the grid neighbours lo <= |a| <= hi: picks hi
// with probability (|a| - lo) / (hi - lo), so E[result] = a (unbiased).
// Within a binade the grid is uniform with spacing `step`, so this is
// floor(|a| / step + u) * step (exact in fp32 but for the one rounding of the
// addition, which the reference shares).
MX_HD uint32_t e2m1_encode_sr(float a, float u) {
  float m = fabsf(a);
  m = m > 6.0f ? 6.0f : m;  // min(|a|, 6) that keeps NaN
  const float step = m < 2.0f ? 0.5f : (m < 4.0f ? 1.0f : 2.0f);
  float q = floorf(m / step + u) * step;
  q = q > 6.0f ? 6.0f : q;
  // Magnitude code of the grid value q (exact arithmetic on grid values).
  const float c = q < 2.0f ? 2.0f * q : (q < 4.0f ? q + 2.0f : 0.5f * q + 4.0f);
  const uint32_t idx = c == c ? static_cast<uint32_t>(c) : 0u;  // NaN -> 0
  return idx | sign_bit(a);
}

// lowbias32 integer finaliser (C. Wellons' hash-prospector).
MX_HD uint32_t mix32(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7FEB352Du;
  x ^= x >> 15;
  x *= 0x846CA68Bu;
  return x ^ (x >> 16);
}

// Counter-based uniform in [0, 1) from (seed, element index): stateless, so
// every element (and every CUDA thread) draws independently and
// reproducibly; the same hash as reference.hash_uniform.
MX_HD float hash_uniform(uint32_t seed, uint32_t index) {
  // One lowbias32 round over a Weyl-scrambled index xor a mixed seed.
  const uint32_t key = mix32(seed ^ 0x9E3779B9u);
  const uint32_t h = mix32((index * 0x9E3779B9u) ^ key);
  return static_cast<float>(h >> 8) * (1.0f / 16777216.0f);
}

// E2M1 code of one scaled value; `u` is only read by the SR method.
MX_HD uint32_t quantize_code(int32_t method, float a, float u) {
  return method == kAbsmaxSr ? e2m1_encode_sr(a, u) : e2m1_encode_rne(a);
}

// ---------------------------------------------------------------------------
// NVFP4 (spec quartet_fp4.md section 2.2): E2M1 codes, one E4M3 scale per 16
// elements, block scales in the cuBLAS/CUTLASS swizzled layout.

constexpr int kNvfp4Group = 16;

// float8_e4m3fn bits -> fp32: sign, 4-bit exponent (bias 7), 3-bit mantissa;
// exponent 0 is subnormal (m/8 * 2^-6); 0x7F / 0xFF are NaN (no infinities).
MX_HD float e4m3_decode(uint32_t b) {
  const uint32_t e = (b >> 3) & 0xFu, m = b & 7u;
  const float sign = (b & 0x80u) ? -1.0f : 1.0f;
  if (e == 15u && m == 7u) return NAN;
  const float mag =
      e == 0u ? ldexpf(static_cast<float>(m), -9)
              : ldexpf(1.0f + static_cast<float>(m) * 0.125f,
                       static_cast<int>(e) - 7);
  return sign * mag;
}

// Flat position of scale (r, c) of a [rows, cols] scale matrix in the
// swizzled layout (128 x 4 tiles, each stored as 32 x 16: element (i, j)
// holds scale[i + 32 (j / 4), j % 4]); `reference.blocked_index` in Python.
MX_HD int64_t blocked_index(int64_t r, int64_t c, int64_t cols) {
  const int64_t tiles_per_row = (cols + 3) / 4;
  const int64_t tile = (r / 128) * tiles_per_row + c / 4;
  return (tile * 32 + r % 32) * 16 + ((r % 128) / 32) * 4 + c % 4;
}

// Elements of a swizzled [rows, cols] scale matrix (padded to 128 x 4 tiles).
MX_HD int64_t blocked_size(int64_t rows, int64_t cols) {
  return ((rows + 127) / 128) * 128 * ((cols + 3) / 4) * 4;
}

}  // namespace quartet_mxfp4

#endif  // QUARTET_MXFP4_FFI_MXFP4_MATH_H_
