"""Spec oracles 3 and 4: PPCA-EM is Hessian matching; memory bookkeeping (float64).

Jung et al., "How to Train Your Compact Memory", NeurIPS 2025.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lib import continual


@pytest.fixture(autouse=True)
def _x64():
  with jax.enable_x64(True):
    yield


def _planted(spectrum, n=30, seed=0):
  """Columns X [d, n] whose scatter X X^T has the given eigenvalues."""
  r = np.random.default_rng(seed)
  d = len(spectrum)
  q, _ = np.linalg.qr(r.normal(size=(d, d)))
  z, _ = np.linalg.qr(r.normal(size=(n, d)))  # orthonormal columns [n, d]
  return q @ np.diag(np.sqrt(spectrum)) @ z.T, r


def _em(x, k, noise, jitter, iters, r, w0=None):
  step = jax.jit(
    lambda w: continual.ppca_em_step(w, jnp.asarray(x), noise, jitter)
  )
  w = jnp.asarray(r.normal(size=(x.shape[0], k)) if w0 is None else w0)
  for _ in range(iters):
    w = step(w)
  return np.asarray(w @ w.T)


def _top(x, k):
  lam, vec = np.linalg.eigh(x @ x.T)
  return lam[::-1][:k], vec[:, ::-1][:, :k]


@pytest.mark.parametrize("jitter, tol", [(1e-6, 1e-4), (0.0, 1e-9)])
def test_ppca_em_fixed_point_is_truncated_scatter(jitter, tol):
  """Oracle 3: beta fixed, 500 EM steps: W W^T = U_K (Lambda_K - s2) U_K^T.

  Scatter eigenvalues 3, 2, 1.5, then a gap to <= 0.05; sigma^2 = 0.1. The
  code's 1e-6 jitter moves the fixed point by ~ jitter * lambda / sigma^2
  (3e-5 here, see the next test), inside the spec's 1e-4.
  """
  k, noise = 3, 0.1
  x, r = _planted([3.0, 2.0, 1.5, 0.05, 0.03, 0.02, 0.01, 0.005])
  lam, vec = _top(x, k)
  target = vec @ np.diag(lam - noise) @ vec.T
  got = _em(x, k, noise, jitter, 500, r)
  rel = np.linalg.norm(got - target) / np.linalg.norm(target)
  assert rel < tol, rel
  # The textbook (sample-covariance) EM would converge to Lambda / n instead.
  wrong = vec @ np.diag(lam / x.shape[1] - noise) @ vec.T
  assert np.linalg.norm(got - wrong) / np.linalg.norm(target) > 0.5


def test_jitter_shrinks_large_eigenvalues():
  """Our finding: with the code's jitter eps, the fixed point's eigenvalue a
  solves eps s^2 + sigma^2 s = sigma^2 lambda with s = a + sigma^2 (the
  M-step in the eigenbasis), not a = lambda - sigma^2. With eps lambda /
  sigma^2 = O(1) the matched Hessian is visibly shrunk. EM creeps at a rate
  ~ sigma^2 / lambda here, so we check the fixed point itself: EM stays at
  the predicted W and walks away from the jitter-free one."""
  k, noise, eps = 2, 0.01, 1e-6
  x, r = _planted([3e4, 1e4, 1.0, 0.5, 0.1], seed=1)
  lam, vec = _top(x, k)
  s = (-noise + np.sqrt(noise**2 + 4 * eps * noise * lam)) / (2 * eps)
  rot, _ = np.linalg.qr(r.normal(size=(k, k)))
  for a, moves in ((s - noise, False), (lam - noise, True)):
    w0 = vec @ np.diag(np.sqrt(a)) @ rot
    got = _em(x, k, noise, eps, 20, r, w0)
    rel = np.linalg.norm(got - w0 @ w0.T) / np.linalg.norm(w0 @ w0.T)
    assert (rel > 1e-5) if moves else (rel < 1e-9), (a, rel)
  assert (s - noise)[0] < 0.7 * lam[0]  # a real shrink, not a rounding


def test_memory_bookkeeping_over_tasks():
  """Oracle 4: after t tasks, t * K_new unit vectors with positive weights."""
  r = np.random.default_rng(1)
  d, c, k_new = 6, 4, 3
  memory = continual.empty_memory(d, jnp.float64)
  update = jax.jit(continual.update_memory, static_argnames=("iters",))
  for t in range(1, 4):
    theta = jnp.asarray(r.normal(size=(d, c)))
    x = jnp.asarray(continual.add_bias(r.normal(size=(50, d - 1))))
    init = x[
      np.asarray(continual.select_balanced(r, r.integers(0, c, 50), k_new))
    ]
    memory = update(theta, x, memory, init, iters=20)
    assert memory.u.shape == (t * k_new, d)
    assert memory.w.shape == (t * k_new,)
    np.testing.assert_allclose(
      jnp.linalg.norm(memory.u, axis=1), 1.0, atol=1e-12
    )
    assert bool(jnp.all(memory.w > 0))
    assert bool(jnp.all(jnp.isfinite(memory.u)))


def test_memory_matches_hessian_of_a_single_task():
  """End to end through `update_memory` (beta re-evaluated at every u): with
  K = d, no jitter and sigma^2 well below the Hessian's spectrum, the fixed
  point is sum_k w_k beta(u_k) u_k u_k^T = sum_i beta_i x_i x_i^T - sigma^2 I."""
  r = np.random.default_rng(2)
  d, c, k, noise = 4, 3, 4, 0.05
  theta = jnp.asarray(r.normal(size=(d, c)))
  x = jnp.asarray(r.normal(size=(12, d)))
  mem = jax.jit(continual.update_memory, static_argnames=("iters",))(
    theta,
    x,
    continual.empty_memory(d, jnp.float64),
    x[:k],
    iters=3000,
    noise=noise,
    jitter=0.0,
  )
  b_x = continual.beta(theta, x)
  target = (x * b_x[:, None]).T @ x - noise * jnp.eye(d)
  assert float(jnp.linalg.eigvalsh(target)[0]) > 10 * noise  # a clear case
  b_u = continual.beta(theta, mem.u)
  approx = (mem.u * (mem.w * b_u)[:, None]).T @ mem.u
  rel = float(jnp.linalg.norm(approx - target) / jnp.linalg.norm(target))
  assert rel < 1e-6, rel


def test_padding_slots_stay_empty():
  r = np.random.default_rng(3)
  d, c = 4, 2
  theta = jnp.asarray(r.normal(size=(d, c)))
  x = jnp.asarray(r.normal(size=(30, d)))
  init = x[:4]
  mem = continual.update_memory(
    theta,
    x,
    continual.empty_memory(d, jnp.float64),
    init,
    jnp.asarray([1.0, 1.0, 0.0, 0.0]),
    iters=10,
  )
  assert bool(jnp.all(mem.w[2:] == 0)) and bool(jnp.all(mem.w[:2] > 0))
  # An update with two padding slots equals one without them.
  mem2 = continual.update_memory(
    theta, x, continual.empty_memory(d, jnp.float64), init[:2], iters=10
  )
  np.testing.assert_allclose(mem.u[:2], mem2.u, atol=1e-10)
  np.testing.assert_allclose(mem.w[:2], mem2.w, rtol=1e-10)


def test_select_balanced_counts():
  r = np.random.default_rng(4)
  y = np.repeat([3, 7], 20)
  for k in (2, 5, 10):
    idx = continual.select_balanced(r, y, k)
    assert len(idx) == len(set(idx)) == k
    counts = np.bincount(y[idx], minlength=8)[[3, 7]]
    assert abs(int(counts[0]) - int(counts[1])) <= 1


def test_fixed_point_gap_on_planted_memories():
  """Analytic cases: C = diag(9, 4, 1, .25, .01), sigma^2 = .01, K = 2.

  The fixed point is diag(8.99, 3.99, 0, 0, 0): any rotation of its square
  root has gap (0, 1, 0); twice it has scale 4 and error 3; a second vector
  tilted by phi from e_2 towards e_3 has largest principal angle phi.
  """
  lam, noise = np.array([9.0, 4.0, 1.0, 0.25, 0.01]), 0.01
  obs = np.diag(np.sqrt(lam))  # rows sqrt(lam_i) e_i
  scatter = jnp.asarray(obs.T @ obs)
  root = np.diag(np.sqrt(lam[:2] - noise)) @ np.eye(5)[:2]  # [2, d]
  c, s = np.cos(0.3), np.sin(0.3)
  rotated = np.array([[c, -s], [s, c]]) @ root
  pad = np.zeros((3, 5))  # empty slots do not count towards K
  gap = continual.fixed_point_gap(
    scatter, jnp.asarray(np.r_[rotated, pad]), noise
  )
  np.testing.assert_allclose(gap, (0.0, 1.0, 0.0), atol=1e-12)
  gap = continual.fixed_point_gap(scatter, jnp.asarray(2 * rotated), noise)
  np.testing.assert_allclose(gap, (0.0, 4.0, 3.0), atol=1e-12)
  phi = 1e-3
  tilted = np.array([[1.0, 0, 0, 0, 0], [0, np.cos(phi), np.sin(phi), 0, 0]])
  gap = continual.fixed_point_gap(scatter, jnp.asarray(tilted), noise)
  np.testing.assert_allclose(gap.max_angle, phi, rtol=1e-9)
  np.testing.assert_allclose(gap.scale, 2.0 / (8.99 + 3.99), rtol=1e-12)


@pytest.mark.parametrize("clamp", ["probs", "memory"])
def test_beta_clamps(clamp):
  # theta makes p = (1 - 1e-6, 1e-6) on x_far: beta = 2 p (1 - p) ~ 2e-6.
  theta = jnp.asarray([[0.0, 0.0], [np.log(1e6) / 2, -np.log(1e6) / 2]])
  x_far = jnp.asarray([[0.0, 1.0]])
  raw = 2 * 1e-6 * (1 - 1e-6) / (1 + 1e-6) ** 2
  clipped = 2 * 1e-4 * (1 - 1e-4)
  data = continual.data_beta(theta, x_far, 1e-4, clamp)
  mem = continual.memory_beta(theta, x_far, 1e-4, clamp)
  if clamp == "probs":  # Split-CIFAR script: p clipped for every row
    np.testing.assert_allclose([data[0], mem[0]], [clipped, clipped])
  else:  # four-moons notebook: only the memory's beta, floored at 1e-4
    np.testing.assert_allclose([data[0], mem[0]], [raw, 1e-4], rtol=1e-6)


def test_bfloat16_memory_updates_run_in_float32():
  # The EM's inverse/solve and eigh have no bfloat16 kernel: update_memory
  # and eigen_memory raised NotImplementedError('Unsupported dtype').
  rng = np.random.default_rng(0)
  x = jnp.asarray(rng.standard_normal((4, 30)), jnp.bfloat16)  # [d, N]
  w = jnp.asarray(rng.standard_normal((4, 2)), jnp.bfloat16)
  noise, jitter = 1e-2, 1e-6
  got = continual.ppca_em_step(w, x, noise, jitter)
  assert got.dtype == jnp.bfloat16
  # The module docstring's step in float64 on the same rounded inputs.
  w64, x64 = np.asarray(w, np.float64), np.asarray(x, np.float64)
  s_inv = np.linalg.inv(w64.T @ w64 / noise + np.eye(2))
  m = s_inv @ w64.T @ x64 / noise
  want = (x64 @ m.T) @ np.linalg.inv(s_inv + m @ m.T + jitter * np.eye(2))
  np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=2e-2)
  phi = jnp.asarray(rng.standard_normal((30, 4)), jnp.bfloat16)
  memory = continual.eigen_memory(phi)
  assert memory.u.dtype == memory.w.dtype == jnp.bfloat16
  u, wts = np.asarray(memory.u, np.float64), np.asarray(memory.w, np.float64)
  gram = np.asarray(phi, np.float64).T @ np.asarray(phi, np.float64)
  np.testing.assert_allclose((u.T * wts) @ u, gram, atol=0.05 * gram.max())
