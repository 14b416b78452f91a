"""The digits MLP and MIX's 1-D CNN against dense numpy references."""

import jax
import numpy as np
import pytest

from lib import models
from lib.core import errors


def test_conv1d_is_same_padded_cross_correlation():
  # Even and odd kernels: 'SAME' puts (k - 1) // 2 zeros on the left.
  x = np.random.default_rng(0).normal(size=(9, 2)).astype(np.float32)
  for k in (3, 4):
    conv = models.Conv1D(features=5, kernel_size=k)
    params = jax.jit(conv.init)(jax.random.key(0), x)
    kernel = np.asarray(params["params"]["kernel"]).reshape(k, 2, 5)
    bias = np.asarray(params["params"]["bias"])
    left = (k - 1) // 2
    xp = np.pad(x, ((left, k - 1 - left), (0, 0)))
    expected = np.stack(
      [np.einsum("kc,kcf->f", xp[t : t + k], kernel) for t in range(9)]
    )
    np.testing.assert_allclose(
      jax.jit(conv.apply)(params, x), expected + bias, rtol=1e-5, atol=1e-6
    )


def test_mlp_is_relu_layers_then_a_linear_head():
  x = np.random.default_rng(1).normal(size=(4, 5)).astype(np.float32)
  mlp = models.MLP(hidden=(8, 6), num_outputs=3)
  p = jax.jit(mlp.init)(jax.random.key(2), x)["params"]
  assert {k: v["kernel"].shape for k, v in p.items()} == {
    "Dense_0": (5, 8),
    "Dense_1": (8, 6),
    "Dense_2": (6, 3),
  }
  h = np.maximum(x @ p["Dense_0"]["kernel"] + p["Dense_0"]["bias"], 0)
  h = np.maximum(h @ p["Dense_1"]["kernel"] + p["Dense_1"]["bias"], 0)
  out = h @ p["Dense_2"]["kernel"] + p["Dense_2"]["bias"]
  got = jax.jit(mlp.apply)({"params": p}, x)
  np.testing.assert_allclose(got, out, rtol=1e-5, atol=1e-6)


def test_cnn1d_names_a_batched_input():
  # One series [n] per call (vmap for a batch); a batch [B, n] was an
  # unpacking error inside Conv1D.
  cnn = models.CNN1D(channels=(4,), kernel_sizes=(3,), num_classes=2)
  x = np.ones((3, 20), np.float32)
  params = cnn.init(jax.random.key(0), x[0])
  with pytest.raises(errors.ShapeError, match="vmap"):
    cnn.apply(params, x)
  batched = jax.vmap(lambda s: cnn.apply(params, s))(x)
  np.testing.assert_allclose(batched[1], cnn.apply(params, x[1]), rtol=1e-6)
