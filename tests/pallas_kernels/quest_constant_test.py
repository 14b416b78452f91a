"""QuEST's scale constant is the official 2.92247856 / 6 in every implementation.

A 32-group whose sigma lies between the thresholds of the official constant
(2.92247856 / 6 = 0.48707977 in float32) and the MSE-fitting notebook's
0.48707948 gets scale exponent 0 from the first and -1 from the second; every
implementation that runs on CPU must give 0 (Castro et al., Quartet, NeurIPS
2025; the official Triton kernel and QuTLASS).
"""

import shutil

import jax.numpy as jnp
import numpy as np
import pytest

from pallas_kernels.mxfp4 import ffi
from pallas_kernels.mxfp4 import ops
from pallas_kernels.mxfp4 import reference
from pallas_kernels.mxfp4.ffi import build

OFFICIAL = np.float32(2.92247856 / 6)  # 0.48707977
NOTEBOOK = np.float32(0.48707948)


def _exponent(scale, sigma):
  """floor(log2(scale sigma + 1e-8)), the spec's definition, in float64."""
  return int(np.floor(np.log2(np.float64(scale) * sigma + 1e-8)))


def _boundary_sigma():
  """The float32 sigma in the middle of the window where the official
  constant reaches 2^0 and the notebook's does not (5 float32 values wide):
  two ulps of error in any implementation's sigma keep it inside."""
  lo = np.float32(1 / np.float64(OFFICIAL))  # first sigma with exponent 0
  while np.float64(OFFICIAL) * np.float64(lo) + 1e-8 >= 1:
    lo = np.nextafter(lo, np.float32(0))
  lo = np.nextafter(lo, np.float32(3))
  hi = lo
  while np.float64(NOTEBOOK) * np.float64(np.nextafter(hi, np.float32(3))) < 1:
    hi = np.nextafter(hi, np.float32(3))
  window = []
  s = lo
  while s <= hi:
    window.append(s)
    s = np.nextafter(s, np.float32(3))
  assert len(window) >= 5, window  # room for two ulps either side
  return window[len(window) // 2]


def _boundary_input(rows=8, groups=2):
  """x whose every 32-group rotates to +-sigma with zero mean.

  Each group is c e_i (i >= 1): H32 maps it to c h (+-1 in the Sylvester row
  i, half of each sign), h = 1/sqrt(32) in float32, so the rotated values are
  the single product fl(c h) in every implementation (a matmul with one
  non-zero term, or the FWHT's exact butterflies then one multiply).
  """
  sigma = _boundary_sigma()
  h = np.float32(1 / np.sqrt(32))
  c = np.float32(np.float64(sigma) * np.sqrt(32))
  for _ in range(8):  # the float32 c whose product with h is sigma
    p = np.float32(c * h)
    if p == sigma:
      break
    c = np.nextafter(c, np.float32(np.inf if p < sigma else 0))
  assert np.float32(c * h) == sigma
  x = np.zeros((rows, groups * reference.GROUP), np.float32)
  for r in range(rows):
    for g in range(groups):
      x[r, g * reference.GROUP + 1 + (r * groups + g) % 31] = c
  return jnp.asarray(x), np.float64(sigma)


def test_constants_are_the_official_value():
  assert np.float32(reference.QUEST_SIGMA_SCALE) == OFFICIAL
  assert build.reference_defines() == [
    f"-DQUARTET_QUEST_SIGMA_SCALE={float(OFFICIAL):.8e}f"
  ]


def test_boundary_group_separates_the_two_constants():
  x, sigma = _boundary_input()
  rotated = np.asarray(reference.rotate(x))
  np.testing.assert_array_equal(np.abs(rotated), np.float32(sigma))
  assert _exponent(OFFICIAL, sigma) == 0
  assert _exponent(NOTEBOOK, sigma) == -1


@pytest.mark.parametrize(
  "implementation", ["reference", "xla", "pallas", "ffi"]
)
def test_boundary_group_gets_the_official_exponent(implementation):
  x, sigma = _boundary_input()
  if implementation == "reference":
    t, _ = reference.quantize_quest(x)
  elif implementation == "ffi":
    if shutil.which("g++") is None:
      pytest.skip("g++ not found")
    build.build_cpu()  # the documented build; a no-op when it is current
    codes, scale, _ = ffi.quantize(x, method="quest")
    t = reference.MXTensor(codes, scale, alpha_inv=1)
  else:
    t, _ = ops.quantize_quest(x, implementation=implementation, interpret=True)
  want = 127 + _exponent(OFFICIAL, sigma)  # E8M0 byte of 2^0
  np.testing.assert_array_equal(np.asarray(t.scale), want)
