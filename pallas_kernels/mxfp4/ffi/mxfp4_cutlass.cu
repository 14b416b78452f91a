// MXFP4 GEMM on Blackwell GPUs through CUTLASS's
// block-scaled tensor-core GEMM: E2M1 operands with one UE8M0 scale per 32
// elements (`cutlass::mx_float4_t<float_e2m1_t>`), the MX format tcgen05's
// kind::mxf4 MMA executes natively. cuBLASLt documents block-scaled FP4 only
// as NVFP4 (see WORKSPACE.md, "The MXFP4 FFI bridge"), so MXFP4 goes here.
//
// Compiled twice, in its own translation unit, when the CUTLASS headers are
// found (the `nvidia-cutlass` wheel, or $CUTLASS_DIR): for sm_100a
// (B200/GB200, QuartetCutlassMxfp4Gemm) and with QUARTET_CUTLASS_SM120 for
// sm_120a (RTX 50xx, QuartetCutlassMxfp4GemmSm120); the handler in
// mxfp4_cuda.cu calls them on compute capability 10.x / 12.x and keeps
// dequantise + BF16 elsewhere. One call covers the
// whole batch (CUTLASS's L mode), not a loop of GEMMs.
//
// Layouts: x [L, M, K/2] and W [L, N, K/2] packed E2M1 (K contiguous: "TN"),
// scales already in the 128x4 blocked layout, one block of
// ceil(R/128)*128 * ceil(K/128)*4 bytes per batch element; D fp32 [L, M, N].
//
// References: Castro et al., "Quartet: Native FP4 Training Can Be Optimal
// for Large Language Models", NeurIPS 2025; CUTLASS 4.x, example 72
// (Blackwell block-scaled GEMMs).
#include <cuda_runtime.h>

#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "cutlass/detail/sm100_blockscaled_layout.hpp"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/gemm/device/gemm_universal_adapter.h"
#include "cutlass/gemm/dispatch_policy.hpp"
#include "cutlass/gemm/kernel/gemm_universal.hpp"
#include "cutlass/numeric_types.h"
#include "cutlass/util/packed_stride.hpp"

namespace {

using namespace cute;  // NOLINT: CUTLASS's shape vocabulary (Shape, _128)

using ElementAB = cutlass::mx_float4_t<cutlass::float_e2m1_t>;
using LayoutA = cutlass::layout::RowMajor;     // x [M, K], K contiguous
using LayoutB = cutlass::layout::ColumnMajor;  // W [N, K], K contiguous
using ElementD = float;
using LayoutD = cutlass::layout::RowMajor;
constexpr int kAlignAB = 32;  // elements: 16 bytes of packed E2M1
constexpr int kAlignD = 128 / cutlass::sizeof_bits<ElementD>::value;
using Acc = float;
#if defined(QUARTET_CUTLASS_SM120)
using Arch = cutlass::arch::Sm120;  // RTX 50xx: no clusters, K tile 128
using MmaTile = Shape<_128, _128, _128>;
#else
using Arch = cutlass::arch::Sm100;  // B200 / GB200: one SM, 1x1x1 cluster
using MmaTile = Shape<_128, _128, _256>;
#endif
using OpClass = cutlass::arch::OpClassBlockScaledTensorOp;
using Cluster = Shape<_1, _1, _1>;

using Epilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
    Arch, OpClass, MmaTile, Cluster,
    cutlass::epilogue::collective::EpilogueTileAuto, Acc, Acc, ElementD,
    LayoutD, kAlignD, ElementD, LayoutD, kAlignD,
    cutlass::epilogue::collective::EpilogueScheduleAuto>::CollectiveOp;

using Mainloop = typename cutlass::gemm::collective::CollectiveBuilder<
    Arch, OpClass, ElementAB, LayoutA, kAlignAB, ElementAB, LayoutB, kAlignAB,
    Acc, MmaTile, Cluster,
    cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(
        sizeof(typename Epilogue::SharedStorage))>,
    cutlass::gemm::collective::KernelScheduleAuto>::CollectiveOp;

using Kernel = cutlass::gemm::kernel::GemmUniversal<Shape<int, int, int, int>,
                                                    Mainloop, Epilogue, void>;
using Gemm = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;
using SfConfig = typename Kernel::CollectiveMainloop::Sm1xxBlkScaledConfig;

}  // namespace

// 0 on success; 1: CUTLASS cannot implement the problem (alignment, shape);
// 2: the workspace is too small; 3/4: initialise/run failed.
#if defined(QUARTET_CUTLASS_SM120)
#define QUARTET_CUTLASS_ENTRY QuartetCutlassMxfp4GemmSm120
#else
#define QUARTET_CUTLASS_ENTRY QuartetCutlassMxfp4Gemm
#endif
int QUARTET_CUTLASS_ENTRY(const void* a, const void* a_scale, const void* b,
                          const void* b_scale, float* d, int m, int n, int k,
                          int batch, float alpha, void* workspace,
                          size_t workspace_bytes, cudaStream_t stream) {
  using Data = typename ElementAB::DataType;
  using Scale = typename ElementAB::ScaleFactorType;
  const auto sa = cutlass::make_cute_packed_stride(
      typename Kernel::StrideA{}, cute::make_shape(m, k, batch));
  const auto sb = cutlass::make_cute_packed_stride(
      typename Kernel::StrideB{}, cute::make_shape(n, k, batch));
  const auto sd = cutlass::make_cute_packed_stride(
      typename Kernel::StrideD{}, cute::make_shape(m, n, batch));
  const auto shape = cute::make_shape(m, n, k, batch);
  typename Gemm::Arguments args{
      cutlass::gemm::GemmUniversalMode::kGemm,
      {m, n, k, batch},
      {static_cast<const Data*>(a), sa, static_cast<const Data*>(b), sb,
       static_cast<const Scale*>(a_scale),
       SfConfig::tile_atom_to_shape_SFA(shape),
       static_cast<const Scale*>(b_scale),
       SfConfig::tile_atom_to_shape_SFB(shape)},
      {{alpha, 0.0f}, d, sd, d, sd}};
  Gemm gemm;
  if (gemm.can_implement(args) != cutlass::Status::kSuccess) return 1;
  if (Gemm::get_workspace_size(args) > workspace_bytes) return 2;
  if (gemm.initialize(args, workspace, stream) != cutlass::Status::kSuccess) {
    return 3;
  }
  return gemm.run(stream) == cutlass::Status::kSuccess ? 0 : 4;
}
