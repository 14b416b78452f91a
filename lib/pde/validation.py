"""Host-side checks of user-supplied fields before a jitted rollout.

References: Zhou & Barati Farimani, "Hamiltonian Neural PDE Solvers through
Functional Approximation", NeurIPS 2025 (periodic-domain assumption).
"""

import numpy as np

from lib.core import errors


def check_initial_condition(u0, n_x, *, periodic_factor=4.0):
  """Raises a UserError unless u0 [..., n_x] is finite and periodic.

  Periodicity is judged on the end-point-excluded grid: the wrap-around jump
  |u_0 - u_{n-1}| must be at most `periodic_factor` times the largest
  interior jump |u_{i+1} - u_i| (plus a small absolute slack). A ramp or a
  grid that duplicates the end point of a non-periodic signal fails.

  Args:
    u0: array [..., n_x] (numpy or jax).
    n_x: the grid size the model/solver was built for.
    periodic_factor: tolerance factor on the wrap-around jump.

  Raises:
    ShapeError: wrong grid size.
    NonFiniteError: NaN or inf values.
    ValueError (UserError): the field is not periodic.
  """
  u = np.asarray(u0)
  errors.check(
    u.ndim >= 1 and u.shape[-1] == n_x,
    errors.ShapeError,
    f"initial condition has grid size {u.shape[-1] if u.ndim else None} "
    f"(shape {u.shape}), but the model/grid expects n_x = {n_x}",
  )
  errors.check(
    bool(np.all(np.isfinite(u))),
    errors.NonFiniteError,
    f"initial condition has {int(np.sum(~np.isfinite(u)))} non-finite values",
  )
  errors.check(
    n_x >= 2, errors.ShapeError, f"a periodic grid needs n_x >= 2, got {n_x}"
  )
  interior = np.max(np.abs(np.diff(u, axis=-1)), axis=-1)
  wrap = np.abs(u[..., 0] - u[..., -1])
  scale = np.max(np.abs(u), axis=-1)
  bad = wrap > periodic_factor * interior + 1e-6 * (1.0 + scale)
  if np.any(bad):
    # The first offending field's own numbers (not the batch's extremes).
    first = tuple(int(i) for i in np.argwhere(np.atleast_1d(bad))[0])
    where = f" (field {list(first)} of {u.shape[:-1]})" if u.ndim > 1 else ""
    raise errors.ConfigError(
      f"initial condition is not periodic{where}: the wrap-around jump "
      f"|u[0] - u[-1]| = {float(np.atleast_1d(wrap)[first]):.3g} exceeds "
      f"{periodic_factor}x its largest interior jump "
      f"({float(np.atleast_1d(interior)[first]):.3g}); the domain is "
      "periodic with the end point excluded"
    )
