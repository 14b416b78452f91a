"""Spec oracles 1, 2 and 4 of the compact-memory paper (float64).

Jung et al., "How to Train Your Compact Memory", NeurIPS 2025; spec
../shared/specs/extended_papers.md section 2.
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


def _newton(loss, theta0, iters=30):
  """Exact Newton on a smooth convex loss of a flat or [d, C] parameter."""
  shape = theta0.shape
  flat = lambda v: loss(v.reshape(shape))
  g, h = jax.jit(jax.grad(flat)), jax.jit(jax.hessian(flat))
  v = theta0.reshape(-1)
  for _ in range(iters):
    v = v - jnp.linalg.solve(h(v), g(v))
  return v.reshape(shape), float(jnp.max(jnp.abs(g(v))))


def test_linear_eigen_memory_gives_batch_ridge():
  """Oracle 1: sequential ridge with the eigen-memory K-prior = batch ridge."""
  r = np.random.default_rng(0)
  d, delta = 6, 0.3
  tasks = []
  for t in range(3):
    phi = r.normal(size=(4 + t, d)) + t  # 4-6 rows: each task rank-deficient
    tasks.append((jnp.asarray(phi), jnp.asarray(r.normal(size=len(phi)))))
  theta = jnp.zeros(d)
  past = np.zeros((0, d))
  memory = continual.empty_memory(d, jnp.float64)
  for phi, y in tasks:
    # Quadratic: one Newton step from anywhere is the closed-form solution.
    loss = lambda th, phi=phi, y=y, theta_old=theta, mem=memory: (
      0.5 * jnp.sum((phi @ th - y) ** 2)
      + continual.kprior_linear(th, theta_old, mem, delta)
    )
    theta, _ = _newton(loss, jnp.zeros(d), iters=1)
    past = np.concatenate([past, np.asarray(phi)])
    memory = continual.eigen_memory(jnp.asarray(past))
    assert memory.u.shape[0] == np.linalg.matrix_rank(past)
  phi_all = np.concatenate([np.asarray(p) for p, _ in tasks])
  y_all = np.concatenate([np.asarray(y) for _, y in tasks])
  ridge = np.linalg.solve(
    phi_all.T @ phi_all + delta * np.eye(d), phi_all.T @ y_all
  )
  np.testing.assert_allclose(theta, ridge, rtol=0, atol=1e-8)


def test_linear_memory_of_too_low_rank_is_not_exact():
  """Control for oracle 1: dropping one eigenvector breaks the identity."""
  r = np.random.default_rng(1)
  d, delta = 4, 0.1
  phi1, y1 = r.normal(size=(6, d)), r.normal(size=6)
  phi2, y2 = r.normal(size=(6, d)), r.normal(size=6)
  theta1 = np.linalg.solve(phi1.T @ phi1 + delta * np.eye(d), phi1.T @ y1)
  mem = continual.eigen_memory(jnp.asarray(phi1))
  mem = continual.Memory(mem.u[1:], mem.w[1:])  # drop the smallest
  loss = lambda th: (
    0.5 * jnp.sum((phi2 @ th - y2) ** 2)
    + continual.kprior_linear(th, jnp.asarray(theta1), mem, delta)
  )
  theta, _ = _newton(loss, jnp.zeros(d), iters=1)
  phi = np.concatenate([phi1, phi2])
  y = np.concatenate([y1, y2])
  ridge = np.linalg.solve(phi.T @ phi + delta * np.eye(d), phi.T @ y)
  assert np.max(np.abs(np.asarray(theta) - ridge)) > 1e-4


def test_logistic_full_memory_gives_batch_optimum():
  """Oracle 2: full memory (all past points, w = 1) = batch logistic optimum."""
  r = np.random.default_rng(2)
  d, c, delta = 5, 3, 0.5
  tasks = []
  for t in range(3):
    x = continual.add_bias(r.normal(size=(40, d - 1)) + 0.5 * t)
    tasks.append((jnp.asarray(x), jnp.asarray(r.integers(0, c, 40))))
  theta = jnp.zeros((d, c))
  memory = continual.empty_memory(d, jnp.float64)
  for x, y in tasks:
    loss = lambda th, x=x, y=y, old=theta, mem=memory: continual.task_loss(
      th, x, y, old, mem, delta, x.shape[0]
    )
    theta, gmax = _newton(loss, theta)
    assert gmax < 1e-12
    u = jnp.concatenate([memory.u, x])
    memory = continual.Memory(u, jnp.ones(u.shape[0]))
  x_all = jnp.concatenate([x for x, _ in tasks])
  y_all = jnp.concatenate([y for _, y in tasks])
  batch = lambda th: (
    continual.cross_entropy_sum(th, x_all, y_all) + 0.5 * delta * jnp.sum(th**2)
  )
  theta_batch, _ = _newton(batch, jnp.zeros((d, c)))
  np.testing.assert_allclose(theta, theta_batch, rtol=0, atol=1e-5)
  # Control: without the memory (plain L2 to theta_old) the result differs.
  x, y = tasks[-1]
  no_mem = lambda th: continual.task_loss(
    th, x, y, theta, continual.empty_memory(d, jnp.float64), delta, 40
  )
  assert float(jnp.max(jnp.abs(_newton(no_mem, theta)[0] - theta_batch))) > 1e-2


def test_kprior_without_memory_is_l2_and_soft_ce_matches_dense():
  r = np.random.default_rng(3)
  theta = jnp.asarray(r.normal(size=(4, 3)))
  old = jnp.asarray(r.normal(size=(4, 3)))
  np.testing.assert_allclose(
    continual.kprior(
      theta, jnp.zeros_like(theta), continual.empty_memory(4), 0.2
    ),
    0.1 * np.sum(np.asarray(theta) ** 2),
    rtol=1e-12,
  )
  u = r.normal(size=(5, 4))
  w = r.uniform(0.5, 2, 5)
  mem = continual.Memory(jnp.asarray(u), jnp.asarray(w))
  soft = lambda z: (
    np.exp(z - z.max(-1, keepdims=True))
    / np.exp(z - z.max(-1, keepdims=True)).sum(-1, keepdims=True)
  )
  p_old, p = soft(u @ np.asarray(old)), soft(u @ np.asarray(theta))
  dense = 0.1 * np.sum((np.asarray(theta - old)) ** 2) - np.sum(
    w * np.sum(p_old * np.log(p), -1)
  )
  np.testing.assert_allclose(
    continual.kprior(theta, old, mem, 0.2), dense, rtol=1e-12
  )
  # The official "K-prior with random points": the same soft CE, L2 to 0.
  to_zero = dense + 0.1 * np.sum(
    np.asarray(theta) ** 2 - np.asarray(theta - old) ** 2
  )
  np.testing.assert_allclose(
    continual.kprior(theta, old, mem, 0.2, center=jnp.zeros_like(theta)),
    to_zero,
    rtol=1e-12,
  )
