// CUDA handlers of the Quartet MXFP4 FFI targets (same names and signatures
// as the CPU handlers in mxfp4_cpu.cc, which are their oracle).
//
//   quartet_mxfp4_quantize: one warp per 32-group; Hadamard by warp-shuffle
//     butterflies, group reductions by xor-butterflies (the pairwise-tree
//     order of the CPU handler and of XLA:CPU), codes packed by lane pairs.
//   quartet_mxfp4_gemm (chosen by compute capability, never by a failed
//   call):
//     10.x (B200/GB200) and 12.x (RTX 50xx) with the library built against
//       CUTLASS: CUTLASS's block-scaled MXFP4 GEMM (mxfp4_cutlass.cu; E2M1 +
//       UE8M0 per 32, scales rearranged into the 128x4 blocked layout), one
//       call for the whole batch, alpha in the epilogue;
//     otherwise (Hopper, Ampere, or no CUTLASS at build time):
//       dequantise to BF16 (exact: E2M1 x 2^k fits BF16) + one
//       strided-batched cuBLASLt BF16 GEMM with fp32 accumulation and alpha;
//     anything older than 8.0: ffi::Error.
//   quartet_nvfp4_gemm: NVFP4 operands (E2M1 + E4M3 per 16, blocked scales,
//     fp32 tensor scales): cuBLASLt VEC16_UE4M3 block-scaled GEMM on 10.x /
//     12.x with alpha = a_global * b_global in device pointer mode; the same
//     dequantise + BF16 fallback on 8.x / 9.x. One GEMM per batch element:
//     each has its own alpha (a device scalar), which a strided batch
//     cannot carry. This is the FP4 path cuBLASLt
//     documents (NVFP4); compiled in CI, not yet run on a Blackwell GPU.
//   QUARTET_MXFP4_FORCE_DEQUANT=1 forces the BF16 paths (for benchmarks).
//
// Why CUTLASS for MXFP4 (issue 21, from cublasLt.h and NVIDIA's docs):
// cuBLASLt documents block-scaled FP4 only as NVFP4 (E2M1 with VEC16_UE4M3
// scales, quartet_nvfp4_gemm below); VEC32_UE8M0 is documented for MXFP8.
// WORKSPACE.md ("The MXFP4 FFI bridge") has the details. Neither FP4 path has
// run on a Blackwell GPU yet: both are compiled in CI, not measured.
//
// cuBLASLt is opened with dlopen (see cublaslt_api.h); the stream comes from
// the FFI context and temporary buffers from XLA's scratch allocator.
//
// References: Castro et al., "Quartet: Native FP4 Training Can Be Optimal for
// Large Language Models", NeurIPS 2025.
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "cublaslt_api.h"
#include "ffi_shapes.h"
#include "mxfp4_math.h"
#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;
namespace mx = quartet_mxfp4;
using quartet_ffi::dims_str;
using quartet_ffi::prod;
namespace lt = quartet_lt;

// mxfp4_cutlass.cu, one object per Blackwell family: 0 on success, else a
// failure code.
using CutlassMxfp4Fn = int (*)(const void*, const void*, const void*,
                               const void*, float*, int, int, int, int, float,
                               void*, size_t, cudaStream_t);
#if defined(QUARTET_CUTLASS_SM100)
int QuartetCutlassMxfp4Gemm(const void* a, const void* a_scale, const void* b,
                            const void* b_scale, float* d, int m, int n, int k,
                            int batch, float alpha, void* workspace,
                            size_t workspace_bytes, cudaStream_t stream);
#endif
#if defined(QUARTET_CUTLASS_SM120)
int QuartetCutlassMxfp4GemmSm120(const void* a, const void* a_scale,
                                 const void* b, const void* b_scale, float* d,
                                 int m, int n, int k, int batch, float alpha,
                                 void* workspace, size_t workspace_bytes,
                                 cudaStream_t stream);
#endif
#if defined(QUARTET_CUTLASS_SM100) || defined(QUARTET_CUTLASS_SM120)
#define QUARTET_WITH_CUTLASS 1
#endif

// The CUTLASS MXFP4 GEMM built for compute capability `major`, or null.
CutlassMxfp4Fn cutlass_mxfp4_for(int major) {
#if defined(QUARTET_CUTLASS_SM100)
  if (major == 10) return &QuartetCutlassMxfp4Gemm;
#endif
#if defined(QUARTET_CUTLASS_SM120)
  if (major == 12) return &QuartetCutlassMxfp4GemmSm120;
#endif
  (void)major;
  return nullptr;
}

namespace {

constexpr int kThreads = 256;
constexpr size_t kLtWorkspace = 32u << 20;  // cuBLASLt's Blackwell advice
// Which GEMM ran last (1: block-scaled FP4, 2: dequantise + BF16), for
// benchmarks and tests: QuartetMxfp4CudaLastGemmPath().
std::atomic<int> g_last_path{0};



ffi::Error cuda_error(const char* what) {
  const cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) return ffi::Error::Success();
  return ffi::Error::Internal(std::string("quartet_mxfp4: ") + what + ": " +
                              cudaGetErrorString(e));
}

