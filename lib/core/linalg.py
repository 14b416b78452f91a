"""Dense linear algebra that stays safe inside vmapped sweeps on CPU.

Under `jax.vmap` (a sweep of R learners, `lib.train.run_sweep`) each
`jnp.linalg` solver becomes one batched LAPACK call. jaxlib's batched CPU
kernels split a large batch over XLA's intra-op thread pool, and inside a
while loop (an EM or a fixed-point iteration inside a training scan) that
split can deadlock when the loop already holds every pool thread: the
compact-memory smoke test hung at 0 % CPU in the sweep's PPCA-EM and in its
fixed-point diagnostics. The functions here are the `jnp.linalg` ones for one
matrix; under vmap they make one LAPACK call per matrix, in a loop
(`jax.custom_batching.sequential_vmap`): the same per-matrix numbers, and no
thread split.

Use them where a factorisation sits inside a loop that a sweep vmaps
(`lib.continual.memory`); elsewhere plain `jnp.linalg` is the faster choice.
"""

import jax
import jax.numpy as jnp

inv = jax.custom_batching.sequential_vmap(jnp.linalg.inv)
inv.__doc__ = (
  "jnp.linalg.inv of one [n, n] matrix; one LAPACK call per matrix under vmap."
)

solve = jax.custom_batching.sequential_vmap(jnp.linalg.solve)
solve.__doc__ = "jnp.linalg.solve(a [n, n], b [n] or [n, k]); one LAPACK call per matrix under vmap."


@jax.custom_batching.sequential_vmap
def eigh(a: jax.Array):
  """(eigenvalues ascending, eigenvectors) of one symmetric [n, n] matrix."""
  return jnp.linalg.eigh(a)


@jax.custom_batching.sequential_vmap
def spectral_norm(a: jax.Array) -> jax.Array:
  """The largest singular value of one [m, n] matrix (`norm(a, ord=2)`)."""
  return jnp.linalg.norm(a, ord=2)
