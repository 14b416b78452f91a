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

`safe_sqrt` is the square root of a norm that stays differentiable at 0
(`lib.core.tree.l2_norm`, `lib.pde.metrics`).
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


@jax.custom_jvp
def safe_sqrt(x: jax.Array) -> jax.Array:
  """sqrt(x) with derivative 0 at x == 0, for norms sqrt(sum of squares).

  sqrt's derivative is infinite at 0, and the chain rule multiplies it by
  the zero derivative of a sum of squares: NaN. The value is jnp.sqrt's, op
  for op (NaN and inf included); the derivative is 0.5 / sqrt(x) elsewhere
  and 0 at 0, the minimum-norm subgradient of a norm at the origin.
  """
  return jnp.sqrt(x)


@safe_sqrt.defjvp
def _safe_sqrt_jvp(primals, tangents):
  (x,), (g,) = primals, tangents
  # The safe argument goes inside: 0.5 / sqrt(inf) = 0. A 0 selected after
  # g * inf would still send 0 * inf = NaN back through the transpose.
  safe = jnp.where(x == 0, jnp.inf, x)
  return jnp.sqrt(x), g * (0.5 / jnp.sqrt(safe))
