// The small part of the cuBLASLt API the CUDA handler uses, declared here and
// resolved with dlopen/dlsym at first use.
//
// Why not #include <cublasLt.h> and link -lcublasLt: the CUDA toolkit does
// not ship cuBLAS (it comes from the `nvidia-cublas` wheel), and the library
// must compile with nvcc alone (CI) and load on machines without cuBLAS. When
// the real header is available the build defines QUARTET_CHECK_CUBLASLT_H and
// every value below is static_assert-ed against it.
//
// Values from cublasLt.h / cublas_api.h / library_types.h of CUDA 13.0
// (nvidia-cublas 13.0.2); the block-scaled FP4 entries exist since 12.8.
#ifndef QUARTET_MXFP4_FFI_CUBLASLT_API_H_
#define QUARTET_MXFP4_FFI_CUBLASLT_API_H_

#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>
#include <library_types.h>

namespace quartet_lt {

using Status = int;  // cublasStatus_t
using Handle = void*;  // cublasLtHandle_t
using MatmulDesc = void*;  // cublasLtMatmulDesc_t
using MatrixLayout = void*;  // cublasLtMatrixLayout_t
using Preference = void*;  // cublasLtMatmulPreference_t

struct MatmulAlgo {  // cublasLtMatmulAlgo_t
  uint64_t data[8];
};
struct HeuristicResult {  // cublasLtMatmulHeuristicResult_t
  MatmulAlgo algo;
  size_t workspaceSize;
  Status state;
  float wavesCount;
  int reserved[4];
};

constexpr Status kSuccess = 0;             // CUBLAS_STATUS_SUCCESS
constexpr int32_t kOpN = 0;                // CUBLAS_OP_N
constexpr int32_t kOpT = 1;                // CUBLAS_OP_T
constexpr int kComputeF32 = 68;            // CUBLAS_COMPUTE_32F
// cublasLtMatmulDescAttributes_t
constexpr int kDescTransA = 3;             // CUBLASLT_MATMUL_DESC_TRANSA
constexpr int kDescTransB = 4;             // CUBLASLT_MATMUL_DESC_TRANSB
constexpr int kDescAScalePointer = 17;     // ..._A_SCALE_POINTER
constexpr int kDescBScalePointer = 18;     // ..._B_SCALE_POINTER
constexpr int kDescAScaleMode = 31;        // ..._A_SCALE_MODE
constexpr int kDescBScaleMode = 32;        // ..._B_SCALE_MODE
// cublasLtMatmulMatrixScale_t
constexpr int32_t kScaleVec16Ue4m3 = 1;    // ..._MATRIX_SCALE_VEC16_UE4M3
constexpr int32_t kScaleVec32Ue8m0 = 2;    // ..._MATRIX_SCALE_VEC32_UE8M0
constexpr int kDescPointerMode = 2;        // CUBLASLT_MATMUL_DESC_POINTER_MODE
constexpr int32_t kPointerModeDevice = 1;  // CUBLASLT_POINTER_MODE_DEVICE
// cublasLtMatrixLayoutAttribute_t
constexpr int kLayoutBatchCount = 5;       // ..._LAYOUT_BATCH_COUNT (int32)
constexpr int kLayoutBatchStride = 6;      // ..._STRIDED_BATCH_OFFSET (int64)
// cublasLtMatmulPreferenceAttributes_t
constexpr int kPrefMaxWorkspaceBytes = 1;  // ..._PREF_MAX_WORKSPACE_BYTES
// cudaDataType_t (library_types.h ships with the CUDA toolkit)
constexpr cudaDataType_t kE2M1 = CUDA_R_4F_E2M1;

// Function pointer types, with the argument lists of cublasLt.h.
using CreateFn = Status (*)(Handle*);
using GetStatusStringFn = const char* (*)(Status);
using MatmulDescCreateFn = Status (*)(MatmulDesc*, int, cudaDataType_t);
using MatmulDescDestroyFn = Status (*)(MatmulDesc);
using MatmulDescSetAttributeFn = Status (*)(MatmulDesc, int, const void*,
                                            size_t);
using MatrixLayoutCreateFn = Status (*)(MatrixLayout*, cudaDataType_t,
                                        uint64_t, uint64_t, int64_t);
using MatrixLayoutDestroyFn = Status (*)(MatrixLayout);
using MatrixLayoutSetAttributeFn = Status (*)(MatrixLayout, int, const void*,
                                              size_t);
using PreferenceCreateFn = Status (*)(Preference*);
using PreferenceDestroyFn = Status (*)(Preference);
using PreferenceSetAttributeFn = Status (*)(Preference, int, const void*,
                                            size_t);
using AlgoGetHeuristicFn = Status (*)(Handle, MatmulDesc, MatrixLayout,
                                      MatrixLayout, MatrixLayout,
                                      MatrixLayout, Preference, int,
                                      HeuristicResult*, int*);
using MatmulFn = Status (*)(Handle, MatmulDesc, const void*, const void*,
                            MatrixLayout, const void*, MatrixLayout,
                            const void*, const void*, MatrixLayout, void*,
                            MatrixLayout, const MatmulAlgo*, void*, size_t,
                            cudaStream_t);

}  // namespace quartet_lt

