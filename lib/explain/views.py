"""Orthonormal Haar views of a time series and attributions inside a view.

MIX (Tran, Doan, Zhang, Pham, Nguyen, Nguyen, Vandierendonck, Assent, Mai;
"MIX: multi-view time-frequency explanations", NeurIPS 2025; no official
code). View r is the level-r Haar DWT of the series: r stages of
(approximation, detail) splits of the running approximation, as one
orthonormal matrix H_r [n, n] (level 0 = the time domain). The explained
function in view r is f_r(c) = f(H_r^T c), so gradients with respect to the
coefficients come by autodiff through the linear inverse [inferred from the
project page: view = the level-r coefficients, same length as the input].

- `integrated_gradients`: IG of any scalar JAX function (midpoint Riemann
  sum, the path vmapped).
- `view_ig` (IGV): IG in coefficient space, baseline = the DWT of the
  baseline series.
- `osigv` (OSIGV, "sum" mode): overlapping windows of length L, stride s;
  a segment's score is the sum of its IGV attributions (pointwise IG along
  the full path), a point's score the mean over the windows covering it
  (so L = s gives each point its segment's sum: the spec's oracle 4, "OSIGV
  with L = s equals the sum of IGV over each segment").
- `segment_ig` / `osigv_segment_ig` (OSIGV, "segment_ig" mode): the spec's
  inferred SIG-style reading, "the IG of the whole window as a group (IG
  along a path that moves only that window)": window W's score is
  g(c) - g(c with W at the baseline) by completeness along the path that
  moves only W's coefficients, the others held at x's. It equals the "sum"
  mode for a function additive in the view's coefficients, not in general
  (so oracle 4 holds for additive f only). Points: the same mean over the
  covering windows (`points_from_segments`).
- `kigv` (KIGV, inferred): keystone-first IG, a two-stage path that first
  moves the keystone coefficients, then the rest; completeness still holds.
"""

import jax
import jax.numpy as jnp
import numpy as np

from lib.core import errors


def check_series(x, level: int) -> None:
  """One-line errors: NaN/inf, or a length the level cannot split."""
  x = np.asarray(x)
  errors.check(
    bool(np.all(np.isfinite(x))),
    errors.NonFiniteError,
    f"the series has {int(np.sum(~np.isfinite(x)))} NaN or infinite values",
  )
  n = x.shape[-1]
  errors.check(
    level >= 0 and n % (2**level) == 0,
    errors.ShapeError,
    f"a level-{level} Haar DWT needs a length divisible by {2**level}, got {n}",
  )


def haar_matrix(n: int, level: int, dtype=np.float64) -> np.ndarray:
  """Orthonormal level-`level` Haar analysis matrix H [n, n]: c = H x.

  Rows: approximation coefficients first, then details from the coarsest to
  the finest level.
  """
  errors.check(
    level >= 0 and n % (2**level) == 0 and n >= 1,
    errors.ShapeError,
    f"a level-{level} Haar DWT needs a length divisible by {2**level}, got {n}",
  )
  h = np.eye(n, dtype=np.float64)
  m = n
  details = []
  for _ in range(level):
    approx = (h[0:m:2] + h[1:m:2]) / np.sqrt(2.0)
    detail = (h[0:m:2] - h[1:m:2]) / np.sqrt(2.0)
    details.insert(0, detail)
    h = np.concatenate([approx, h[m:]], axis=0) if m < n else approx
    m //= 2
  out = np.concatenate([h[:m]] + details, axis=0) if level else h
  return out.astype(dtype)


def _floating(x):
  """x itself if floating, else in the default float dtype (an integer H
  would round every 1/sqrt(2) entry to 0)."""
  x = jnp.asarray(x)
  if jnp.issubdtype(x.dtype, jnp.floating):
    return x
  return x.astype(jnp.result_type(float))


def dwt(x, level: int):
  """Level-`level` Haar coefficients of x [..., n] (orthonormal)."""
  x = _floating(x)
  h = jnp.asarray(haar_matrix(x.shape[-1], level, np.dtype(x.dtype)))
  return x @ h.T


def idwt(c, level: int):
  """Inverse of `dwt`: x = H^T c."""
  c = _floating(c)
  h = jnp.asarray(haar_matrix(c.shape[-1], level, np.dtype(c.dtype)))
  return c @ h


def integrated_gradients(f, x, baseline, steps: int = 64):
  """IG_i = (x - x')_i * mean_k df/dx_i(x' + a_k (x - x')), a_k midpoints.

  Raises:
    ConfigError: steps < 1 (the mean over no points is NaN).
  """
  errors.check(
    steps >= 1, errors.ConfigError, f"IG needs steps >= 1, got {steps}"
  )
  alphas = (jnp.arange(steps, dtype=x.dtype) + 0.5) / steps
  grads = jax.vmap(lambda a: jax.grad(f)(baseline + a * (x - baseline)))(alphas)
  return (x - baseline) * jnp.mean(grads, axis=0)


def view_ig(f, x, baseline, level: int, steps: int = 64):
  """IGV: IG of c -> f(idwt(c)) at dwt(x) against dwt(baseline)."""
  g = lambda c: f(idwt(c, level))
  return integrated_gradients(g, dwt(x, level), dwt(baseline, level), steps)