// ----------------------------------------------------------------------------
// Quantize: one warp per 32-group.

__global__ void QuantizeKernel(const void* __restrict__ x, bool x_bf16,
                               const float* __restrict__ signs,
                               const uint32_t* __restrict__ seed,
                               uint8_t* __restrict__ codes,
                               uint8_t* __restrict__ scale,
                               bool* __restrict__ mask, int64_t groups,
                               int32_t method, bool rotate, int64_t period) {
  const int64_t tid = static_cast<int64_t>(blockIdx.x) * blockDim.x +
                      threadIdx.x;
  const int64_t g = tid / mx::kGroup;
  const int lane = threadIdx.x & 31;
  if (g >= groups) return;  // whole warps exit together (blockDim % 32 == 0)
  const int64_t idx = g * mx::kGroup + lane;
  float v = x_bf16 ? __bfloat162float(
                         static_cast<const __nv_bfloat16*>(x)[idx])
                   : static_cast<const float*>(x)[idx];
  const unsigned full = 0xFFFFFFFFu;
  if (rotate) {
    // Butterfly (u, w) -> (u + w, u - w) across lanes i, i + h, stride 16
    // first: the same float ops as fwht32() in mxfp4_cpu.cc.
    for (int h = 16; h >= 1; h >>= 1) {
      const float p = __shfl_xor_sync(full, v, h);
      v = (lane & h) ? (p - v) : (v + p);
    }
    v = v * mx::kInvSqrt32;
    v = v * signs[lane];
  }
  float sum = v, sum_sq = v * v, amax = fabsf(v);
  for (int h = 16; h >= 1; h >>= 1) {
    sum = sum + __shfl_xor_sync(full, sum, h);
    sum_sq = sum_sq + __shfl_xor_sync(full, sum_sq, h);
    const float o = __shfl_xor_sync(full, amax, h);
    amax = (o > amax || isnan(o)) ? o : amax;
  }
  const uint32_t byte = mx::group_scale_byte(method, sum, sum_sq, amax);
  if (lane == 0) scale[g] = static_cast<uint8_t>(byte);
  const float a = mx::scaled_value(method, v, byte);
  const float u = method == mx::kAbsmaxSr
                      ? mx::hash_uniform(*seed,
                                         static_cast<uint32_t>(idx % period))
                      : 0.0f;
  const uint32_t c = mx::quantize_code(method, a, u);
  mask[idx] = fabsf(a) < 6.0f;
  const uint32_t hi = __shfl_down_sync(full, c, 1);
  if ((lane & 1) == 0) codes[idx / 2] = static_cast<uint8_t>(c | (hi << 4));
}

ffi::Error QuantizeImpl(cudaStream_t stream, ffi::AnyBuffer x,
                        ffi::Buffer<ffi::F32> signs,
                        ffi::Buffer<ffi::U32> seed,
                        ffi::ResultBuffer<ffi::U8> codes,
                        ffi::ResultBuffer<ffi::U8> scale,
                        ffi::ResultBuffer<ffi::PRED> mask, int32_t method,
                        bool rotate, int64_t period) {
  ffi::Error bad = quartet_ffi::check_quantize(x, signs, seed, method);
  if (bad.failure()) return bad;
  const auto dtype = x.element_type();
  const int64_t total = static_cast<int64_t>(x.element_count());
  if (total == 0) return ffi::Error::Success();
  if (period <= 0) period = total;
  const int64_t groups = total / mx::kGroup;
  const int64_t blocks = (total + kThreads - 1) / kThreads;
  QuantizeKernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
      x.untyped_data(), dtype == ffi::BF16, signs.typed_data(),
      seed.typed_data(), codes->typed_data(), scale->typed_data(),
      mask->typed_data(), groups, method, rotate, period);
  return cuda_error("quantize kernel launch");
}

// ----------------------------------------------------------------------------
// GEMM helpers.

#if defined(QUARTET_WITH_CUTLASS)  // used by the CUTLASS path only
// Scales [rows, ks] -> cuBLAS "block scaling factors layout": 128x4 tiles
// (row-block major, K-block minor) of 512 bytes; inside a tile, scale
// (r, c) sits at (r % 32) * 16 + (r / 32) * 4 + c. Padding is zero.
// Batched: `per` = blocked bytes of one batch element; `total` = batch * per.
__global__ void BlockScalesKernel(const uint8_t* __restrict__ in,
                                  uint8_t* __restrict__ out, int64_t rows,
                                  int64_t ks, int64_t col_blocks, int64_t per,
                                  int64_t total) {
  const int64_t q = static_cast<int64_t>(blockIdx.x) * blockDim.x +
                    threadIdx.x;
  if (q >= total) return;
  const int64_t t = q / per, p = q % per;
  const int64_t tile = p / 512, within = p % 512;
  const int64_t r = (tile / col_blocks) * 128 + ((within % 16) / 4) * 32 +
                    within / 16;
  const int64_t c = (tile % col_blocks) * 4 + within % 4;
  out[q] = (r < rows && c < ks) ? in[t * rows * ks + r * ks + c] : 0;
}

