// CPU handlers of the Quartet MXFP4 FFI targets (the oracle for the CUDA
// library and the CPU path of the same target names).
//
//   quartet_mxfp4_gemm: y[..., M, N] = alpha * dequant(A) @ dequant(B)^T with
//     A = (a_codes u8[..., M, K/2], a_scale u8[..., M, K/32]) and B likewise
//     [..., N, ...]; fp32 accumulation; f32 or bf16 result.
//   quartet_mxfp4_quantize: fused rotate + quantize along the last axis
//     (QuEST forward or absmax x3/4 backward with RTN or stochastic rounding).
//
// References: Castro et al., "Quartet: Native FP4 Training Can Be Optimal for
// Large Language Models", NeurIPS 2025.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "ffi_shapes.h"
#include "mxfp4_math.h"
#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;
namespace mx = quartet_mxfp4;
using quartet_ffi::dims_str;
using quartet_ffi::prod;

namespace {

float bf16_to_float(uint16_t h) {
  uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

uint16_t float_to_bf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  if (std::isnan(f)) return static_cast<uint16_t>((bits >> 16) | 0x40u);
  // Round to nearest even on the dropped 16 bits.
  bits += 0x7FFFu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}



// y[offset + i n + j] = alpha * sum_l a[i, l] b[j, l] for fp32 [m, K] and
// [n, K] operands ("TN"), written as fp32 or bf16. The operands are decoded
// FP4 values, whose products are exact in fp32 (E2M1 x 2^k: <= 4 significant
// bits; E2M1 x E4M3: <= 6), so only the summation rounds: eight partial sums
// (combined pairwise) give the compiler independent chains. K % 8 == 0.
void gemm_tn(const float* a, const float* b, int64_t m, int64_t n, int64_t k,
             float alpha, ffi::DataType out_type, void* y, int64_t offset) {
  for (int64_t i = 0; i < m; ++i) {
    const float* ar = a + i * k;
    for (int64_t j = 0; j < n; ++j) {
      const float* br = b + j * k;
      float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
      for (int64_t l = 0; l < k; l += 8) {
        for (int u = 0; u < 8; ++u) acc[u] += ar[l + u] * br[l + u];
      }
      for (int h = 4; h >= 1; h >>= 1) {
        for (int u = 0; u < h; ++u) acc[u] += acc[u + h];
      }
      const float v = alpha * acc[0];
      const int64_t o = offset + i * n + j;
      if (out_type == ffi::F32) {
        static_cast<float*>(y)[o] = v;
      } else {
        static_cast<uint16_t*>(y)[o] = float_to_bf16(v);
      }
    }
  }
}

// Decodes `rows` rows of an MX operand into fp32 (row-major [rows, K]).
void dequantize(const uint8_t* codes, const uint8_t* scale, int64_t rows,
                int64_t k, float* out) {
  const int64_t kb = k / 2, ks = k / mx::kGroup;
  float lut[16];
  for (uint32_t c = 0; c < 16; ++c) lut[c] = mx::e2m1_decode(c);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t g = 0; g < ks; ++g) {
      const float s = mx::e8m0_decode(scale[r * ks + g]);
      for (int64_t j = g * mx::kGroup; j < (g + 1) * mx::kGroup; j += 2) {
        const uint8_t byte = codes[r * kb + j / 2];
        out[r * k + j] = lut[byte & 0xFu] * s;
        out[r * k + j + 1] = lut[byte >> 4] * s;
      }
    }
  }
}

ffi::Error GemmImpl(ffi::Buffer<ffi::U8> a_codes, ffi::Buffer<ffi::U8> a_scale,
                    ffi::Buffer<ffi::U8> b_codes, ffi::Buffer<ffi::U8> b_scale,
                    ffi::Result<ffi::AnyBuffer> y, float alpha) {
  quartet_ffi::Mxfp4Gemm g;
  const auto out_type = y->element_type();
  ffi::Error bad = quartet_ffi::check_mxfp4_gemm(
      a_codes.dimensions(), a_scale.dimensions(), b_codes.dimensions(),
      b_scale.dimensions(), y->dimensions(), out_type, &g);
  if (bad.failure()) return bad;
  const int64_t m = g.m, n = g.n, k = g.k, batch = g.batch;
  std::vector<float> a(static_cast<size_t>(m * k)), b(
                                                    static_cast<size_t>(n * k));
  for (int64_t t = 0; t < batch; ++t) {
    dequantize(a_codes.typed_data() + t * m * (k / 2),
               a_scale.typed_data() + t * m * (k / mx::kGroup), m, k, a.data());
    dequantize(b_codes.typed_data() + t * n * (k / 2),
               b_scale.typed_data() + t * n * (k / mx::kGroup), n, k, b.data());
    gemm_tn(a.data(), b.data(), m, n, k, alpha, out_type, y->untyped_data(),
            t * m * n);
  }
  return ffi::Error::Success();
}