def window_starts(n: int, window: int, stride: int) -> np.ndarray:
  """OSIGV's window starts 0, stride, ...; one more at n - window when the
  stride leaves a tail uncovered."""
  errors.check(
    1 <= window <= n,
    errors.ShapeError,
    f"window {window} is longer than the series ({n}) or < 1",
  )
  errors.check(
    stride >= 1, errors.ConfigError, f"stride must be >= 1, got {stride}"
  )
  # A stride longer than the window leaves points in no window (their OSIGV
  # score would be 0 / 0).
  errors.check(
    stride <= window,
    errors.ConfigError,
    f"stride {stride} > window {window} leaves points uncovered",
  )
  starts = list(range(0, n - window + 1, stride))
  if starts[-1] + window < n:  # the tail gets a window too
    starts.append(n - window)
  return np.asarray(starts)


def _window_members(n: int, window: int, stride: int, dtype) -> jnp.ndarray:
  """Membership matrix [W, n] of OSIGV's windows (1 inside window w)."""
  starts = window_starts(n, window, stride)
  member = np.zeros((len(starts), n), np.float32)
  for i, s in enumerate(starts):
    member[i, s : s + window] = 1.0
  return jnp.asarray(member, dtype)


def points_from_segments(segments, n: int, window: int, stride: int):
  """Point scores [..., n] from segment scores [..., W] (W windows of
  `window_starts(n, window, stride)`): each point's mean over the windows
  covering it (OSIGV's point score, either mode)."""
  segments = _floating(segments)
  member = _window_members(n, window, stride, segments.dtype)
  errors.check(
    segments.shape[-1] == member.shape[0],
    errors.ShapeError,
    f"{segments.shape[-1]} segment scores for {member.shape[0]} windows "
    f"(n={n}, window={window}, stride={stride})",
  )
  return (segments @ member) / jnp.sum(member, axis=0)


def osigv(attributions, window: int, stride: int):
  """Point scores from segment sums of attributions over overlapping windows
  (OSIGV's "sum" mode: satisfies the spec's oracle 4)."""
  attributions = _floating(attributions)
  n = attributions.shape[-1]
  member = _window_members(n, window, stride, attributions.dtype)
  seg = attributions @ member.T  # [..., W] segment sums
  return points_from_segments(seg, n, window, stride)


def segment_ig(
  f, x, baseline, level: int, window: int, stride: int, steps: int = 64
):
  """SIG-style segment IG of every OSIGV window in view `level` [W].

  MIX's OSIGV as the spec infers it ("the IG of the whole window as a
  group: IG along a path that moves only that window"; the segment-level IG
  of the same group's InteDisUX, AAAI-25). With g(c) = f(idwt(c)), c, c'
  the coefficients of x and the baseline and m_w window w's mask, the path
  is c(a) = c - (1 - a) m_w (c - c'), from c with w's coefficients at the
  baseline's (a = 0) to c (a = 1), and the score is the group IG

    S_w = mean_k grad g(c(a_k)) . (m_w (c - c')),  a_k midpoints,

  a directional derivative per point (one jvp), vmapped over windows and
  path points. By completeness S_w -> g(c) - g(c - m_w (c - c')) as steps
  grow. Costs W x `steps` evaluations (IGV: `steps` gradients).

  Raises:
    ConfigError: steps < 1; a stride > window (see `window_starts`).
    ShapeError: a window longer than the series.
  """
  errors.check(
    steps >= 1, errors.ConfigError, f"IG needs steps >= 1, got {steps}"
  )
  g = lambda c: f(idwt(c, level))
  c, c0 = dwt(x, level), dwt(baseline, level)
  member = _window_members(c.shape[-1], window, stride, c.dtype)
  moves = member * (c - c0)  # [W, n]: each window's displacement
  alphas = (jnp.arange(steps, dtype=c.dtype) + 0.5) / steps

  def directional(move, a):  # d/da g(c(a)) at a
    return jax.jvp(g, (c - (1.0 - a) * move,), (move,))[1]

  per_point = jax.vmap(jax.vmap(directional, (None, 0)), (0, None))
  return jnp.mean(per_point(moves, alphas), axis=-1)


def osigv_segment_ig(
  f, x, baseline, level: int, window: int, stride: int, steps: int = 64
):
  """OSIGV's "segment_ig" mode: point scores [n] in view `level`, each the
  mean of `segment_ig` over the windows covering it."""
  seg = segment_ig(f, x, baseline, level, window, stride, steps)
  return points_from_segments(seg, x.shape[-1], window, stride)


def kigv(f, x, baseline, level: int, keystone, steps: int = 64):
  """Keystone-first IG in view `level` (inferred two-stage path).

  Stage 1 moves the keystone coefficients (mask [n]) from the baseline to x;
  stage 2 moves the rest. Each stage is a straight-line IG; the sum of the
  two attributions satisfies completeness f(x) - f(x').
  """
  g = lambda c: f(idwt(c, level))
  c, c0 = dwt(x, level), dwt(baseline, level)
  mask = keystone.astype(c.dtype)
  mid = c0 + mask * (c - c0)
  return integrated_gradients(g, mid, c0, steps) + integrated_gradients(
    g, c, mid, steps
  )


def to_time(attributions, level: int, signed: bool = False):
  """Coefficient attributions -> time scores |H|^T |a| (ours, for ranking).

  `signed`: |H|^T a, each coefficient's attribution with its sign spread
  over its support: the ranking for deletion, where removing evidence
  against the class raises its probability (deletion AUC ranks signed).
  """
  attributions = _floating(attributions)
  h = jnp.abs(jnp.asarray(haar_matrix(attributions.shape[-1], level)))
  a = attributions if signed else jnp.abs(attributions)
  return a @ h.astype(attributions.dtype)