__global__ void F32ToBf16Kernel(const float* __restrict__ in,
                                __nv_bfloat16* __restrict__ out, int64_t n) {
  const int64_t p = static_cast<int64_t>(blockIdx.x) * blockDim.x +
                    threadIdx.x;
  if (p < n) out[p] = __float2bfloat16_rn(in[p]);
}

#endif  // QUARTET_WITH_CUTLASS

// Packed MXFP4 [rows, K/2] + scales -> BF16 [rows, K] (exact).
__global__ void DequantKernel(const uint8_t* __restrict__ codes,
                              const uint8_t* __restrict__ scale,
                              __nv_bfloat16* __restrict__ out, int64_t k,
                              int64_t pairs) {
  const int64_t p = static_cast<int64_t>(blockIdx.x) * blockDim.x +
                    threadIdx.x;
  if (p >= pairs) return;
  const int64_t row = (2 * p) / k, col = (2 * p) % k;
  const float s = mx::e8m0_decode(scale[row * (k / mx::kGroup) +
                                        col / mx::kGroup]);
  const uint8_t b = codes[p];
  out[2 * p] = __float2bfloat16_rn(mx::e2m1_decode(b & 0xFu) * s);
  out[2 * p + 1] = __float2bfloat16_rn(mx::e2m1_decode(b >> 4) * s);
}

unsigned grid_for(int64_t n) {
  return static_cast<unsigned>((n + kThreads - 1) / kThreads);
}

// cuBLASLt entry points, resolved once per process.
struct LtApi {
  bool ok = false;
  std::string error;
  lt::CreateFn create;
  lt::GetStatusStringFn status_string;
  lt::MatmulDescCreateFn desc_create;
  lt::MatmulDescDestroyFn desc_destroy;
  lt::MatmulDescSetAttributeFn desc_set;
  lt::MatrixLayoutCreateFn layout_create;
  lt::MatrixLayoutDestroyFn layout_destroy;
  lt::MatrixLayoutSetAttributeFn layout_set;
  lt::PreferenceCreateFn pref_create;
  lt::PreferenceDestroyFn pref_destroy;
  lt::PreferenceSetAttributeFn pref_set;
  lt::AlgoGetHeuristicFn heuristic;
  lt::MatmulFn matmul;
};

template <typename F>
bool resolve(void* lib, const char* name, F* fn, std::string* error) {
  *fn = reinterpret_cast<F>(dlsym(lib, name));
  if (*fn == nullptr) *error = std::string("cuBLASLt lacks ") + name;
  return *fn != nullptr;
}

const LtApi& lt_api() {
  static LtApi api;
  static std::once_flag once;
  std::call_once(once, [] {
    const char* names[] = {getenv("QUARTET_CUBLASLT_PATH"),
                           "libcublasLt.so.13", "libcublasLt.so.12",
                           "libcublasLt.so"};
    void* lib = nullptr;
    for (const char* n : names) {
      if (n && (lib = dlopen(n, RTLD_NOW | RTLD_GLOBAL))) break;
    }
    if (!lib) {
      api.error =
          "could not dlopen libcublasLt (install the `nvidia-cublas` wheel, "
          "e.g. via jax[cuda13], or set QUARTET_CUBLASLT_PATH)";
      return;
    }
    std::string& e = api.error;
    api.ok = resolve(lib, "cublasLtCreate", &api.create, &e) &&
             resolve(lib, "cublasLtGetStatusString", &api.status_string, &e) &&
             resolve(lib, "cublasLtMatmulDescCreate", &api.desc_create, &e) &&
             resolve(lib, "cublasLtMatmulDescDestroy", &api.desc_destroy, &e) &&
             resolve(lib, "cublasLtMatmulDescSetAttribute", &api.desc_set,
                     &e) &&
             resolve(lib, "cublasLtMatrixLayoutCreate", &api.layout_create,
                     &e) &&
             resolve(lib, "cublasLtMatrixLayoutDestroy", &api.layout_destroy,
                     &e) &&
             resolve(lib, "cublasLtMatrixLayoutSetAttribute", &api.layout_set,
                     &e) &&
             resolve(lib, "cublasLtMatmulPreferenceCreate", &api.pref_create,
                     &e) &&
             resolve(lib, "cublasLtMatmulPreferenceDestroy",
                     &api.pref_destroy, &e) &&
             resolve(lib, "cublasLtMatmulPreferenceSetAttribute",
                     &api.pref_set, &e) &&
             resolve(lib, "cublasLtMatmulAlgoGetHeuristic", &api.heuristic,
                     &e) &&
             resolve(lib, "cublasLtMatmul", &api.matmul, &e);
  });
  return api;
}

// One cuBLASLt handle per device, created on first use.
lt::Handle lt_handle(int device, std::string* error) {
  static std::mutex mu;
  static lt::Handle handles[64] = {};
  if (device < 0 || device >= 64) {
    *error = "device ordinal out of range";
    return nullptr;
  }
  std::lock_guard<std::mutex> lock(mu);
  if (!handles[device]) {
    const lt::Status s = lt_api().create(&handles[device]);
    if (s != lt::kSuccess) {
      *error = std::string("cublasLtCreate: ") + lt_api().status_string(s);
      handles[device] = nullptr;
    }
  }
  return handles[device];
}

