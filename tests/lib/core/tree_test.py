"""lib.core.tree: norms, counts and finiteness of pytrees, edge cases."""

import jax
import jax.numpy as jnp
import numpy as np

from lib.core import tree


def test_l2_norm_gradient_at_zero_is_the_zero_subgradient():
  # |x| has subgradient 0 at x = 0; sqrt'(0) = inf times 0 would be NaN.
  grads = jax.jit(jax.grad(tree.l2_norm))(
    {"w": jnp.zeros(3), "b": jnp.zeros(2)}
  )
  np.testing.assert_array_equal(grads["w"], np.zeros(3))
  np.testing.assert_array_equal(grads["b"], np.zeros(2))
  # Away from zero: x / |x| (3-4-5 triangle).
  g = jax.grad(tree.l2_norm)({"w": jnp.array([3.0, 4.0])})
  np.testing.assert_allclose(g["w"], [0.6, 0.8], rtol=1e-6)


def test_l2_norm_keeps_nan_and_inf():
  # A non-finite gradient must stay visible to the loop's grad_norm check.
  assert np.isnan(tree.l2_norm({"w": jnp.array([1.0, jnp.nan])}))
  assert np.isinf(tree.l2_norm({"w": jnp.array([1.0, jnp.inf])}))
  assert tree.l2_norm({"w": jnp.zeros(2)}) == 0.0


def test_l2_norm_and_num_params_take_python_scalar_leaves():
  assert float(tree.l2_norm({"a": 3.0, "b": 4})) == 5.0
  assert tree.num_params({"a": 3.0, "b": jnp.ones((2, 3))}) == 7


def test_all_finite_of_an_empty_tree_is_true():
  # Every leaf of no leaves is finite; l2_norm({}) = 0 likewise.
  assert bool(tree.all_finite({}))
  assert bool(jax.jit(tree.all_finite)({"a": jnp.ones(2), "b": ()}))
  assert not bool(tree.all_finite({"a": jnp.array([0.0, jnp.inf])}))


def test_typed_key_leaves_are_not_numbers():
  # A state that carries a typed PRNG key (an RL or dropout state) has a
  # norm and a finiteness over its numbers; the key is neither.
  state = {"w": jnp.array([3.0, 4.0]), "rng": jax.random.key(0)}
  assert float(jax.jit(tree.l2_norm)(state)) == 5.0
  assert bool(jax.jit(tree.all_finite)(state))
  state["w"] = jnp.array([jnp.nan, 4.0])
  assert not bool(tree.all_finite(state))
  # An array of keys counts one entry per key.
  assert tree.num_params({"k": jax.random.split(jax.random.key(0), 3)}) == 3
