"""The GPU backend of the MXFP4 Pallas kernels: Triton, chosen explicitly.

A `pallas_call` without compiler params lowers for Mosaic GPU on a CUDA
device (the default since jax 0.5), whose block rules (copies in multiples of
the 128-thread warpgroup, swizzled shared-memory tiles) these kernels do not
follow. Passing Triton's params selects the Triton lowering, which is what
the kernels were written for; on CPU the kernels run in interpret mode and
take no params. `tests/pallas_kernels/lowering_test.py` lowers every kernel
for `cuda` on a CPU machine, so a wrong backend or an illegal block shape
fails in CI rather than on a user's GPU.
"""

from jax.experimental.pallas import triton as plt


def compiler_params(
  interpret: bool, *, num_warps: int = 4, num_stages: int = 3
):
  """Triton compiler params for a compiled call; None in interpret mode."""
  if interpret:
    return None
  return plt.CompilerParams(num_warps=num_warps, num_stages=num_stages)
