// Shape checks shared by the CPU (g++) and CUDA (nvcc) FFI handlers, so that
// both reject the same inputs with the same one-line message.
//
// References: Castro et al., "Quartet: Native FP4 Training Can Be Optimal for
// Large Language Models", NeurIPS 2025.
#ifndef QUARTET_MXFP4_FFI_FFI_SHAPES_H_
#define QUARTET_MXFP4_FFI_FFI_SHAPES_H_

#include <cstdint>
#include <string>

#include "mxfp4_math.h"
#include "xla/ffi/api/ffi.h"

namespace quartet_ffi {

namespace ffi = xla::ffi;
using Dims = ffi::AnyBuffer::Dimensions;

inline std::string dims_str(Dims d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(d[i]);
  }
  return s + "]";
}

inline int64_t prod(Dims d, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i) p *= d[i];
  return p;
}

// The one-line errors both GEMM checks end with: operand shapes that do not
// fit together (with what `op` needs), and a result type other than f32/bf16.
inline ffi::Error inconsistent_shapes(const std::string& op, Dims ad, Dims asd,
                                      Dims bd, Dims bsd, Dims yd,
                                      const std::string& need) {
  return ffi::Error::InvalidArgument(
      op + ": inconsistent shapes: a_codes " + dims_str(ad) + ", a_scale " +
      dims_str(asd) + ", b_codes " + dims_str(bd) + ", b_scale " +
      dims_str(bsd) + ", y " + dims_str(yd) + " (need " + need + ")");
}

inline ffi::Error check_out_type(const std::string& op, ffi::DataType t) {
  if (t != ffi::F32 && t != ffi::BF16) {
    return ffi::Error::InvalidArgument(op +
                                       ": result must be float32 or bfloat16");
  }
  return ffi::Error::Success();
}

// One MXFP4 GEMM problem: y [.., m, n] from codes [.., R, k/2] and E8M0
// scales [.., R, k/32].
struct Mxfp4Gemm {
  int64_t m = 0, n = 0, k = 0, batch = 0;
};

// Checks the operands of quartet_mxfp4_gemm and fills `g`.
inline ffi::Error check_mxfp4_gemm(Dims ad, Dims asd, Dims bd, Dims bsd,
                                   Dims yd, ffi::DataType out_type,
                                   Mxfp4Gemm* g) {
  namespace mx = quartet_mxfp4;
  const size_t rank = ad.size();
  if (rank < 2 || bd.size() != rank || asd.size() != rank ||
      bsd.size() != rank || yd.size() != rank) {
    return ffi::Error::InvalidArgument(
        "quartet_mxfp4_gemm: operands must have equal rank >= 2, got codes " +
        dims_str(ad) + " and " + dims_str(bd));
  }
  g->m = ad[rank - 2], g->n = bd[rank - 2], g->k = 2 * ad[rank - 1];
  g->batch = prod(ad, 0, rank - 2);
  const int64_t ks = g->k / mx::kGroup;
  bool ok = g->k % mx::kGroup == 0 && bd[rank - 1] * 2 == g->k &&
            asd[rank - 2] == g->m && asd[rank - 1] == ks &&
            bsd[rank - 2] == g->n && bsd[rank - 1] == ks &&
            yd[rank - 2] == g->m && yd[rank - 1] == g->n;
  for (size_t i = 0; ok && i + 2 < rank; ++i) {
    ok = ad[i] == bd[i] && ad[i] == asd[i] && ad[i] == bsd[i] && ad[i] == yd[i];
  }
  if (!ok) {
    return inconsistent_shapes(
        "quartet_mxfp4_gemm", ad, asd, bd, bsd, yd,
        "codes [.., R, K/2], scale [.., R, K/32], K % 32 == 0");
  }
  return check_out_type("quartet_mxfp4_gemm", out_type);
}

// One NVFP4 GEMM problem: y [.., m, n] from codes [.., R, k/2], blocked
// scales [.., scale_a | scale_b] and tensor scales [..].
struct Nvfp4Gemm {
  int64_t m = 0, n = 0, k = 0, batch = 0, scale_a = 0, scale_b = 0;
};