// cuBLASLt's handle for `device`, or an error prefixed with `who`.
ffi::Error lt_ready(int32_t device, const char* who, lt::Handle* handle) {
  const LtApi& api = lt_api();
  if (!api.ok) {
    return ffi::Error(ffi::ErrorCode::kFailedPrecondition,
                      std::string(who) + ": " + api.error);
  }
  std::string err;
  *handle = lt_handle(device, &err);
  if (!*handle) return ffi::Error::Internal(std::string(who) + ": " + err);
  return ffi::Error::Success();
}

// Makes `device` current and reads its compute capability.
ffi::Error compute_capability(int32_t device, int* major, int* minor) {
  if (cudaSetDevice(device) != cudaSuccess ||
      cudaDeviceGetAttribute(major, cudaDevAttrComputeCapabilityMajor,
                             device) != cudaSuccess ||
      cudaDeviceGetAttribute(minor, cudaDevAttrComputeCapabilityMinor,
                             device) != cudaSuccess) {
    return cuda_error("querying the device");
  }
  return ffi::Error::Success();
}

// QUARTET_MXFP4_FORCE_DEQUANT=1: the BF16 paths everywhere (benchmarks).
bool force_dequant() {
  const char* force = getenv("QUARTET_MXFP4_FORCE_DEQUANT");
  return force && force[0] == '1';
}

// Owns the cuBLASLt descriptors of one call.
struct LtCall {
  const LtApi& api;
  lt::MatmulDesc desc = nullptr;
  lt::MatrixLayout a = nullptr, b = nullptr, d = nullptr;
  lt::Preference pref = nullptr;
  explicit LtCall(const LtApi& x) : api(x) {}
  ~LtCall() {
    if (pref) api.pref_destroy(pref);
    if (d) api.layout_destroy(d);
    if (b) api.layout_destroy(b);
    if (a) api.layout_destroy(a);
    if (desc) api.desc_destroy(desc);
  }
};

