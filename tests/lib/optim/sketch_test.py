"""Linear sketches: transpose pairs, linearity, unbiasedness, 1/sqrt(b) error.

Oracles: the dense Walsh-Hadamard matrix (scipy), the explicit matrix of each
sketch, and the spec's Monte-Carlo bands (optim_papers.md E.B).
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.linalg

from lib.core.errors import ConfigError
from lib.core.errors import ShapeError
from lib.optim import sketch

COMPRESSING = ("srht", "gaussian", "countsketch")


def _matrix(fn, n_in):
  """Dense matrix of a linear map on R^n_in (columns = images of e_i)."""
  return np.asarray(jax.vmap(fn, in_axes=1, out_axes=1)(jnp.eye(n_in)))


def test_fwht_matches_dense_hadamard():
  with jax.enable_x64(True):
    x = np.random.default_rng(0).normal(size=(3, 64))
    h = scipy.linalg.hadamard(64) / 8.0
    np.testing.assert_allclose(
      jax.jit(sketch.fwht)(jnp.asarray(x)), x @ h.T, atol=1e-12
    )


@pytest.mark.parametrize("kind", COMPRESSING + ("identity",))
def test_desketch_is_transpose_and_linear(kind):
  d, b = 100, (100 if kind == "identity" else 16)  # d=100 pads SRHT to 128
  sk, desk = map(
    jax.jit, sketch.make_sketch(jax.random.key(1), d, b, kind=kind)
  )
  r = _matrix(sk, d)
  assert r.shape == (b, d)
  np.testing.assert_allclose(_matrix(desk, b), r.T, atol=1e-6)
  rng = np.random.default_rng(0)
  deltas = rng.normal(size=(5, d)).astype(np.float32)  # five clients
  # Mean of client sketches == sketch of the mean delta (what pmean relies on).
  mean_of_sketches = jnp.mean(jax.vmap(sk)(jnp.asarray(deltas)), axis=0)
  np.testing.assert_allclose(
    mean_of_sketches, sk(jnp.asarray(deltas.mean(0))), atol=1e-5
  )
  np.testing.assert_allclose(
    sk(jnp.asarray(deltas[0])), r @ deltas[0], atol=1e-4
  )


def test_identity_is_exact():
  sk, desk = sketch.make_sketch(jax.random.key(0), 7, 7, kind="identity")
  v = jnp.arange(7.0)
  np.testing.assert_array_equal(desk(sk(v)), v)


def test_same_key_same_sketch_fresh_key_new_sketch():
  v = jnp.asarray(np.random.default_rng(0).normal(size=300), jnp.float32)
  apply = jax.jit(lambda key, v: sketch.make_sketch(key, 300, 32)[0](v))
  a = apply(jax.random.key(3), v)
  b = apply(jax.random.key(3), v)
  c = apply(jax.random.key(4), v)
  np.testing.assert_array_equal(a, b)
  assert not np.allclose(a, c)


@functools.partial(jax.jit, static_argnames=("d", "b", "kind", "draws"))
def _unbiased_rel_error(v, *, d, b, kind, draws):
  def one(key):
    sk, desk = sketch.make_sketch(key, d, b, kind=kind)
    return desk(sk(v))

  keys = jax.random.split(jax.random.key(11), draws)
  mean = jnp.mean(jax.lax.map(one, keys), axis=0)
  return jnp.linalg.norm(mean - v) / jnp.linalg.norm(v)


@pytest.mark.parametrize(
  "kind,d",
  [
    ("srht", 3000),
    ("gaussian", 2**12),
    ("countsketch", 2**14),
  ],
)
def test_unbiased_mc_error_scales_as_sqrt_d_over_draws_b(kind, d):
  # E[R^T R v] = v, so the MC mean over n draws has relative error about
  # sqrt(d / (n b)) (spec E.B band [0.8, 1.25]); a biased sketch would
  # plateau at its bias instead. d=3000 exercises the padding to 4096.
  b, draws = 64, 200
  v = jnp.asarray(np.random.default_rng(0).normal(size=d), jnp.float32)
  err = float(_unbiased_rel_error(v, d=d, b=b, kind=kind, draws=draws))
  ratio = err / np.sqrt(d / (draws * b))
  assert 0.8 <= ratio <= 1.25, (kind, d, err, ratio)


@functools.partial(jax.jit, static_argnames=("d", "b", "kind", "draws"))
def _inner_product_errors(v, h, *, d, b, kind, draws):
  def one(key):
    sk, _ = sketch.make_sketch(key, d, b, kind=kind)
    return jnp.dot(sk(v), sk(h)) - jnp.dot(v, h)  # <R^T R v, h> - <v, h>

  return jax.lax.map(one, jax.random.split(jax.random.key(5), draws))


@pytest.mark.parametrize("b", [64, 256, 1024])
def test_inner_product_error_scales_as_one_over_sqrt_b(b):
  # Property 3: |<R^T R v, h> - <v, h>| ~ ||v|| ||h|| / sqrt(b); spec E.B band
  # [0.8, 1.3] for std * sqrt(b) / (||v|| ||h||) at d = 2^14.
  d = 2**14
  rng = np.random.default_rng(1)
  v, h = (jnp.asarray(rng.normal(size=d), jnp.float32) for _ in range(2))
  errs = np.asarray(
    _inner_product_errors(v, h, d=d, b=b, kind="srht", draws=200)
  )
  scaled = (
    errs.std() * np.sqrt(b) / float(jnp.linalg.norm(v) * jnp.linalg.norm(h))
  )
  assert 0.8 <= scaled <= 1.3, (b, scaled)


def test_tree_sketch_flattens_once_in_ravel_order():
  tree = {"w": jnp.ones((4, 5)), "b": jnp.arange(3.0)}
  key = jax.random.key(2)
  tree_sk, tree_desk = map(jax.jit, sketch.make_tree_sketch(key, tree, 8))
  sk, desk = map(jax.jit, sketch.make_sketch(key, 23, 8))
  flat, _ = jax.flatten_util.ravel_pytree(tree)
  np.testing.assert_allclose(tree_sk(tree), sk(flat), atol=1e-6)
  back = tree_desk(tree_sk(tree))
  assert jax.tree.structure(back) == jax.tree.structure(tree)
  np.testing.assert_allclose(
    jax.flatten_util.ravel_pytree(back)[0], desk(sk(flat)), atol=1e-6
  )


def test_count_sketch_table_recovers_heavy_hitters():
  d = 5000
  rng = np.random.default_rng(0)
  v = 1e-3 * rng.normal(size=d)
  v[[7, 1234, 4321]] = [5.0, -3.0, 2.0]
  sk, estimate, hit = sketch.make_count_sketch_table(
    jax.random.key(0), d, 5, 200
  )
  est = np.asarray(estimate(sk(jnp.asarray(v, jnp.float32))))
  np.testing.assert_allclose(est[[7, 1234, 4321]], [5.0, -3.0, 2.0], atol=0.02)
  assert set(np.argsort(-np.abs(est))[:3]) == {7, 1234, 4321}
  mask = np.zeros(d, bool)
  mask[7] = True
  assert int(np.asarray(hit(jnp.asarray(mask))).sum()) == 5  # one per row


@pytest.mark.parametrize("rows", [1, 2, 3, 4, 5, 7])
def test_median_of_rows_is_numpy_median(rows):
  rng = np.random.default_rng(rows)
  x = rng.normal(size=(rows, 257)).astype(np.float32)
  x[:, :5] = 1.0  # ties
  got = np.asarray(sketch.median_of_rows(jnp.asarray(x)))
  np.testing.assert_allclose(got, np.median(x, axis=0), rtol=1e-7)
  x[rows // 2, 10] = np.nan  # a NaN makes that column's median NaN
  got = np.asarray(sketch.median_of_rows(jnp.asarray(x)))
  assert np.isnan(got[10]) and np.isfinite(np.delete(got, 10)).all()


@pytest.mark.parametrize("kind", COMPRESSING)
def test_sketch_size_not_below_dimension_is_an_error(kind):
  for b in (64, 100):
    with pytest.raises(ConfigError, match="smaller than the dimension"):
      sketch.make_sketch(jax.random.key(0), 64, b, kind=kind)


def test_bad_arguments_are_clear_errors():
  with pytest.raises(ConfigError, match="unknown sketch kind"):
    sketch.make_sketch(jax.random.key(0), 64, 8, kind="fft")
  with pytest.raises(ConfigError, match="identity sketch needs b == d"):
    sketch.make_sketch(jax.random.key(0), 64, 8, kind="identity")
  with pytest.raises(ConfigError, match="positive int"):
    sketch.make_sketch(jax.random.key(0), 64, 0)
  sk, desk = sketch.make_sketch(jax.random.key(0), 64, 8)
  with pytest.raises(ShapeError, match=r"shape \(64,\)"):
    sk(jnp.ones(63))
  with pytest.raises(ShapeError, match=r"shape \(8,\)"):
    desk(jnp.ones(9))
  with pytest.raises(ShapeError, match="power-of-two"):
    sketch.fwht(jnp.ones(12))
  with pytest.raises(ConfigError, match="smaller than the dimension"):
    sketch.make_count_sketch_table(jax.random.key(0), 30, 3, 10)