// Checks the operands of quartet_nvfp4_gemm and fills `g`.
inline ffi::Error check_nvfp4_gemm(Dims ad, Dims asd, Dims agd, Dims bd,
                                   Dims bsd, Dims bgd, Dims yd,
                                   ffi::DataType out_type, Nvfp4Gemm* g) {
  namespace mx = quartet_mxfp4;
  const size_t rank = ad.size();
  if (rank < 2 || bd.size() != rank || asd.size() != rank - 1 ||
      bsd.size() != rank - 1 || yd.size() != rank || agd.size() != rank - 2 ||
      bgd.size() != rank - 2) {
    return ffi::Error::InvalidArgument(
        "quartet_nvfp4_gemm: need codes [.., R, K/2], blocked scales [.., S] "
        "and tensor scales [..]; got codes " + dims_str(ad) + " and " +
        dims_str(bd));
  }
  g->m = ad[rank - 2], g->n = bd[rank - 2], g->k = 2 * ad[rank - 1];
  g->batch = prod(ad, 0, rank - 2);
  const int64_t ks = g->k / mx::kNvfp4Group;
  g->scale_a = mx::blocked_size(g->m, ks);
  g->scale_b = mx::blocked_size(g->n, ks);
  bool ok = g->k % mx::kNvfp4Group == 0 && bd[rank - 1] * 2 == g->k &&
            asd[rank - 2] == g->scale_a && bsd[rank - 2] == g->scale_b &&
            yd[rank - 2] == g->m && yd[rank - 1] == g->n;
  for (size_t i = 0; ok && i + 2 < rank; ++i) {
    ok = ad[i] == bd[i] && ad[i] == asd[i] && ad[i] == bsd[i] &&
         ad[i] == yd[i] && ad[i] == agd[i] && ad[i] == bgd[i];
  }
  if (!ok) {
    return inconsistent_shapes(
        "quartet_nvfp4_gemm", ad, asd, bd, bsd, yd,
        "K % 16 == 0 and blocked scales of 128x4-padded size");
  }
  return check_out_type("quartet_nvfp4_gemm", out_type);
}

// The same check on the bound operands, as both handlers (CPU, CUDA) call it.
template <typename U8Buffer, typename F32Buffer, typename Out>
ffi::Error check_nvfp4_gemm(const U8Buffer& a_codes, const U8Buffer& a_scale,
                            const F32Buffer& a_global, const U8Buffer& b_codes,
                            const U8Buffer& b_scale, const F32Buffer& b_global,
                            Out& y, Nvfp4Gemm* g) {
  return check_nvfp4_gemm(a_codes.dimensions(), a_scale.dimensions(),
                          a_global.dimensions(), b_codes.dimensions(),
                          b_scale.dimensions(), b_global.dimensions(),
                          y->dimensions(), y->element_type(), g);
}

// Checks quartet_mxfp4_quantize's operands: x [.., K] (K % 32 == 0) in
// float32 or bfloat16, a known method, 32 signs and one seed.
template <typename X, typename Signs, typename Seed>
ffi::Error check_quantize(const X& x, const Signs& signs, const Seed& seed,
                          int32_t method) {
  namespace mx = quartet_mxfp4;
  const auto xd = x.dimensions();
  if (xd.size() < 1 || xd[xd.size() - 1] % mx::kGroup != 0) {
    return ffi::Error::InvalidArgument(
        "quartet_mxfp4_quantize: last axis must be a multiple of 32, got " +
        dims_str(xd));
  }
  if (method < mx::kQuest || method > mx::kAbsmaxSr) {
    return ffi::Error::InvalidArgument(
        "quartet_mxfp4_quantize: method must be 0 (quest), 1 (absmax RTN) or "
        "2 (absmax SR), got " + std::to_string(method));
  }
  if (signs.element_count() != mx::kGroup || seed.element_count() != 1) {
    return ffi::Error::InvalidArgument(
        "quartet_mxfp4_quantize: signs must have 32 entries and seed 1");
  }
  if (x.element_type() != ffi::F32 && x.element_type() != ffi::BF16) {
    return ffi::Error::InvalidArgument(
        "quartet_mxfp4_quantize: x must be float32 or bfloat16");
  }
  return ffi::Error::Success();
}

}  // namespace quartet_ffi

#endif  // QUARTET_MXFP4_FFI_FFI_SHAPES_H_
