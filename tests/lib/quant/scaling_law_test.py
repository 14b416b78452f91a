"""The Quartet scaling law: the formula, and planted-parameter recovery by the Huber fit."""

import jax
import numpy as np
import pytest

from lib.quant import scaling_law as sl

PAPER = sl.PAPER_BASE
EFF_N, EFF_D = 0.658, 0.822  # the paper's Quartet efficiencies, planted


def _grid():
  n, d = np.meshgrid([3e7, 5e7, 1e8, 2e8], [1e9, 3e9, 1e10, 3e10])
  return n.ravel(), d.ravel()


def _direct(n, d, eff_n=1.0, eff_d=1.0):
  """The law written out in float64, term by term."""
  p = PAPER
  inner = p["a"] / (n * eff_n) ** p["alpha"] + p["b"] / (d * eff_d) ** p["beta"]
  return inner ** p["gamma"] + p["e"]


def test_law_equals_the_formula():
  law = sl.Law.from_values(**PAPER)
  n, d = _grid()
  np.testing.assert_allclose(sl.loss(law, n, d), _direct(n, d), rtol=2e-6)
  np.testing.assert_allclose(
    sl.loss(law, n, d, EFF_N, EFF_D), _direct(n, d, EFF_N, EFF_D), rtol=2e-6
  )
  # effN scales N exactly: L(N, D; effN) == L(effN N, D; 1).
  np.testing.assert_allclose(
    sl.loss(law, n, d, EFF_N, 1.0), sl.loss(law, EFF_N * n, d), rtol=1e-6
  )


def test_efficiencies_recovered_with_the_base_frozen():
  law = sl.Law.from_values(**PAPER)
  n, d = _grid()
  eff_n, eff_d = sl.fit_efficiency(law, n, d, _direct(n, d, EFF_N, EFF_D))
  assert eff_n == pytest.approx(EFF_N, abs=1e-3)
  assert eff_d == pytest.approx(EFF_D, abs=1e-3)


def test_base_fit_reproduces_the_losses_then_the_efficiencies():
  n, d = _grid()
  law, objective = sl.fit_base(n, d, _direct(n, d))
  assert objective < 1e-8
  np.testing.assert_allclose(sl.loss(law, n, d), _direct(n, d), rtol=1e-4)
  eff_n, eff_d = sl.fit_efficiency(law, n, d, _direct(n, d, EFF_N, EFF_D))
  assert eff_n == pytest.approx(EFF_N, abs=1e-2)
  assert eff_d == pytest.approx(EFF_D, abs=1e-2)


def test_huber_fit_shrugs_off_one_outlier():
  # Huber with delta 1e-4 is L1 beyond 1e-4 in log loss: one point 5 % off
  # barely moves the fit, where least squares would be pulled.
  law = sl.Law.from_values(**PAPER)
  n, d = _grid()
  obs = _direct(n, d, EFF_N, EFF_D)
  obs[5] *= 1.05
  eff_n, eff_d = sl.fit_efficiency(law, n, d, obs)
  assert eff_n == pytest.approx(EFF_N, abs=5e-3)
  assert eff_d == pytest.approx(EFF_D, abs=5e-3)


def test_bootstrap_on_exact_points_is_tight_around_the_truth():
  n, d = _grid()
  boot = sl.bootstrap(
    jax.random.key(0),
    (n, d, _direct(n, d)),
    {
      "planted": (n, d, _direct(n, d, EFF_N, EFF_D)),
      "baseline": (n, d, _direct(n, d)),
    },
    samples=3,
    base_steps=200,
    eff_steps=100,
  )
  assert (
    boot["planted"]["eff_n"].shape == boot["planted"]["eff_d"].shape == (3,)
  )
  np.testing.assert_allclose(boot["planted"]["eff_n"], EFF_N, atol=2e-2)
  np.testing.assert_allclose(boot["planted"]["eff_d"], EFF_D, atol=2e-2)
  # The baseline against its own base law: efficiency 1.
  np.testing.assert_allclose(boot["baseline"]["eff_n"], 1.0, atol=2e-2)
  np.testing.assert_allclose(boot["baseline"]["eff_d"], 1.0, atol=2e-2)


@pytest.mark.parametrize(
  "n, d, loss, match",
  [
    ([1e6, 2e6], [1e6], [3.0, 2.9], "equally long"),
    ([1e6, 2e6], [1e6, 1e6], [3.0, -1.0], "loss must be finite and positive"),
    ([1e6, 2e6], [1e6, 1e6], [3.0, np.nan], "loss must be finite"),
    ([1e6], [1e6], [3.0], "at least 2 points"),
  ],
)
def test_bad_points_name_the_problem(n, d, loss, match):
  law = sl.Law.from_values(**PAPER)
  with pytest.raises(ValueError, match=match):
    sl.fit_efficiency(law, n, d, loss)


def test_base_fit_needs_six_points():
  with pytest.raises(ValueError, match="need >= 6"):
    sl.fit_base([1e6, 2e6, 4e6], [1e6, 1e6, 1e6], [3.0, 2.9, 2.8])