#define LT_CHECK(expr)                                                      \
  do {                                                                      \
    const lt::Status s_ = (expr);                                           \
    if (s_ != lt::kSuccess) {                                               \
      return ffi::Error::Internal(std::string("quartet_mxfp4_gemm: ") +     \
                                  #expr + ": " + api.status_string(s_));    \
    }                                                                       \
  } while (0)

// y[M, N] (row-major) = alpha * X[M, K] W[N, K]^T, i.e. in cuBLAS's
// column-major terms D[N, M] = alpha * op(A) B with A = W (K x N, "T"),
// B = X (K x M, "N"): the "TN" layout both FP4 operands need.
//
// scale_mode: 0 for BF16 operands, else the block-scaling mode of both FP4
// operands (kScaleVec32Ue8m0: MXFP4, kScaleVec16Ue4m3: NVFP4; scales already
// in the blocked layout). alpha_beta_dev: null for the host scalar `alpha`,
// else device {alpha, beta} (NVFP4's alpha is the product of two tensor
// scales that live on the device).
ffi::Error LtMatmul(cudaStream_t stream, lt::Handle handle, int32_t scale_mode,
                    const void* x, const void* w, const void* x_scale,
                    const void* w_scale, void* y, cudaDataType_t y_type,
                    int64_t m, int64_t n, int64_t k, float alpha,
                    void* workspace, const float* alpha_beta_dev = nullptr,
                    int32_t batch = 1) {
  const LtApi& api = lt_api();
  LtCall c(api);
  const bool fp4 = scale_mode != 0;
  const cudaDataType_t in_type = fp4 ? lt::kE2M1 : CUDA_R_16BF;
  LT_CHECK(api.desc_create(&c.desc, lt::kComputeF32, CUDA_R_32F));
  const int32_t op_t = lt::kOpT, op_n = lt::kOpN;
  LT_CHECK(api.desc_set(c.desc, lt::kDescTransA, &op_t, sizeof(op_t)));
  LT_CHECK(api.desc_set(c.desc, lt::kDescTransB, &op_n, sizeof(op_n)));
  if (alpha_beta_dev) {
    const int32_t pm = lt::kPointerModeDevice;
    LT_CHECK(api.desc_set(c.desc, lt::kDescPointerMode, &pm, sizeof(pm)));
  }
  if (fp4) {
    const int32_t mode = scale_mode;
    LT_CHECK(api.desc_set(c.desc, lt::kDescAScaleMode, &mode, sizeof(mode)));
    LT_CHECK(api.desc_set(c.desc, lt::kDescBScaleMode, &mode, sizeof(mode)));
    LT_CHECK(api.desc_set(c.desc, lt::kDescAScalePointer, &w_scale,
                          sizeof(w_scale)));
    LT_CHECK(api.desc_set(c.desc, lt::kDescBScalePointer, &x_scale,
                          sizeof(x_scale)));
  }
  LT_CHECK(api.layout_create(&c.a, in_type, k, n, k));
  LT_CHECK(api.layout_create(&c.b, in_type, k, m, k));
  LT_CHECK(api.layout_create(&c.d, y_type, n, m, n));
  if (batch > 1) {  // strided batch: operands and result contiguous per element
    const int64_t strides[3] = {n * k, m * k, m * n};
    lt::MatrixLayout layouts[3] = {c.a, c.b, c.d};
    for (int i = 0; i < 3; ++i) {
      LT_CHECK(api.layout_set(layouts[i], lt::kLayoutBatchCount, &batch,
                              sizeof(batch)));
      LT_CHECK(api.layout_set(layouts[i], lt::kLayoutBatchStride, &strides[i],
                              sizeof(strides[i])));
    }
  }
  LT_CHECK(api.pref_create(&c.pref));
  const uint64_t ws = kLtWorkspace;
  LT_CHECK(api.pref_set(c.pref, lt::kPrefMaxWorkspaceBytes, &ws, sizeof(ws)));
  lt::HeuristicResult result;
  int found = 0;
  const lt::Status hs = api.heuristic(handle, c.desc, c.a, c.b, c.d, c.d,
                                      c.pref, 1, &result, &found);
  if (hs != lt::kSuccess || found == 0) {
    return ffi::Error(
        ffi::ErrorCode::kUnimplemented,
        std::string("quartet_mxfp4_gemm: cuBLASLt has no ") +
            (fp4 ? "block-scaled FP4" : "BF16") + " algorithm for M=" +
            std::to_string(m) + ", N=" + std::to_string(n) + ", K=" +
            std::to_string(k) + " (" +
            (hs == lt::kSuccess ? "no candidates" : api.status_string(hs)) +
            ")");
  }
  const float beta = 0.0f;
  const void* alpha_ptr = alpha_beta_dev ? alpha_beta_dev : &alpha;
  const void* beta_ptr = alpha_beta_dev ? alpha_beta_dev + 1 : &beta;
  LT_CHECK(api.matmul(handle, c.desc, alpha_ptr, w, c.a, x, c.b, beta_ptr, y,
                      c.d, y, c.d, &result.algo, workspace, kLtWorkspace,
                      stream));
  return ffi::Error::Success();
}

// Temporary device buffers of one call, allocated on first use and reused by
// every batch element (the stream orders the reuse).
struct Buffers {
  ffi::ScratchAllocator& scratch;
  void* a = nullptr;
  void* b = nullptr;
  size_t a_size = 0, b_size = 0;
  bool get(size_t na, size_t nb) {
    if (a_size < na) {
      auto p = scratch.Allocate(na, 256);
      if (!p) return false;
      a = *p, a_size = na;
    }
    if (b_size < nb) {
      auto p = scratch.Allocate(nb, 256);
      if (!p) return false;
      b = *p, b_size = nb;
    }
    return true;
  }
};

// Hopper/Ampere (and MXFP4 without CUTLASS): exact BF16 operands, then one
// strided-batched BF16 GEMM with fp32 accumulation for the whole batch.
ffi::Error DequantGemm(cudaStream_t stream, Buffers& bufs, lt::Handle handle,
                       const uint8_t* ac, const uint8_t* as, const uint8_t* bc,
                       const uint8_t* bs, void* y, cudaDataType_t y_type,
                       int64_t m, int64_t n, int64_t k, int64_t batch,
                       float alpha, void* workspace) {
  if (!bufs.get(static_cast<size_t>(batch * m * k * 2),
                static_cast<size_t>(batch * n * k * 2))) {
    return ffi::Error(ffi::ErrorCode::kResourceExhausted,
                      "quartet_mxfp4_gemm: no scratch memory for BF16 "
                      "operands");
  }
  auto* pa = static_cast<__nv_bfloat16*>(bufs.a);
  auto* pb = static_cast<__nv_bfloat16*>(bufs.b);
  // Rows of all batch elements are consecutive: [batch * rows, K].
  DequantKernel<<<grid_for(batch * m * k / 2), kThreads, 0, stream>>>(
      ac, as, pa, k, batch * m * k / 2);
  DequantKernel<<<grid_for(batch * n * k / 2), kThreads, 0, stream>>>(
      bc, bs, pb, k, batch * n * k / 2);
  ffi::Error e = cuda_error("dequantize kernel");
  if (e.failure()) return e;
  return LtMatmul(stream, handle, 0, pa, pb, nullptr, nullptr, y, y_type, m,
                  n, k, alpha, workspace, nullptr,
                  static_cast<int32_t>(batch));
}

// Blackwell (10.x, 12.x): the whole batch in one CUTLASS block-scaled MXFP4
// GEMM.
ffi::Error CutlassGemm(CutlassMxfp4Fn gemm, cudaStream_t stream,
                       ffi::ScratchAllocator& scratch,
                       const uint8_t* ac, const uint8_t* as, const uint8_t* bc,
                       const uint8_t* bs, void* y, bool y_bf16, int64_t m,
                       int64_t n, int64_t k, int64_t batch, float alpha,
                       void* workspace) {
#if defined(QUARTET_WITH_CUTLASS)
  const int64_t ks = k / mx::kGroup, cb = (ks + 3) / 4;
  const int64_t a_blk = (m + 127) / 128 * 128 * cb * 4;
  const int64_t b_blk = (n + 127) / 128 * 128 * cb * 4;
  auto pa = scratch.Allocate(static_cast<size_t>(batch * a_blk), 256);
  auto pb = scratch.Allocate(static_cast<size_t>(batch * b_blk), 256);
  void* d = y;
  if (y_bf16) {
    auto pd = scratch.Allocate(static_cast<size_t>(batch * m * n) * 4, 256);
    if (!pd) pa = {};
    else d = *pd;
  }
  if (!pa || !pb) {
    return ffi::Error(ffi::ErrorCode::kResourceExhausted,
                      "quartet_mxfp4_gemm: no scratch memory for CUTLASS");
  }
  auto* sa = static_cast<uint8_t*>(*pa);
  auto* sb = static_cast<uint8_t*>(*pb);
  BlockScalesKernel<<<grid_for(batch * a_blk), kThreads, 0, stream>>>(
      as, sa, m, ks, cb, a_blk, batch * a_blk);
  BlockScalesKernel<<<grid_for(batch * b_blk), kThreads, 0, stream>>>(
      bs, sb, n, ks, cb, b_blk, batch * b_blk);
  ffi::Error e = cuda_error("scale layout kernel");
  if (e.failure()) return e;
  const int rc = gemm(
      ac, sa, bc, sb, static_cast<float*>(d), static_cast<int>(m),
      static_cast<int>(n), static_cast<int>(k), static_cast<int>(batch), alpha,
      workspace, kLtWorkspace, stream);
  if (rc != 0) {
    return ffi::Error::Internal(
        "quartet_mxfp4_gemm: CUTLASS MXFP4 GEMM failed (code " +
        std::to_string(rc) + ") for M=" + std::to_string(m) + ", N=" +
        std::to_string(n) + ", K=" + std::to_string(k) +
        "; QUARTET_MXFP4_FORCE_DEQUANT=1 selects the BF16 path");
  }
  if (y_bf16) {
    F32ToBf16Kernel<<<grid_for(batch * m * n), kThreads, 0, stream>>>(
        static_cast<const float*>(d), static_cast<__nv_bfloat16*>(y),
        batch * m * n);
    return cuda_error("bf16 conversion kernel");
  }
  return ffi::Error::Success();
#else
  (void)gemm, (void)stream, (void)scratch, (void)ac, (void)as, (void)bc;
  (void)bs;
  (void)y, (void)y_bf16, (void)m, (void)n, (void)k, (void)batch, (void)alpha;
  (void)workspace;
  return ffi::Error(ffi::ErrorCode::kUnimplemented,
                    "quartet_mxfp4_gemm: built without CUTLASS");
#endif
}

ffi::Error GemmImpl(cudaStream_t stream, ffi::ScratchAllocator scratch,
                    int32_t device, ffi::Buffer<ffi::U8> a_codes,
                    ffi::Buffer<ffi::U8> a_scale, ffi::Buffer<ffi::U8> b_codes,
                    ffi::Buffer<ffi::U8> b_scale,
                    ffi::Result<ffi::AnyBuffer> y, float alpha) {
  quartet_ffi::Mxfp4Gemm g;
  const auto out_type = y->element_type();
  ffi::Error bad = quartet_ffi::check_mxfp4_gemm(
      a_codes.dimensions(), a_scale.dimensions(), b_codes.dimensions(),
      b_scale.dimensions(), y->dimensions(), out_type, &g);
  if (bad.failure()) return bad;
  const int64_t m = g.m, n = g.n, k = g.k, batch = g.batch;
  if (m == 0 || n == 0 || batch == 0) return ffi::Error::Success();
  int major = 0, minor = 0;
  ffi::Error e = compute_capability(device, &major, &minor);
  if (e.failure()) return e;
  const CutlassMxfp4Fn cutlass_gemm = cutlass_mxfp4_for(major);
  const bool fp4 = cutlass_gemm != nullptr && !force_dequant();
  if (!fp4 && major < 8) {
    return ffi::Error(
        ffi::ErrorCode::kUnimplemented,
        "quartet_mxfp4_gemm: compute capability " + std::to_string(major) +
            "." + std::to_string(minor) +
            " is not supported (needs >= 8.0 for the BF16 fallback; the FP4 "
            "path needs 10.x or 12.x)");
  }
  auto workspace = scratch.Allocate(kLtWorkspace, 256);
  if (!workspace) {
    return ffi::Error(ffi::ErrorCode::kResourceExhausted,
                      "quartet_mxfp4_gemm: no scratch memory for the GEMM");
  }
  if (fp4) {  // CUTLASS needs no cuBLASLt
    e = CutlassGemm(
        cutlass_gemm, stream, scratch, a_codes.typed_data(), a_scale.typed_data(),
        b_codes.typed_data(), b_scale.typed_data(), y->untyped_data(),
        out_type == ffi::BF16, m, n, k, batch, alpha, *workspace);
    if (e.failure()) return e;
    g_last_path.store(1);
    return ffi::Error::Success();
  }
  lt::Handle handle = nullptr;
  e = lt_ready(device, "quartet_mxfp4_gemm", &handle);
  if (e.failure()) return e;
  const cudaDataType_t y_type =
      out_type == ffi::F32 ? CUDA_R_32F : CUDA_R_16BF;
  Buffers bufs{scratch};
  e = DequantGemm(stream, bufs, handle, a_codes.typed_data(),
                             a_scale.typed_data(), b_codes.typed_data(),
                             b_scale.typed_data(), y->untyped_data(), y_type,
                             m, n, k, batch, alpha, *workspace);
  if (e.failure()) return e;
  g_last_path.store(2);
  return ffi::Error::Success();
}

// ----------------------------------------------------------------------------
// NVFP4 GEMM (quartet_nvfp4_gemm; CPU oracle Nvfp4GemmImpl in mxfp4_cpu.cc).
// Block scales arrive as E4M3 bytes already in the blocked layout (the
// Python wrapper swizzles them with reference.to_blocked), so Blackwell hands
// them to cuBLASLt's VEC16_UE4M3 mode as they are; alpha = a_global *
// b_global is computed on the device and passed in device pointer mode.

// {alpha, beta} = {a_global[t] * b_global[t], 0} for every batch element.
__global__ void Nvfp4AlphaKernel(const float* __restrict__ ag,
                                 const float* __restrict__ bg,
                                 float* __restrict__ out, int64_t batch) {
  const int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x +
                    threadIdx.x;
  if (t >= batch) return;
  out[2 * t] = ag[t] * bg[t];
  out[2 * t + 1] = 0.0f;
}

// Packed NVFP4 [rows, K/2] + blocked E4M3 scales -> BF16 [rows, K] (exact:
// a 2-bit E2M1 significand times a 4-bit E4M3 one fits BF16's 8 bits).
__global__ void Nvfp4DequantKernel(const uint8_t* __restrict__ codes,
                                   const uint8_t* __restrict__ scale_blocked,
                                   __nv_bfloat16* __restrict__ out, int64_t k,
                                   int64_t pairs) {
  const int64_t p = static_cast<int64_t>(blockIdx.x) * blockDim.x +
                    threadIdx.x;
  if (p >= pairs) return;
  const int64_t row = (2 * p) / k, col = (2 * p) % k;
  const int64_t ks = k / mx::kNvfp4Group;
  const float s = mx::e4m3_decode(
      scale_blocked[mx::blocked_index(row, col / mx::kNvfp4Group, ks)]);
  const uint8_t b = codes[p];
  out[2 * p] = __float2bfloat16_rn(mx::e2m1_decode(b & 0xFu) * s);
  out[2 * p + 1] = __float2bfloat16_rn(mx::e2m1_decode(b >> 4) * s);
}

ffi::Error Nvfp4GemmImpl(cudaStream_t stream, ffi::ScratchAllocator scratch,
                         int32_t device, ffi::Buffer<ffi::U8> a_codes,
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
  const int64_t m = g.m, n = g.n, k = g.k, batch = g.batch;
  const int64_t sa = g.scale_a, sb = g.scale_b;
  const auto out_type = y->element_type();
  if (m == 0 || n == 0 || batch == 0) return ffi::Error::Success();
  int major = 0, minor = 0;
  ffi::Error e = compute_capability(device, &major, &minor);
  if (e.failure()) return e;
  // Chosen by compute capability, not by a failed call: NVFP4 block scaling
  // exists on 10.x and 12.x (Blackwell); 8.x and 9.x dequantize to BF16.
  const bool fp4 = (major == 10 || major == 12) && !force_dequant();
  if (!fp4 && major < 8) {
    return ffi::Error(ffi::ErrorCode::kUnimplemented,
                      "quartet_nvfp4_gemm: needs compute capability >= 8.0");
  }
  lt::Handle handle = nullptr;
  e = lt_ready(device, "quartet_nvfp4_gemm", &handle);
  if (e.failure()) return e;
  auto workspace = scratch.Allocate(kLtWorkspace, 256);
  auto alphas = scratch.Allocate(static_cast<size_t>(2 * batch) * 4, 256);
  if (!workspace || !alphas) {
    return ffi::Error(ffi::ErrorCode::kResourceExhausted,
                      "quartet_nvfp4_gemm: no scratch memory");
  }
  auto* ab = static_cast<float*>(*alphas);
  Nvfp4AlphaKernel<<<grid_for(batch), kThreads, 0, stream>>>(
      a_global.typed_data(), b_global.typed_data(), ab, batch);
  e = cuda_error("alpha kernel");
  if (e.failure()) return e;
  const cudaDataType_t y_type =
      out_type == ffi::F32 ? CUDA_R_32F : CUDA_R_16BF;
  const size_t y_bytes = out_type == ffi::F32 ? 4 : 2;
  bool use_fp4 = fp4;
  Buffers bufs{scratch};
  for (int64_t t = 0; t < batch; ++t) {
    const uint8_t* ac = a_codes.typed_data() + t * m * (k / 2);
    const uint8_t* as = a_scale.typed_data() + t * sa;
    const uint8_t* bc = b_codes.typed_data() + t * n * (k / 2);
    const uint8_t* bs = b_scale.typed_data() + t * sb;
    void* yt = static_cast<char*>(y->untyped_data()) + t * m * n * y_bytes;
    if (use_fp4) {
      e = LtMatmul(stream, handle, lt::kScaleVec16Ue4m3, ac, bc, as, bs, yt,
                   y_type, m, n, k, 1.0f, *workspace, ab + 2 * t);
      if (e.failure() && e.errc() == ffi::ErrorCode::kUnimplemented) {
        static std::once_flag warned;
        std::call_once(warned, [&] {
          fprintf(stderr, "quartet_nvfp4_gemm: %s; using dequantize + BF16\n",
                  e.message().c_str());
        });
        use_fp4 = false;
      }
    }
    if (!use_fp4) {
      if (!bufs.get(static_cast<size_t>(m * k * 2),
                    static_cast<size_t>(n * k * 2))) {
        return ffi::Error(ffi::ErrorCode::kResourceExhausted,
                          "quartet_nvfp4_gemm: no scratch memory for BF16 "
                          "operands");
      }
      auto* pa = static_cast<__nv_bfloat16*>(bufs.a);
      auto* pb = static_cast<__nv_bfloat16*>(bufs.b);
      Nvfp4DequantKernel<<<grid_for(m * k / 2), kThreads, 0, stream>>>(
          ac, as, pa, k, m * k / 2);
      Nvfp4DequantKernel<<<grid_for(n * k / 2), kThreads, 0, stream>>>(
          bc, bs, pb, k, n * k / 2);
      e = cuda_error("dequantize kernel");
      if (e.failure()) return e;
      e = LtMatmul(stream, handle, 0, pa, pb, nullptr, nullptr, yt, y_type, m,
                   n, k, 1.0f, *workspace, ab + 2 * t);
    }
    if (e.failure()) return e;
    g_last_path.store(use_fp4 ? 1 : 2);
  }
  return ffi::Error::Success();
}

}  // namespace

