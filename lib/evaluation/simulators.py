"""Causal and anticausal data-generating processes for disaggregated evaluation.

Pfohl, Nagpal, Madras, Mhasawade, Salaudeen, ..., Koyejo, "Understanding
challenges to the interpretation of disaggregated evaluations of algorithmic
fairness", NeurIPS 2025 (arXiv 2506.04193); ported from the official
`causal_evaluation/simulator.py` as read in the spec (extended_papers.md 3).
Variables: U (latent binary), A (group), X (1-D), Y (binary), S (selection).

Causal family: U ~ Bern(.5); X | U ~ N(mu_x[U], 1); P(A=1) = beta_a 1[U=1] +
(1 - beta_a) .5; logit P(Y=1 | X, A) = X c[A] + b[A].
Anticausal family: U ~ Bern(.5), A from U as above; Y | U ~ Cat(p[U]);
X | A, Y ~ N(m[A, Y], 1).
Selection (on the complex causal DGP): on X, on Y, or on {A, Y}.

Every simulator is a pure function of a key returning a dict of arrays
{u, a, x, y, s, p_y} (p_y = the true P(Y=1 | X, A) where the DGP gives it in
closed form, else NaN; s = 1 where the point is selected).
"""

import dataclasses
import functools

import jax
import jax.numpy as jnp

from lib.core import errors


@dataclasses.dataclass(frozen=True)
class Setting:
  """One named setting of the paper's simulation study."""

  family: str  # "causal" | "anticausal"
  beta_a: float = 1.0
  mu_x: tuple = (-2.0, 0.0)
  coef: tuple = (0.5, 0.5)  # c[A]
  bias: tuple = (0.0, 0.0)  # b[A]
  p_y: tuple = ((0.5, 0.5), (0.9, 0.1))  # anticausal Y | U
  m: tuple = ((-1.0, 1.0), (-1.0, 1.0))  # anticausal X | A, Y
  selection: str = "none"  # none | x | y | ay

  def __post_init__(self):
    # A misspelt family ran the anticausal DGP and a misspelt selection
    # none, silently.
    errors.check(
      self.family in FAMILIES,
      errors.ConfigError,
      f"unknown family {self.family!r}; expected one of {FAMILIES}",
    )
    errors.check(
      self.selection in SELECTIONS,
      errors.ConfigError,
      f"unknown selection {self.selection!r}; expected one of {SELECTIONS}",
    )


FAMILIES = ("causal", "anticausal")
SELECTIONS = ("none", "x", "y", "ay")

# A pytree: the family and selection choose the program, the numbers are
# traced, so one compiled `simulate` serves every setting of a family,
# selection and size.
jax.tree_util.register_dataclass(
  Setting,
  data_fields=["beta_a", "mu_x", "coef", "bias", "p_y", "m"],
  meta_fields=["family", "selection"],
)


_A_TO_Y = (0.5, -1.0)
_COMPLEX = dict(coef=_A_TO_Y, bias=(0.1, 0.0), beta_a=1.0)

SETTINGS = {
  "no_shift": Setting("causal", beta_a=0.0),
  "covariate_shift": Setting("causal"),
  "outcome_shift": Setting("causal", beta_a=0.0, coef=_A_TO_Y, bias=(0.1, 0.0)),
  "complex_causal_shift": Setting("causal", **_COMPLEX),
  "low_overlap_causal": Setting("causal", mu_x=(-2.0, 2.0), **_COMPLEX),
  "anticausal_label_shift": Setting("anticausal"),
  "anticausal_presentation_shift": Setting(
    "anticausal", m=((1.0, 0.0), (-1.0, 1.0)), p_y=((0.5, 0.5), (0.5, 0.5))
  ),
  "complex_anticausal_shift": Setting(
    "anticausal", m=((1.0, 0.0), (-1.0, 1.0))
  ),
  "selection_on_x": Setting("causal", selection="x", **_COMPLEX),
  "selection_on_y": Setting("causal", selection="y", **_COMPLEX),
  "selection_on_ay": Setting("causal", selection="ay", **_COMPLEX),
}

SELECT_Y = (0.4, 0.8)  # P(S=1 | y)
SELECT_AY = ((0.8, 0.5), (0.8, 0.25))  # P(S=1 | a, y)


def setting(name: str) -> Setting:
  """The named `Setting` of the paper's simulation study (`SETTINGS`)."""
  errors.check(
    name in SETTINGS,
    errors.ConfigError,
    f"unknown setting {name!r}; expected one of {sorted(SETTINGS)}",
  )
  return SETTINGS[name]


def selection_probability(st: Setting, a, x, y):
  """P(S=1 | .) of the setting's selection mechanism (1 without selection)."""
  if st.selection == "x":
    return jnp.clip(1.0 - 4.0 * x**2 / 25.0, 0.0, 1.0)
  if st.selection == "y":
    return jnp.asarray(SELECT_Y)[y]
  if st.selection == "ay":
    return jnp.asarray(SELECT_AY)[a, y]
  return jnp.ones_like(x)


@functools.partial(jax.jit, static_argnums=(2,))
def simulate(key, st: Setting, n: int) -> dict:
  """n draws of the setting's DGP (before selection; `s` marks selection)."""
  errors.check(n >= 1, errors.ConfigError, f"need n >= 1 draws, got {n}")
  k_u, k_a, k_x, k_y, k_s = jax.random.split(key, 5)
  u = jax.random.bernoulli(k_u, 0.5, (n,)).astype(jnp.int32)
  p_a = st.beta_a * (u == 1) + (1.0 - st.beta_a) * 0.5
  a = jax.random.bernoulli(k_a, p_a).astype(jnp.int32)
  if st.family == "causal":
    x = jnp.asarray(st.mu_x)[u] + jax.random.normal(k_x, (n,))
    p_y = jax.nn.sigmoid(x * jnp.asarray(st.coef)[a] + jnp.asarray(st.bias)[a])
    y = jax.random.bernoulli(k_y, p_y).astype(jnp.int32)
  else:
    p1 = jnp.asarray(st.p_y)[u, 1]
    y = jax.random.bernoulli(k_y, p1).astype(jnp.int32)
    x = jnp.asarray(st.m)[a, y] + jax.random.normal(k_x, (n,))
    p_y = jnp.full((n,), jnp.nan)
  p_s = selection_probability(st, a, x, y)
  s = jax.random.bernoulli(k_s, p_s).astype(jnp.int32)
  return {"u": u, "a": a, "x": x, "y": y, "s": s, "p_y": p_y, "p_s": p_s}


def true_group_probability(st: Setting, x):
  """P(A=1 | X=x) of a causal setting, in closed form (U a 2-Gaussian mix)."""
  errors.check(
    st.family == "causal",
    errors.ConfigError,
    "the closed-form P(A | X) exists for the causal family only",
  )
  mu = jnp.asarray(st.mu_x)
  log_lik = -0.5 * (x[:, None] - mu) ** 2  # U = 0, 1 (equal priors)
  p_u1 = jax.nn.softmax(log_lik, axis=-1)[:, 1]
  return st.beta_a * p_u1 + (1.0 - st.beta_a) * 0.5
