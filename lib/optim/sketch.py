"""Linear sketches for communication compression.

A sketch is a random linear map R: R^d -> R^b (b < d) with E[R^T R] = I, so
`desketch(sketch(v))` is an unbiased estimate of v and the average of client
sketches is the sketch of the average (linearity). `make_sketch` returns the
pair of closures (sk, desk) = (v -> R v, u -> R^T u); all randomness is derived
from the key inside the closures, so they are cheap to build inside `jit` and
every client that holds the same key builds the same R.

Kinds:
  * "srht": subsampled randomized Hadamard transform, R = sqrt(n/b) P H D, with
    d padded to n = 2^ceil(log2 d), H the orthonormal Walsh-Hadamard matrix
    (applied in O(n log n) by the butterfly), D random signs and P b rows
    sampled uniformly *with replacement*.
  * "gaussian": R_ij ~ N(0, 1/b) (materialises b x d; small problems only).
  * "countsketch": one hash h(j) in [b] and one sign s(j) per coordinate.
  * "identity": R = I (b must equal d); the uncompressed baseline.

`make_count_sketch_table` is the multi-row CountSketch with median recovery
used by FetchSGD (not unbiased; used for heavy-hitter recovery).

References:
  Chen, Li, Banerjee. "Sketched Adaptive Distributed Deep Learning: A Sharp
  Convergence Analysis", NeurIPS 2025 (Property 3, Alg. 1-2).
  Rothchild et al. "FetchSGD: Communication-Efficient Federated Learning with
  Sketching", ICML 2020 (count-sketch tables).
"""

import math
from collections.abc import Callable

import jax
import jax.numpy as jnp
from jax.flatten_util import ravel_pytree

from lib.core.errors import ConfigError
from lib.core.errors import ShapeError

SKETCH_KINDS = ("srht", "gaussian", "countsketch", "identity")

Sketch = Callable[[jax.Array], jax.Array]


def check_sizes(d: int, b: int, kind: str) -> None:
  """Raises ConfigError, naming the value, unless `make_sketch(key, d, b,
  kind=kind)` can build its sketch (a known kind, b < d; b == d for
  "identity")."""
  if kind not in SKETCH_KINDS:
    raise ConfigError(
      f"unknown sketch kind {kind!r}; expected one of {SKETCH_KINDS}"
    )
  if int(d) != d or d < 1:
    raise ConfigError(f"sketch dimension d must be a positive int, got {d}")
  if int(b) != b or b < 1:
    raise ConfigError(f"sketch size b must be a positive int, got {b}")
  if kind == "identity":
    if b != d:
      raise ConfigError(
        f"identity sketch needs b == d, got b={b}, d={d} (it does not compress)"
      )
  elif b >= d:
    raise ConfigError(
      f"sketch size b={b} must be smaller than the dimension d={d}: a "
      f"{kind} sketch with b >= d sends more than the vector itself; use "
      "kind='identity' for the uncompressed baseline"
    )


def _check_vector(v: jax.Array, n: int, what: str) -> None:
  if v.shape != (n,):
    raise ShapeError(f"{what} expects a vector of shape ({n},), got {v.shape}")