#define QUARTET_EXPORT extern "C" __attribute__((visibility("default")))
QUARTET_EXPORT XLA_FFI_Error* QuartetMxfp4GemmCuda(XLA_FFI_CallFrame*);
QUARTET_EXPORT XLA_FFI_Error* QuartetMxfp4QuantizeCuda(XLA_FFI_CallFrame*);
QUARTET_EXPORT XLA_FFI_Error* QuartetNvfp4GemmCuda(XLA_FFI_CallFrame*);

QUARTET_EXPORT int QuartetMxfp4CudaLastGemmPath() { return g_last_path.load(); }

XLA_FFI_DEFINE_HANDLER_SYMBOL(
    QuartetMxfp4GemmCuda, GemmImpl,
    ffi::Ffi::Bind()
        .Ctx<ffi::PlatformStream<cudaStream_t>>()
        .Ctx<ffi::ScratchAllocator>()
        .Ctx<ffi::DeviceOrdinal>()
        .Arg<ffi::Buffer<ffi::U8>>()
        .Arg<ffi::Buffer<ffi::U8>>()
        .Arg<ffi::Buffer<ffi::U8>>()
        .Arg<ffi::Buffer<ffi::U8>>()
        .Ret<ffi::AnyBuffer>()
        .Attr<float>("alpha"));

