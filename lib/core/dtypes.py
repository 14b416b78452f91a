"""The dtype policy for kernels that have no half-precision version.

XLA's FFT, jnp.linalg's factorisations and solves (LAPACK on CPU) and
jax.scipy.special.ndtr take float32 and float64 only. A bfloat16/float16
input to such a step runs in float32 and, where the step returns a field or
a matrix the caller owns, comes back in the input's dtype. float32 and
float64 inputs run as they are. `lib.pde.derivatives`, `lib.pde.generators`,
`lib.flows`, `lib.continual` and `lib.alignment.dpo` follow it.
"""

import jax.numpy as jnp


def compute_dtype(dtype) -> jnp.dtype:
  """The dtype to run an FFT, LAPACK or ndtr step in: at least float32.

  bfloat16/float16 -> float32; float32 and float64 unchanged; an integer
  dtype maps to float32 as jnp's promotion with float32 does.
  """
  return jnp.promote_types(dtype, jnp.float32)


def is_half(dtype) -> bool:
  """True for a floating dtype narrower than float32 (bfloat16, float16)."""
  dtype = jnp.dtype(dtype)
  return jnp.issubdtype(dtype, jnp.floating) and dtype.itemsize < 4