// Decodes `rows` rows of an NVFP4 operand (codes [rows, K/2], block scales
// swizzled) into fp32 e2m1(code) * e4m3(block scale), row-major [rows, K].
void dequantize_nvfp4(const uint8_t* codes, const uint8_t* scale_blocked,
                      int64_t rows, int64_t k, float* out) {
  const int64_t kb = k / 2, ks = k / mx::kNvfp4Group;
  float lut[16];
  for (uint32_t c = 0; c < 16; ++c) lut[c] = mx::e2m1_decode(c);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t g = 0; g < ks; ++g) {
      const float s = mx::e4m3_decode(scale_blocked[mx::blocked_index(r, g, ks)]);
      for (int64_t j = g * mx::kNvfp4Group; j < (g + 1) * mx::kNvfp4Group;
           j += 2) {
        const uint8_t byte = codes[r * kb + j / 2];
        out[r * k + j] = lut[byte & 0xFu] * s;
        out[r * k + j + 1] = lut[byte >> 4] * s;
      }
    }
  }
}

// y = (a_global * b_global) * deq(A) @ deq(B)^T for NVFP4 operands whose
// block scales arrive in the swizzled layout cuBLASLt's VEC16_UE4M3 mode
// reads (flat [.., blocked_size(R, K/16)]); the tensor scales are fp32
// buffers with the batch shape. Same accumulation as GemmImpl.
ffi::Error Nvfp4GemmImpl(ffi::Buffer<ffi::U8> a_codes,
                         ffi::Buffer<ffi::U8> a_scale,
                         ffi::Buffer<ffi::F32> a_global,
                         ffi::Buffer<ffi::U8> b_codes,
                         ffi::Buffer<ffi::U8> b_scale,
                         ffi::Buffer<ffi::F32> b_global,
                         ffi::Result<ffi::AnyBuffer> y) {
  quartet_ffi::Nvfp4Gemm g;
  ffi::Error bad = quartet_ffi::check_nvfp4_gemm(
      a_codes, a_scale, a_global, b_codes, b_scale, b_global, y, &g);
  if (bad.failure()) return bad;
  const auto out_type = y->element_type();
  const int64_t m = g.m, n = g.n, k = g.k, batch = g.batch;
  const int64_t sa = g.scale_a, sb = g.scale_b;
  std::vector<float> a(static_cast<size_t>(m * k)), b(
                                                    static_cast<size_t>(n * k));
  for (int64_t t = 0; t < batch; ++t) {
    dequantize_nvfp4(a_codes.typed_data() + t * m * (k / 2),
                     a_scale.typed_data() + t * sa, m, k, a.data());
    dequantize_nvfp4(b_codes.typed_data() + t * n * (k / 2),
                     b_scale.typed_data() + t * sb, n, k, b.data());
    const float alpha = a_global.typed_data()[t] * b_global.typed_data()[t];
    gemm_tn(a.data(), b.data(), m, n, k, alpha, out_type, y->untyped_data(),
            t * m * n);
  }
  return ffi::Error::Success();
}

// In-place normalised Walsh-Hadamard transform of one group of 32
// (Sylvester order: H[i, j] = (-1)^popcount(i & j) / sqrt(32)).
// The butterfly order (stride 16 first) matches the CUDA warp-shuffle kernel.
void fwht32(float* v) {
  for (int h = 16; h >= 1; h >>= 1) {
    for (int i = 0; i < mx::kGroup; ++i) {
      if (i & h) continue;
      const float u = v[i], w = v[i + h];
      v[i] = u + w;
      v[i + h] = u - w;
    }
  }
  for (int i = 0; i < mx::kGroup; ++i) v[i] *= mx::kInvSqrt32;
}

// Pairwise tree sum of 32 values (the order of XLA:CPU's row reductions and
// of a warp xor-butterfly).
float tree_sum(const float* v) {
  float t[mx::kGroup];
  for (int i = 0; i < mx::kGroup; ++i) t[i] = v[i];
  for (int h = 16; h >= 1; h >>= 1) {
    for (int i = 0; i < h; ++i) t[i] = t[i] + t[i + h];
  }
  return t[0];
}

