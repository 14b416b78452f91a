"""lib.core.linalg under vmap against float64 numpy per matrix."""

import jax
import jax.numpy as jnp
import numpy as np

from lib.core import linalg


def _batch(seed, r=3, n=5):
  a = np.random.default_rng(seed).normal(size=(r, n, n))
  return a + n * np.eye(n)  # well conditioned


def test_inv_and_solve_under_vmap_match_numpy():
  a = _batch(0)
  b = np.random.default_rng(1).normal(size=(3, 5, 2))
  inv = jax.jit(jax.vmap(linalg.inv))(jnp.asarray(a, jnp.float32))
  x = jax.jit(jax.vmap(linalg.solve))(
    jnp.asarray(a, jnp.float32), jnp.asarray(b, jnp.float32)
  )
  np.testing.assert_allclose(inv, np.linalg.inv(a), rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(x, np.linalg.solve(a, b), rtol=1e-5, atol=1e-6)


def test_eigh_and_spectral_norm_under_vmap_match_numpy():
  a = _batch(2)
  sym = a @ np.swapaxes(a, 1, 2)
  lam, vecs = jax.vmap(linalg.eigh)(jnp.asarray(sym, jnp.float32))
  np.testing.assert_allclose(lam, np.linalg.eigvalsh(sym), rtol=1e-5)
  # Eigenvectors up to sign: V diag(lam) V^T rebuilds the matrix.
  rebuilt = np.einsum("rij,rj,rkj->rik", vecs, lam, vecs)
  np.testing.assert_allclose(rebuilt, sym, rtol=1e-4, atol=1e-3)
  norms = jax.vmap(linalg.spectral_norm)(jnp.asarray(a[:, :, :3], jnp.float32))
  expect = np.linalg.svd(a[:, :, :3], compute_uv=False)[:, 0]
  np.testing.assert_allclose(norms, expect, rtol=1e-5)


def test_safe_sqrt_is_sqrt_with_a_zero_derivative_at_zero():
  x = jnp.concatenate(
    [
      jnp.array([0.0, 1e-30, 4.0, jnp.inf, jnp.nan]),
      jax.random.uniform(jax.random.key(0), (64,)) * 100,
    ]
  )
  np.testing.assert_array_equal(linalg.safe_sqrt(x), jnp.sqrt(x))
  grad = jax.vmap(jax.grad(linalg.safe_sqrt))(x)
  assert grad[0] == 0.0  # jnp.sqrt's is inf, and NaN through a square
  np.testing.assert_allclose(grad[2:4], [0.25, 0.0])
  np.testing.assert_allclose(grad[5:], 0.5 / np.sqrt(np.asarray(x[5:])))
  norm = lambda v: linalg.safe_sqrt(jnp.sum(v**2))
  np.testing.assert_array_equal(jax.grad(norm)(jnp.zeros(3)), np.zeros(3))
  np.testing.assert_allclose(jax.grad(norm)(jnp.array([3.0, 4.0])), [0.6, 0.8])