XLA_FFI_DEFINE_HANDLER_SYMBOL(
    QuartetMxfp4QuantizeCuda, QuantizeImpl,
    ffi::Ffi::Bind()
        .Ctx<ffi::PlatformStream<cudaStream_t>>()
        .Arg<ffi::AnyBuffer>()
        .Arg<ffi::Buffer<ffi::F32>>()
        .Arg<ffi::Buffer<ffi::U32>>()
        .Ret<ffi::Buffer<ffi::U8>>()
        .Ret<ffi::Buffer<ffi::U8>>()
        .Ret<ffi::Buffer<ffi::PRED>>()
        .Attr<int32_t>("method")
        .Attr<bool>("rotate")
        .Attr<int64_t>("period"),
    {ffi::Traits::kCmdBufferCompatible});

XLA_FFI_DEFINE_HANDLER_SYMBOL(
    QuartetNvfp4GemmCuda, Nvfp4GemmImpl,
    ffi::Ffi::Bind()
        .Ctx<ffi::PlatformStream<cudaStream_t>>()
        .Ctx<ffi::ScratchAllocator>()
        .Ctx<ffi::DeviceOrdinal>()
        .Arg<ffi::Buffer<ffi::U8>>()
        .Arg<ffi::Buffer<ffi::U8>>()
        .Arg<ffi::Buffer<ffi::F32>>()
        .Arg<ffi::Buffer<ffi::U8>>()
        .Arg<ffi::Buffer<ffi::U8>>()
        .Arg<ffi::Buffer<ffi::F32>>()
        .Ret<ffi::AnyBuffer>());