ffi::Error QuantizeImpl(ffi::AnyBuffer x, ffi::Buffer<ffi::F32> signs,
                        ffi::Buffer<ffi::U32> seed,
                        ffi::ResultBuffer<ffi::U8> codes,
                        ffi::ResultBuffer<ffi::U8> scale,
                        ffi::ResultBuffer<ffi::PRED> mask, int32_t method,
                        bool rotate, int64_t period) {
  ffi::Error bad = quartet_ffi::check_quantize(x, signs, seed, method);
  if (bad.failure()) return bad;
  const auto dtype = x.element_type();
  const int64_t total = static_cast<int64_t>(x.element_count());
  if (period <= 0) period = total;
  const int64_t groups = total / mx::kGroup;
  const float* sg = signs.typed_data();
  const uint32_t sd = seed.typed_data()[0];
  uint8_t* co = codes->typed_data();
  uint8_t* sc = scale->typed_data();
  bool* mk = mask->typed_data();
  float v[mx::kGroup], sq[mx::kGroup];
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t base = g * mx::kGroup;
    for (int i = 0; i < mx::kGroup; ++i) {
      v[i] = dtype == ffi::F32
                 ? static_cast<const float*>(x.untyped_data())[base + i]
                 : bf16_to_float(
                       static_cast<const uint16_t*>(x.untyped_data())[base + i]);
    }
    if (rotate) {
      fwht32(v);
      for (int i = 0; i < mx::kGroup; ++i) v[i] *= sg[i];
    }
    float amax = 0.0f;
    for (int i = 0; i < mx::kGroup; ++i) {
      sq[i] = v[i] * v[i];
      const float ab = std::fabs(v[i]);
      amax = (ab > amax || std::isnan(ab)) ? ab : amax;  // NaN propagates
    }
    const uint32_t byte =
        mx::group_scale_byte(method, tree_sum(v), tree_sum(sq), amax);
    sc[g] = static_cast<uint8_t>(byte);
    for (int i = 0; i < mx::kGroup; i += 2) {
      uint32_t c[2];
      for (int h = 0; h < 2; ++h) {
        const int64_t idx = base + i + h;
        const float a = mx::scaled_value(method, v[i + h], byte);
        const float u =
            method == mx::kAbsmaxSr
                ? mx::hash_uniform(sd, static_cast<uint32_t>(idx % period))
                : 0.0f;
        c[h] = mx::quantize_code(method, a, u);
        mk[idx] = std::fabs(a) < 6.0f;
      }
      co[(base + i) / 2] = static_cast<uint8_t>(c[0] | (c[1] << 4));
    }
  }
  return ffi::Error::Success();
}

}  // namespace

// The library is built with -fvisibility=hidden; only the handlers are
// exported (checked by the tests with nm -D).
#define QUARTET_EXPORT extern "C" __attribute__((visibility("default")))
QUARTET_EXPORT XLA_FFI_Error* QuartetMxfp4GemmCpu(XLA_FFI_CallFrame*);
QUARTET_EXPORT XLA_FFI_Error* QuartetMxfp4QuantizeCpu(XLA_FFI_CallFrame*);
QUARTET_EXPORT XLA_FFI_Error* QuartetNvfp4GemmCpu(XLA_FFI_CallFrame*);

XLA_FFI_DEFINE_HANDLER_SYMBOL(QuartetMxfp4GemmCpu, GemmImpl,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::Buffer<ffi::U8>>()
                                  .Arg<ffi::Buffer<ffi::U8>>()
                                  .Arg<ffi::Buffer<ffi::U8>>()
                                  .Arg<ffi::Buffer<ffi::U8>>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Attr<float>("alpha"));

XLA_FFI_DEFINE_HANDLER_SYMBOL(QuartetMxfp4QuantizeCpu, QuantizeImpl,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Ret<ffi::Buffer<ffi::U8>>()
                                  .Ret<ffi::Buffer<ffi::U8>>()
                                  .Ret<ffi::Buffer<ffi::PRED>>()
                                  .Attr<int32_t>("method")
                                  .Attr<bool>("rotate")
                                  .Attr<int64_t>("period"));

XLA_FFI_DEFINE_HANDLER_SYMBOL(QuartetNvfp4GemmCpu, Nvfp4GemmImpl,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::Buffer<ffi::U8>>()
                                  .Arg<ffi::Buffer<ffi::U8>>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Arg<ffi::Buffer<ffi::U8>>()
                                  .Arg<ffi::Buffer<ffi::U8>>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::AnyBuffer>());
