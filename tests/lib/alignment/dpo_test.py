"""lib.alignment: the spec's oracles for last-layer DPO (float64)."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from lib import alignment
from lib.core import errors


def _problem(key, n=12, vocab=5, d=7):
  k1, k2, k3, k4, k5 = jax.random.split(key, 5)
  w_ref = jax.random.normal(k1, (vocab, d), jnp.float64)
  w = w_ref + 0.3 * jax.random.normal(k2, (vocab, d), jnp.float64)
  g = jax.random.normal(k3, (n, d), jnp.float64)
  y_w = jax.random.randint(k4, (n,), 0, vocab)
  y_l = (y_w + jax.random.randint(k5, (n,), 1, vocab)) % vocab  # != y_w
  return w, w_ref, g, y_w, y_l


def test_margin_identity():
  with jax.enable_x64(True):
    w, w_ref, g, y_w, y_l = _problem(jax.random.key(0))
    r = alignment.margins(w, w_ref, g, y_w, y_l, 0.7)
    closed = alignment.closed_form_margins(w, w_ref, g, y_w, y_l, 0.7)
    # By hand for pair 0: beta (e_w - e_l)^T (W - W_ref) g.
    dw = np.asarray(w - w_ref)
    r0 = 0.7 * (dw[int(y_w[0])] - dw[int(y_l[0])]) @ np.asarray(g[0])
    np.testing.assert_allclose(r, closed, rtol=0, atol=1e-10)
    np.testing.assert_allclose(r[0], r0, rtol=0, atol=1e-10)


def test_one_gd_step_moves_margins_exactly():
  with jax.enable_x64(True):
    w, w_ref, g, y_w, y_l = _problem(jax.random.key(1))
    beta, lr = 0.5, 0.3
    r = alignment.margins(w, w_ref, g, y_w, y_l, beta)
    grad = jax.grad(alignment.loss)(w, w_ref, g, y_w, y_l, beta)
    r_next = alignment.margins(w - lr * grad, w_ref, g, y_w, y_l, beta)
    dr = alignment.gd_margin_update(r, g, y_w, y_l, beta, lr, w.shape[0])
    np.testing.assert_allclose(r_next - r, dr, rtol=0, atol=1e-10)


def test_loss_gradient_at_the_reference():
  with jax.enable_x64(True):
    _, w_ref, g, y_w, y_l = _problem(jax.random.key(2))
    beta, n, vocab = 0.2, g.shape[0], w_ref.shape[0]
    grad = jax.grad(alignment.loss)(w_ref, w_ref, g, y_w, y_l, beta)
    e = np.eye(vocab)[np.asarray(y_w)] - np.eye(vocab)[np.asarray(y_l)]
    expected = -(beta / (2 * n)) * e.T @ np.asarray(g)  # sigma(0) = 1/2
    np.testing.assert_allclose(grad, expected, rtol=0, atol=1e-12)


def test_one_separable_cluster_is_learned():
  with jax.enable_x64(True):
    mu, nu = alignment.cluster_geometry(jax.random.key(3), 1, 16)
    data = alignment.sample_pairs(jax.random.key(4), mu, nu, 32, noise=0.1)
    w_ref = jnp.zeros((2, 16), jnp.float64)
    args = (w_ref, data["g"], data["y_w"], data["y_l"], 0.1)
    tx = optax.sgd(100.0)
    w, opt = w_ref, tx.init(w_ref)
    before = alignment.reward_accuracy(w, *args)
    for _ in range(50):
      u, opt = tx.update(jax.grad(alignment.loss)(w, *args), opt, w)
      w = w + u
    assert float(before) == 0.0  # W = W_ref: every margin is 0, none > 0
    assert float(alignment.reward_accuracy(w, *args)) == 1.0


def test_preference_losses_by_hand():
  h = jnp.array([-1.0, 0.0, 2.0])
  beta = 0.5
  np.testing.assert_allclose(
    alignment.preference_loss(h, beta, "dpo"),
    np.log1p(np.exp(-beta * np.asarray(h, np.float64))),
    rtol=1e-6,
  )
  np.testing.assert_allclose(
    alignment.preference_loss(h, beta, "ipo"), (h - 1.0) ** 2
  )
  np.testing.assert_allclose(
    alignment.preference_loss(h, beta, "slic"), [1.5, 1.0, 0.0]
  )


def test_nested_q_masks_and_cluster_layout():
  mu, nu = alignment.cluster_geometry(jax.random.key(5), 3, 8)
  np.testing.assert_allclose(jnp.sum(mu * nu, -1), 0.0, atol=1e-5)
  np.testing.assert_allclose(jnp.linalg.norm(nu, axis=-1), 1.0, rtol=1e-5)
  data = alignment.sample_pairs(jax.random.key(6), mu, nu, 4)
  np.testing.assert_array_equal(data["cluster"], np.repeat([0, 1, 2], 4))
  np.testing.assert_array_equal(
    alignment.first_q_mask(3, 4, 2), [1, 1, 0, 0] * 3
  )


@pytest.mark.parametrize(
  "case, match",
  [
    ("same_tokens", "same preferred and rejected token"),
    ("width", "embedding width 6 does not match"),
    ("token_range", r"token ids must lie in \[0, 3\)"),
  ],
)
def test_bad_pairs_fail_in_one_line(case, match):
  w = np.zeros((3, 5))
  g = np.zeros((4, 5))
  y_w, y_l = np.array([0, 1, 2, 0]), np.array([1, 2, 0, 2])
  if case == "same_tokens":
    y_l = y_w.copy()
  elif case == "width":
    g = np.zeros((4, 6))
  else:
    y_w = np.array([0, 1, 2, 3])
  with pytest.raises(errors.ShapeError, match=match):
    alignment.check_pairs(w, g, y_w, y_l)


@pytest.mark.parametrize("beta", [0.0, -1.0])
def test_beta_must_be_positive(beta):
  with pytest.raises(errors.ConfigError, match="beta must be a number > 0"):
    alignment.preference_loss(jnp.zeros(2), beta)


def test_concept_sequences_carry_concept_and_stance():
  world = alignment.concept_world(jax.random.key(0), 4, 40, 5)
  assert world.shape == (4, 2, 5)
  assert (
    int(world.min()) >= 4 and int(world.max()) < 44
  )  # fillers after concepts
  for k in range(4):  # the two stance subsets of a concept are disjoint
    assert not set(np.asarray(world[k, 0]).tolist()) & set(
      np.asarray(world[k, 1]).tolist()
    )
  concepts = jnp.array([0, 1, 2, 3, 3])
  stance = jnp.array([1, -1, 1, -1, 1])
  pure = alignment.concept_sequences(
    jax.random.key(1), world, concepts, stance, 12, 40, 1.0
  )
  np.testing.assert_array_equal(np.asarray(pure[:, 0]), np.asarray(concepts))
  for i in range(5):
    side = 0 if int(stance[i]) > 0 else 1
    allowed = set(np.asarray(world[int(concepts[i]), side]).tolist())
    assert set(np.asarray(pure[i, 1:]).tolist()) <= allowed
  with pytest.raises(errors.ConfigError, match="filler_vocab"):
    alignment.concept_world(jax.random.key(0), 4, 8, 5)


def _value_model(key, num_values=3, dim=8, per_value=4, noise=0.5, **kw):
  k_geo, k_pairs = jax.random.split(key)
  c, b = alignment.value_directions(k_geo, num_values, dim, 0.25)
  return c, b, alignment.value_pairs(k_pairs, c, b, per_value, noise, **kw)


def test_value_model_geometry_balance_and_tokens():
  with jax.enable_x64(True):
    c, b, data = _value_model(jax.random.key(7), num_values=3, dim=8)
    np.testing.assert_allclose(c @ c.T, np.eye(3), atol=1e-12)  # orthonormal
    np.testing.assert_allclose(c @ b, 0.0, atol=1e-12)
    np.testing.assert_allclose(b, 0.25 * np.eye(8)[0])
  y_w, y_l = np.asarray(data["y_w"]), np.asarray(data["y_l"])
  value = np.asarray(data["cluster"])
  # Value k uses tokens 2k and 2k+1 only: no token is shared by two values.
  np.testing.assert_array_equal(y_w // 2, value)
  np.testing.assert_array_equal(y_l // 2, value)
  # The first 2q rows of a value hold q pairs of each sign (balanced, nested).
  mask = np.asarray(alignment.first_q_mask(3, 8, 4))  # q = 2 of Q = 4
  sign = np.asarray(data["sign"])
  for k in range(3):
    rows = (value == k) & (mask > 0)
    assert rows.sum() == 4 and sign[rows].sum() == 0
  np.testing.assert_array_equal(y_w == 2 * value, sign > 0)
  _, _, shared = _value_model(jax.random.key(7), shared_tokens=True)
  np.testing.assert_array_equal(shared["y_w"], (sign < 0).astype(int))
  with pytest.raises(errors.ConfigError, match="width >= 9"):
    alignment.value_directions(jax.random.key(0), 8, 8)


def test_value_block_margins_match_the_log_softmax_margins():
  with jax.enable_x64(True):
    _, _, data = _value_model(jax.random.key(8))
    w_ref = jax.random.normal(jax.random.key(9), (6, 8), jnp.float64)
    w = w_ref + jax.random.normal(jax.random.key(10), (6, 8), jnp.float64)
    r = alignment.margins(w, w_ref, data["g"], data["y_w"], data["y_l"], 0.3)
    blocked = alignment.value_block_margins(
      w, w_ref, data["g"].reshape(3, 8, 8), data["sign"].reshape(3, 8), 0.3
    )
    np.testing.assert_allclose(blocked.reshape(-1), r, rtol=0, atol=1e-10)


@pytest.mark.parametrize("shared_tokens", [False, True])
def test_a_gd_step_on_one_value_moves_other_values_only_if_tokens_are_shared(
  shared_tokens,
):
  # dr_j = (lr beta^2 / N) sum_i sigma(-r_i) <e_j, e_i> <g_j, g_i> over the
  # pairs i of the step. Distinct tokens: <e_j, e_i> = 0 across values, so
  # the other values' margins do not move. Shared tokens: <e_j, e_i> =
  # 2 s_i s_j, and the move is the sum by hand (nonzero: b and the noise
  # overlap across values).
  with jax.enable_x64(True):
    _, _, data = _value_model(jax.random.key(11), shared_tokens=shared_tokens)
    vocab = 2 if shared_tokens else 6
    w_ref = jnp.zeros((vocab, 8), jnp.float64)
    w = 0.5 * jax.random.normal(jax.random.key(12), (vocab, 8), jnp.float64)
    beta, lr = 0.5, 2.0
    args = (data["g"], data["y_w"], data["y_l"], beta)
    on_value_0 = (data["cluster"] == 0).astype(jnp.float64)
    grad = jax.grad(alignment.loss)(w, w_ref, *args, "dpo", on_value_0)
    r = alignment.margins(w, w_ref, *args)
    moved = alignment.margins(w - lr * grad, w_ref, *args) - r
    g, s = np.asarray(data["g"]), np.asarray(data["sign"])
    mine = np.asarray(on_value_0) > 0
    weight = 1.0 / (1.0 + np.exp(np.asarray(r)[mine]))  # sigma(-r_i)
    # <e_j, e_i> = 2 s_j s_i within one token pair (e = e_w - e_l).
    cross = 2 * s[:, None] * s[mine][None, :] * (g @ g[mine].T)
    by_hand = lr * beta**2 / mine.sum() * cross @ weight
    others = ~mine
    if shared_tokens:
      np.testing.assert_allclose(moved, by_hand, rtol=1e-9, atol=1e-12)
      assert np.min(np.abs(np.asarray(moved)[others])) > 1e-3
    else:
      np.testing.assert_allclose(np.asarray(moved)[others], 0.0, atol=1e-12)
      np.testing.assert_allclose(
        np.asarray(moved)[mine], by_hand[mine], rtol=1e-9, atol=1e-12
      )


def test_population_accuracy_by_hand_and_by_sampling():
  with jax.enable_x64(True):
    # delta = W[0] - W[1] = (1, 0): r ~ N(beta 0.5, (beta 0.5)^2), P = Phi(1).
    w = jnp.array([[1.0, 0.0], [0.0, 0.0]])
    mean = jnp.array([[0.5, 3.0]])
    y_w, y_l = jnp.array([0]), jnp.array([1])
    exact = alignment.population_accuracy(w, 0 * w, mean, y_w, y_l, 0.5)
    np.testing.assert_allclose(exact, [0.8413447460685429], rtol=1e-12)
    assert (
      float(alignment.population_accuracy(0 * w, 0 * w, mean, y_w, y_l, 0.5)[0])
      == 0.0
    )
    # A random head and cluster: the sampled accuracy within 5 binomial sd.
    w = jax.random.normal(jax.random.key(13), (4, 6), jnp.float64)
    mean = 0.3 * jax.random.normal(jax.random.key(14), (1, 6), jnp.float64)
    p = float(
      alignment.population_accuracy(w, 0 * w, mean, y_w + 2, y_l, 0.8)[0]
    )
    n = 200_000
    g = mean + 0.8 * jax.random.normal(jax.random.key(15), (n, 6), jnp.float64)
    sampled = alignment.reward_accuracy(
      w, 0 * w, g, jnp.full(n, 2), jnp.full(n, 1), 0.1
    )
    assert 0.05 < p < 0.95
    assert abs(float(sampled) - p) < 5 * np.sqrt(p * (1 - p) / n)


def test_beta_and_noise_may_be_jitted_or_vmapped_arguments():
  # check_beta called float(beta) and population_accuracy branched on
  # noise == 0, so jax.jit(loss)(..., beta) and a vmap over beta or noise
  # raised a ConcretizationTypeError / TracerBoolConversionError.
  with jax.enable_x64(True):
    w, w_ref, g, y_w, y_l = _problem(jax.random.key(3))
    betas = jnp.array([0.1, 0.7])

    def by_hand(beta):  # mean -log sigmoid(r), r by the margin identity
      dw = np.asarray(w - w_ref)
      e = dw[np.asarray(y_w)] - dw[np.asarray(y_l)]
      r = beta * np.sum(e * np.asarray(g), axis=-1)
      return np.mean(np.log1p(np.exp(-r)))

    jitted = jax.jit(alignment.loss)(w, w_ref, g, y_w, y_l, betas[1])
    np.testing.assert_allclose(jitted, by_hand(0.7), rtol=1e-12)
    swept = jax.vmap(alignment.loss, (None,) * 5 + (0,))(
      w, w_ref, g, y_w, y_l, betas
    )
    np.testing.assert_allclose(swept, [by_hand(0.1), by_hand(0.7)], rtol=1e-12)
    # P = Phi(1) at noise 0.5 (as above); noise 0: the sign of the mean margin.
    w = jnp.array([[1.0, 0.0], [0.0, 0.0]])
    mean = jnp.array([[0.5, 3.0], [-0.5, 3.0]])
    y_w, y_l = jnp.array([0, 0]), jnp.array([1, 1])
    acc = jax.vmap(
      alignment.population_accuracy, (None, None, None, None, None, 0)
    )(w, 0 * w, mean, y_w, y_l, jnp.array([0.5, 0.0]))
    phi1 = 0.8413447460685429
    np.testing.assert_allclose(acc, [[phi1, 1 - phi1], [1.0, 0.0]], rtol=1e-12)
    with pytest.raises(errors.ConfigError, match="beta must be"):
      jax.jit(alignment.loss)(w, w, mean, y_w, y_l, jnp.zeros((2,)))


def test_population_accuracy_of_a_bfloat16_head():
  # jax's ndtr refused bfloat16 ("x.dtype=bfloat16 is not supported").
  w = jnp.array([[1.0, 0.0], [0.0, 0.0]], jnp.bfloat16)
  mean = jnp.array([[0.5, 3.0]], jnp.bfloat16)
  y_w, y_l = jnp.array([0]), jnp.array([1])
  acc = alignment.population_accuracy(w, 0 * w, mean, y_w, y_l, 0.5)
  np.testing.assert_allclose(acc, [0.8413447460685429], rtol=1e-6)  # Phi(1)


@pytest.mark.parametrize(
  "fn", ["margins", "closed_form_margins", "loss", "reward_accuracy"]
)
@pytest.mark.parametrize("bad, which", [(5, "y_w"), (-1, "y_l")])
def test_out_of_range_token_ids_raise_where_concrete(fn, bad, which):
  # log_softmax gathered at id 5 of a 5-token head gave a silent NaN.
  with jax.enable_x64(True):
    w, w_ref, g, y_w, y_l = _problem(jax.random.key(20))
    y = {"y_w": np.array(y_w), "y_l": np.array(y_l)}  # writable copies
    y[which][3] = bad
    y["y_w" if which == "y_l" else "y_l"][3] = 2  # not equal to bad
    f = getattr(alignment, fn)
    with pytest.raises(errors.ShapeError, match=r"lie in \[0, 5\)") as e:
      f(w, w_ref, g, y["y_w"], y["y_l"], 0.5)
    assert f"{which}[3]={bad}" in str(e.value)
    # Traced ids are not checked (jit stays pure); in-range ids still run.
    jitted = jax.jit(f)(w, w_ref, g, y_w, y_l, 0.5)
    np.testing.assert_allclose(jitted, f(w, w_ref, g, y_w, y_l, 0.5))


def test_masked_padding_rows_may_repeat_a_token():
  with jax.enable_x64(True):
    w, w_ref, g, y_w, y_l = _problem(jax.random.key(21))
    pad_g = jnp.concatenate([g, jnp.ones((3, g.shape[1]))])
    pad_w = jnp.concatenate([y_w, jnp.zeros(3, y_w.dtype)])
    pad_l = jnp.concatenate([y_l, jnp.zeros(3, y_l.dtype)])
    mask = jnp.concatenate([jnp.ones(len(y_w)), jnp.zeros(3)])
    got = alignment.loss(w, w_ref, pad_g, pad_w, pad_l, 0.5, "dpo", mask)
    want = alignment.loss(w, w_ref, g, y_w, y_l, 0.5)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    with pytest.raises(errors.ShapeError, match="first at index 12"):
      alignment.loss(w, w_ref, pad_g, pad_w, pad_l, 0.5)


@pytest.mark.parametrize("noise", [-0.5, float("nan")])
def test_population_accuracy_refuses_a_negative_noise(noise):
  w = jnp.array([[1.0, 0.0], [0.0, 0.0]])
  mean = jnp.array([[0.5, 3.0]])
  y_w, y_l = jnp.array([0]), jnp.array([1])
  with pytest.raises(errors.ConfigError, match="noise must be a number >= 0"):
    alignment.population_accuracy(w, 0 * w, mean, y_w, y_l, noise)