def fwht(x: jax.Array) -> jax.Array:
  """Orthonormal fast Walsh-Hadamard transform along the last axis.

  The length must be a power of two. The butterfly runs log2(n) levels; each
  level views the vector as (blocks, 2, h) and maps (a, c) -> (a + c, a - c),
  which is the Sylvester-ordered Hadamard matrix. H/sqrt(n) is symmetric and
  orthogonal, so this function is its own inverse and transpose.

  Args:
    x: (..., n) array, n a power of two.

  Returns:
    (..., n) array H x / sqrt(n).
  """
  n = x.shape[-1]
  if n & (n - 1):
    raise ShapeError(f"fwht needs a power-of-two length, got {n}")
  lead = x.shape[:-1]
  y = x
  h = 1
  while h < n:  # log2(n) trace-time levels, not a runtime loop.
    y = y.reshape(*lead, n // (2 * h), 2, h)
    a, c = y[..., 0, :], y[..., 1, :]
    y = jnp.stack([a + c, a - c], axis=-2)
    h *= 2
  return y.reshape(*lead, n) / jnp.sqrt(jnp.asarray(n, x.dtype))


def _srht(key: jax.Array, d: int, b: int) -> tuple[Sketch, Sketch]:
  n = 1 << max(0, math.ceil(math.log2(d)))
  sign_key, row_key = jax.random.split(key)

  def parts(dtype):
    signs = jax.random.rademacher(sign_key, (n,), dtype)
    rows = jax.random.randint(row_key, (b,), 0, n)  # with replacement
    # sqrt(n/b) * (H/sqrt(n)) rows: E[P^T P] = (b/n) I, so E[R^T R] = I.
    scale = jnp.sqrt(jnp.asarray(n / b, dtype))
    return signs, rows, scale

  def sk(v):
    _check_vector(v, d, "srht sketch")
    signs, rows, scale = parts(v.dtype)
    z = fwht(jnp.pad(v, (0, n - d)) * signs)
    return scale * z[rows]

  def desk(u):
    _check_vector(u, b, "srht desketch")
    signs, rows, scale = parts(u.dtype)
    z = jnp.zeros((n,), u.dtype).at[rows].add(u)
    return (scale * signs * fwht(z))[:d]

  return sk, desk


def _gaussian(key: jax.Array, d: int, b: int) -> tuple[Sketch, Sketch]:
  def matrix(dtype):
    return jax.random.normal(key, (b, d), dtype) / jnp.sqrt(
      jnp.asarray(b, dtype)
    )

  hi = jax.lax.Precision.HIGHEST  # TF32 on GPUs would break unbiasedness tests.

  def sk(v):
    _check_vector(v, d, "gaussian sketch")
    return jnp.matmul(matrix(v.dtype), v, precision=hi)

  def desk(u):
    _check_vector(u, b, "gaussian desketch")
    return jnp.matmul(matrix(u.dtype).T, u, precision=hi)

  return sk, desk


def _countsketch(key: jax.Array, d: int, b: int) -> tuple[Sketch, Sketch]:
  hash_key, sign_key = jax.random.split(key)

  def parts(dtype):
    buckets = jax.random.randint(hash_key, (d,), 0, b)
    signs = jax.random.rademacher(sign_key, (d,), dtype)
    return buckets, signs

  def sk(v):
    _check_vector(v, d, "countsketch sketch")
    buckets, signs = parts(v.dtype)
    return jnp.zeros((b,), v.dtype).at[buckets].add(signs * v)

  def desk(u):
    _check_vector(u, b, "countsketch desketch")
    buckets, signs = parts(u.dtype)
    return signs * u[buckets]

  return sk, desk


def _identity(key: jax.Array, d: int, b: int) -> tuple[Sketch, Sketch]:
  del key, b

  def sk(v):
    _check_vector(v, d, "identity sketch")
    return v

  def desk(u):
    _check_vector(u, d, "identity desketch")
    return u

  return sk, desk


_MAKERS = {
  "srht": _srht,
  "gaussian": _gaussian,
  "countsketch": _countsketch,
  "identity": _identity,
}


def make_sketch(
  key: jax.Array, d: int, b: int, *, kind: str = "srht"
) -> tuple[Sketch, Sketch]:
  """Builds a linear sketch R in R^{b x d} with E[R^T R] = I.

  Args:
    key: PRNG key; the same key gives the same R (shared by all clients).
    d: dimension of the vectors to sketch.
    b: sketch size; must be < d (== d for kind="identity").
    kind: one of "srht", "gaussian", "countsketch", "identity".

  Returns:
    (sketch, desketch): sketch maps a (d,) vector to (b,), desketch maps (b,)
    to (d,) and is the transpose of sketch.

  Raises:
    ConfigError: unknown kind, or b >= d for a compressing sketch.
  """
  check_sizes(d, b, kind)
  return _MAKERS[kind](key, int(d), int(b))


def make_tree_sketch(
  key: jax.Array, tree, b: int, *, kind: str = "srht"
) -> tuple[Callable, Callable]:
  """`make_sketch` on whole pytrees: flattens once into one vector.

  Args:
    key: PRNG key.
    tree: example pytree (arrays or ShapeDtypeStructs) fixing the structure.
    b: sketch size (< total number of elements).
    kind: sketch kind, see `make_sketch`.

  Returns:
    (sketch, desketch): sketch maps a pytree like `tree` to a (b,) vector,
    desketch maps a (b,) vector back to a pytree like `tree`.
  """
  example = jax.tree.map(lambda x: jnp.zeros(x.shape, x.dtype), tree)
  flat, unravel = ravel_pytree(example)
  sk, desk = make_sketch(key, flat.size, b, kind=kind)

  def tree_sk(t):
    return sk(ravel_pytree(t)[0])

  def tree_desk(u):
    return unravel(desk(u))

  return tree_sk, tree_desk


def median_of_rows(x: jax.Array) -> jax.Array:
  """Median over the (small, static) leading axis, as `jnp.median(x, axis=0)`.

  A compare-exchange sorting network over the rows (min/max only), unrolled at
  trace time: XLA's CPU sort, which `jnp.median` lowers to, is ~40x slower on a
  (3, 65536) table, and the median is FetchSGD's per-round recovery step. An
  even row count averages the two middle values, as `jnp.median` does; a NaN
  in a column makes that column's median NaN.
  """
  rows = [x[i] for i in range(x.shape[0])]
  r = len(rows)
  for i in range(r):  # bubble network: r (r - 1) / 2 compare-exchanges
    for j in range(r - 1 - i):
      lo, hi = (
        jnp.minimum(rows[j], rows[j + 1]),
        jnp.maximum(rows[j], rows[j + 1]),
      )
      rows[j], rows[j + 1] = lo, hi
  if r % 2:
    return rows[r // 2]
  return (rows[r // 2 - 1] + rows[r // 2]) / 2


def make_count_sketch_table(
  key: jax.Array, d: int, rows: int, cols: int
) -> tuple[Callable, Callable, Callable]:
  """Multi-row CountSketch table with median recovery (FetchSGD).

  Args:
    key: PRNG key (FetchSGD keeps one fixed table for the whole run, because
      momentum and error feedback accumulate in sketch space).
    d: vector dimension.
    rows: number of independent hash rows.
    cols: buckets per row; rows * cols must be < d.

  Returns:
    (sketch, estimate, buckets_hit): sketch maps (d,) -> (rows, cols);
    estimate maps a table to the (d,) median-of-rows coordinate estimate;
    buckets_hit maps a boolean (d,) support mask to the (rows, cols) mask of
    the buckets it touches.
  """
  if rows < 1 or cols < 1:
    raise ConfigError(f"count-sketch table needs rows, cols >= 1, got {rows=}")
  if rows * cols >= d:
    raise ConfigError(
      f"count-sketch table of {rows}x{cols}={rows * cols} cells must be "
      f"smaller than the dimension d={d}"
    )
  hash_key, sign_key = jax.random.split(key)
  row_ids = jnp.arange(rows)[:, None]

  def parts(dtype):
    buckets = jax.random.randint(hash_key, (rows, d), 0, cols)
    signs = jax.random.rademacher(sign_key, (rows, d), dtype)
    return buckets, signs

  def sketch(v):
    _check_vector(v, d, "count-sketch table")
    buckets, signs = parts(v.dtype)
    table = jnp.zeros((rows, cols), v.dtype)
    return table.at[row_ids, buckets].add(signs * v[None, :])

  def estimate(table):
    if table.shape != (rows, cols):
      raise ShapeError(f"expected a ({rows}, {cols}) table, got {table.shape}")
    buckets, signs = parts(table.dtype)
    return median_of_rows(signs * table[row_ids, buckets])

  def buckets_hit(mask):
    buckets, _ = parts(jnp.float32)
    hits = jnp.zeros((rows, cols), jnp.int32)
    hits = hits.at[row_ids, buckets].add(mask[None, :].astype(jnp.int32))
    return hits > 0

  return sketch, estimate, buckets_hit