#if defined(QUARTET_CHECK_CUBLASLT_H)
#include <cublasLt.h>

#include <type_traits>

namespace quartet_lt {
static_assert(kSuccess == CUBLAS_STATUS_SUCCESS, "cuBLASLt value drifted");
static_assert(kOpN == CUBLAS_OP_N && kOpT == CUBLAS_OP_T, "");
static_assert(kComputeF32 == CUBLAS_COMPUTE_32F, "");
static_assert(kDescTransA == CUBLASLT_MATMUL_DESC_TRANSA, "");
static_assert(kDescTransB == CUBLASLT_MATMUL_DESC_TRANSB, "");
static_assert(kDescAScalePointer == CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, "");
static_assert(kDescBScalePointer == CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, "");
static_assert(kDescAScaleMode == CUBLASLT_MATMUL_DESC_A_SCALE_MODE, "");
static_assert(kDescBScaleMode == CUBLASLT_MATMUL_DESC_B_SCALE_MODE, "");
static_assert(kScaleVec32Ue8m0 == CUBLASLT_MATMUL_MATRIX_SCALE_VEC32_UE8M0,
              "");
static_assert(kPrefMaxWorkspaceBytes ==
                  CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
              "");
static_assert(kLayoutBatchCount == CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, "");
static_assert(kLayoutBatchStride ==
                  CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
              "");
static_assert(std::is_same<decltype(&cublasLtMatrixLayoutSetAttribute),
                           cublasStatus_t (*)(cublasLtMatrixLayout_t,
                                              cublasLtMatrixLayoutAttribute_t,
                                              const void*, size_t)>::value,
              "");
static_assert(kScaleVec16Ue4m3 == CUBLASLT_MATMUL_MATRIX_SCALE_VEC16_UE4M3,
              "");
static_assert(kDescPointerMode == CUBLASLT_MATMUL_DESC_POINTER_MODE, "");
static_assert(kPointerModeDevice == CUBLASLT_POINTER_MODE_DEVICE, "");
static_assert(sizeof(MatmulAlgo) == sizeof(cublasLtMatmulAlgo_t), "");
static_assert(sizeof(HeuristicResult) ==
                  sizeof(cublasLtMatmulHeuristicResult_t),
              "");
static_assert(offsetof(HeuristicResult, state) ==
                  offsetof(cublasLtMatmulHeuristicResult_t, state),
              "");
static_assert(sizeof(Status) == sizeof(cublasStatus_t), "");
}  // namespace quartet_lt
#endif  // QUARTET_CHECK_CUBLASLT_H

#endif  // QUARTET_MXFP4_FFI_CUBLASLT_API_H_
