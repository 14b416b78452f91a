"""The SADL method: two half-sketches of the delta, a sketched Adam server.

`scale_by_sketched_adam` / `sketched_adam` are the server optimizer as optax
transformations (Adam or AMSGrad on de-sketched averages, the second moment
fed by an independent half-sketch); `sadl` wraps it into a `Method` (what a
client sends, what the server does with the average).

References:
  Chen, Li, Banerjee. "Sketched Adaptive Distributed Deep Learning: A Sharp
  Convergence Analysis", NeurIPS 2025 (Alg. 1-2; eps finding: spec B.5).
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp
import optax

from lib.core import errors
from lib.optim import sketch as sketch_lib
from lib.optim.sadl import method as method_lib


class ScaleBySketchedAdamState(NamedTuple):
  """State of `scale_by_sketched_adam`."""

  count: jax.Array  # scalar int32: server steps taken
  mu: optax.Updates  # EMA of de-sketched deltas (first half-sketch)
  nu: optax.Updates  # EMA of squared de-sketched deltas (second half-sketch)
  nu_max: optax.Updates  # AMSGrad's running max of nu; None for Adam


def scale_by_sketched_adam(
  *,
  b1: float = 0.9,
  b2: float = 0.999,
  eps: float = 1e-3,
  amsgrad: bool = False,
) -> optax.GradientTransformationExtraArgs:
  """Adam/AMSGrad direction from two independent de-sketched estimates.

  `update(updates, state, params, second_moment_updates=...)`: `updates` is the
  de-sketched first half (feeds m), `second_moment_updates` the de-sketched
  second half (squared, feeds v). Using independent halves keeps the numerator
  independent of the preconditioner; the square of a de-sketched vector
  over-estimates the true square by about ||delta||^2 / (b/2) per coordinate,
  which acts like a large data-dependent eps. Without `second_moment_updates`
  (identity sketch) Adam is exactly `optax.scale_by_adam` (bias-corrected).
  AMSGrad is the paper's Alg. 2: m_t / (sqrt(v_hat_t) + eps) with v_hat_t =
  max(v_hat_{t-1}, v_t) and no bias correction of m or v (optax's
  `scale_by_amsgrad` corrects both and takes the max of the corrected v:
  its early steps are (1 - b1) / sqrt(1 - b2) times the paper's).

  eps defaults to 1e-3, not 1e-8: the theory's bound scales with 1/eps and in
  the power-law quadratic sweep eps=1e-8 degrades with d (spec B.5).

  Args:
    b1: first-moment decay, the paper's beta_1.
    b2: second-moment decay, the paper's beta_2.
    eps: the paper's epsilon in m_t / (sqrt(v_hat_t) + eps), added to the
      square root (outside it).
    amsgrad: the paper's AMSGrad (running max of v, no bias correction)
      instead of Adam (bias-corrected m and v).

  Returns:
    An optax transformation producing the (positive) step direction
    m_hat / (sqrt(v_hat) + eps) (AMSGrad: m / (sqrt(max v) + eps));
    `sketched_adam` scales it by -kappa.

  References:
    Chen, Li, Banerjee, SADL, NeurIPS 2025, Alg. 2 (ADA_OPT).
  """

  def init_fn(params):
    zeros = optax.tree.zeros_like(params)
    return ScaleBySketchedAdamState(
      count=jnp.zeros([], jnp.int32),
      mu=zeros,
      nu=optax.tree.zeros_like(params),
      nu_max=optax.tree.zeros_like(params) if amsgrad else None,
    )

  def update_fn(
    updates, state, params=None, *, second_moment_updates=None, **_
  ):
    del params
    second = updates if second_moment_updates is None else second_moment_updates
    mu = optax.tree.update_moment(updates, state.mu, b1, 1)
    nu = optax.tree.update_moment_per_elem_norm(second, state.nu, b2, 2)
    count = optax.safe_increment(state.count)
    nu_max = None
    if amsgrad:  # Alg. 2: v_hat_t = max(v_hat_{t-1}, v_t), no correction.
      nu_max = jax.tree.map(jnp.maximum, state.nu_max, nu)
      mu_hat, nu_hat = mu, nu_max
    else:
      mu_hat = optax.tree.bias_correction(mu, b1, count)
      nu_hat = optax.tree.bias_correction(nu, b2, count)
    direction = jax.tree.map(
      lambda m, v: m / (jnp.sqrt(v) + eps), mu_hat, nu_hat
    )
    return direction, ScaleBySketchedAdamState(count, mu, nu, nu_max)

  return optax.GradientTransformationExtraArgs(init_fn, update_fn)


def sketched_adam(
  learning_rate: optax.ScalarOrSchedule,
  *,
  b1: float = 0.9,
  b2: float = 0.999,
  eps: float = 1e-3,
  amsgrad: bool = False,
  weight_decay: float = 0.0,
) -> optax.GradientTransformationExtraArgs:
  """SADL server optimizer: `scale_by_sketched_adam`, decay, -learning_rate.

  Args:
    learning_rate: server learning rate kappa (float, traced scalar or optax
      schedule).
    b1: first-moment decay.
    b2: second-moment decay.
    eps: denominator epsilon (1e-3 default, see `scale_by_sketched_adam`).
    amsgrad: AMSGrad instead of Adam.
    weight_decay: decoupled weight decay (AdamW style); 0 disables.

  Returns:
    An optax transformation; pass the de-sketched second half as the
    `second_moment_updates` keyword of `update`.

  References:
    Chen, Li, Banerjee, SADL, NeurIPS 2025.
  """
  parts = [scale_by_sketched_adam(b1=b1, b2=b2, eps=eps, amsgrad=amsgrad)]
  if not errors.is_static_zero(weight_decay):
    parts.append(optax.add_decayed_weights(weight_decay))
  parts.append(optax.scale_by_learning_rate(learning_rate))
  return optax.chain(*parts)


def sadl(
  *,
  dim: int,
  sketch_size: int,
  learning_rate: optax.ScalarOrSchedule,
  sketch_kind: str = "srht",
  b1: float = 0.9,
  b2: float = 0.999,
  eps: float = 1e-3,
  amsgrad: bool = False,
  weight_decay: float = 0.0,
  split_sketch: bool = True,
) -> method_lib.Method:
  """SADL: sketch the delta in two halves; sketched Adam/AMSGrad server.

  A client's message for its delta Delta = x_{t,0} - x_{t,K} is
  [R_t^(1) Delta, R_t^(2) Delta], two independent sketches of b // 2 and
  b - b // 2 rows built from the round key (the paper's m-bar^c, Alg. 1
  step 3). The server de-sketches the averaged halves and feeds the first to
  m_t and the square of the second to v_t (Alg. 2, ADA_OPT), then
  x_{t+1} = x_t - kappa * (m_hat / (sqrt(v_hat) + eps) + weight_decay * x_t).

  `split_sketch=False` sends one sketch of all b rows and feeds its
  de-sketched average to both moments: plain Adam on the de-sketched delta,
  the reading of the experiments' "Adam as the server optimizer" (a
  repository thought to be the first author's, not confirmed as the
  official release, sketches once). The numerator gets all b rows, and the
  same noise enters the numerator and the preconditioner.

  Args:
    dim: number of model parameters d.
    sketch_size: b numbers sent per client per round (b/2 per half), b < d;
      with sketch_kind="identity" it must equal d (uncompressed Adam).
    learning_rate: server learning rate kappa (float, traced scalar, e.g. one
      of a vmapped sweep, or schedule).
    sketch_kind: "srht" (paper default), "gaussian", "countsketch", "identity".
    b1: first-moment decay beta_1.
    b2: second-moment decay beta_2.
    eps: denominator epsilon.
    amsgrad: AMSGrad (the analysis) instead of Adam (the experiments).
    weight_decay: decoupled weight decay.
    split_sketch: two independent half-sketches (Alg. 2), or one sketch of
      b rows for both moments.

  Returns:
    A `Method`.

  Raises:
    ConfigError: b >= d, b < 2, or unknown kind.

  References:
    Chen, Li, Banerjee, SADL, NeurIPS 2025, Alg. 1-2.
  """
  dim = method_lib.check_dim(dim)
  if sketch_kind not in sketch_lib.SKETCH_KINDS:
    raise errors.ConfigError(
      f"unknown sketch kind {sketch_kind!r}; expected one of "
      f"{sketch_lib.SKETCH_KINDS}"
    )
  tx = sketched_adam(
    learning_rate,
    b1=b1,
    b2=b2,
    eps=eps,
    amsgrad=amsgrad,
    weight_decay=weight_decay,
  )
  name = "amsgrad" if amsgrad else "adam"
  value_bytes = method_lib.BYTES_PER_VALUE
  if sketch_kind == "identity":
    if sketch_size != dim:
      raise errors.ConfigError(
        f"identity sketch sends the whole delta: sketch_size must be d={dim}, "
        f"got {sketch_size}"
      )

    def encode(delta, key):
      del key
      return delta

    def apply(msg, state, params, key):
      del key
      updates, state = tx.update(msg, state, params)
      return params + updates, state

    return method_lib.Method(
      name=f"distributed_{name}",
      dim=dim,
      init=tx.init,
      encode=encode,
      apply=apply,
      bytes_up=dim * value_bytes,
      bytes_down=dim * value_bytes,
    )

  if sketch_size >= dim:
    raise errors.ConfigError(
      f"sketch_size={sketch_size} must be smaller than the model dimension "
      f"d={dim}; use sketch_kind='identity' for no compression"
    )
  if not split_sketch:
    return one_sketch_method(
      tx,
      name=f"sadl_{name}_one_sketch",
      dim=dim,
      sketch_size=sketch_size,
      sketch_kind=sketch_kind,
    )
  if sketch_size < 2:
    raise errors.ConfigError(
      f"SADL needs sketch_size >= 2 (two half-sketches), got {sketch_size}"
    )
  half1 = sketch_size // 2
  half2 = sketch_size - half1

  def halves(key):
    # Two independent sketches of size b/2, each scaled to be unbiased.
    first = sketch_lib.make_sketch(
      jax.random.fold_in(key, 0), dim, half1, kind=sketch_kind
    )
    second = sketch_lib.make_sketch(
      jax.random.fold_in(key, 1), dim, half2, kind=sketch_kind
    )
    return first, second

  def encode(delta, key):
    (sk1, _), (sk2, _) = halves(key)
    return jnp.concatenate([sk1(delta), sk2(delta)])

  def apply(msg, state, params, key):
    (_, desk1), (_, desk2) = halves(key)
    first, second = desk1(msg[:half1]), desk2(msg[half1:])
    updates, state = tx.update(
      first, state, params, second_moment_updates=second
    )
    return params + updates, state

  return method_lib.Method(
    name=f"sadl_{name}",
    dim=dim,
    init=tx.init,
    encode=encode,
    apply=apply,
    bytes_up=sketch_size * value_bytes,
    bytes_down=sketch_size * value_bytes,
  )


def one_sketch_method(
  tx: optax.GradientTransformation,
  *,
  name: str,
  dim: int,
  sketch_size: int,
  sketch_kind: str = "srht",
) -> method_lib.Method:
  """Clients send R_t delta (b numbers, a fresh R_t per round); the server
  applies `tx` to the de-sketched average R_t^T R_t mean(delta).

  Sketched SGD (`optax.sgd`) and SADL with one sketch (`split_sketch=False`:
  the sketched Adam server) are this method with their own `tx`.

  Raises:
    ConfigError: an unknown sketch_kind, or sketch_size >= dim.
  """
  sketch_lib.check_sizes(dim, sketch_size, sketch_kind)

  def encode(delta, key):
    sk, _ = sketch_lib.make_sketch(key, dim, sketch_size, kind=sketch_kind)
    return sk(delta)

  def apply(msg, state, params, key):
    _, desk = sketch_lib.make_sketch(key, dim, sketch_size, kind=sketch_kind)
    updates, state = tx.update(desk(msg), state, params)
    return params + updates, state

  return method_lib.Method(
    name=name,
    dim=dim,
    init=tx.init,
    encode=encode,
    apply=apply,
    bytes_up=sketch_size * method_lib.BYTES_PER_VALUE,
    bytes_down=sketch_size * method_lib.BYTES_PER_VALUE,
  )
