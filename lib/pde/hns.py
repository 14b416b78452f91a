"""Hamiltonian Neural Solver: an integral-kernel functional H_theta[u].

H_theta[u] = sum_i mu_i dx <kappa_theta(x_i, u_i | u), P_u u_i>, with a
SIREN kernel whose layers are FiLM-modulated by a local MLP of P_u u_i or by a
global circular CNN of the whole lifted field. Its functional derivative is
`grad(H_theta)(u) / (mu dx)` by autodiff; the rollout integrates
u_t = J dH_theta/du.

References: Zhou & Barati Farimani, "Hamiltonian Neural PDE Solvers through
Functional Approximation", NeurIPS 2025, Sec. 3, eq. 7, App. B.3.
"""

import functools
from collections.abc import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from lib.core import errors
from lib.pde import derivatives

FILMS = ("none", "local", "global")
KERNELS = ("linear", "nonlinear")


def _siren_init(fan_in_scale):
  """U(-s, s) initialiser for SIREN layers."""

  def init(key, shape, dtype=jnp.float32):
    return jax.random.uniform(
      key, shape, dtype, minval=-fan_in_scale, maxval=fan_in_scale
    )

  return init


class IntegralKernelFunctional(nn.Module):
  """H_theta[u] for one field u [n] on points x [n] with weights mu dx [n].

  Attributes:
    length: domain length; x is divided by it before the Fourier lift.
    width: SIREN hidden width.
    num_layers: SIREN layers (all sine layers, the last one too).
    proj_dim: lift dimension of P_u u and of the coordinate features.
    kernel_type: "linear" (the SIREN input is the coordinate features only:
      with film="none", kappa = kappa(x) and dH/du depends on x alone; a
      FiLM of P_u u_i still makes kappa depend on u) or "nonlinear" (the
      SIREN input also sees P_u u_i).
    film: "none", "local" (MLP of P_u u_i) or "global" (circular CNN).
    film_hidden: hidden widths of the FiLM MLP / CNN.
    film_kernel_size: kernel size of the global FiLM CNN.
    omega0: SIREN frequency (the paper uses 1).
    concat_u: with kernel_type "nonlinear", also feed P_u u_i to the SIREN
      input (ours); the official code feeds only the coordinate features
      when FiLM is on and lets u enter through FiLM alone.
    film_per_layer: one FiLM network per SIREN layer (the official code)
      instead of one network whose output is split across layers (ours).
    film_gamma_offset: gamma = offset + raw; ours 1 (FiLM starts near the
      identity), the official code 0.
    normalize_x: divide x by `length` before the Fourier lift (ours); the
      official code lifts raw x, 2 pi (W x + b).
    exact_gelu: erf GELU in the FiLM network (torch's default, the official
      code) instead of flax's tanh approximation (ours).

  `OFFICIAL_NF` holds the settings of the official 'nf' model
  (configs/hamiltonian/adv.yaml of the authors' code: SIREN 32 x (4 + 2)
  layers, local FiLM [32, 32], proj_dim 32), 31,776 parameters.
  """

  length: float
  width: int = 32
  num_layers: int = 4
  proj_dim: int = 32
  kernel_type: str = "nonlinear"
  film: str = "local"
  film_hidden: Sequence[int] = (32, 32)
  film_kernel_size: int = 3
  omega0: float = 1.0
  concat_u: bool = True
  film_per_layer: bool = False
  film_gamma_offset: float = 1.0
  normalize_x: bool = True
  exact_gelu: bool = False

  def setup_check(self):
    errors.check(
      self.film in FILMS,
      errors.ConfigError,
      f"unknown film {self.film!r}; expected one of {FILMS}",
    )
    errors.check(
      self.kernel_type in KERNELS,
      errors.ConfigError,
      f"unknown kernel_type {self.kernel_type!r}; expected one of {KERNELS}",
    )
    errors.check(
      self.proj_dim % 2 == 0,
      errors.ConfigError,
      f"proj_dim must be even, got {self.proj_dim}",
    )

  def __call__(self, u, x, mu_dx):
    """H_theta[u] = sum_i mu_i dx e_i (quadrature of the density)."""
    return jnp.sum(mu_dx * self.density(u, x))

  @property
  def pointwise(self) -> bool:
    """True when e_i depends on u_i alone (no global FiLM CNN)."""
    return self.film != "global"

  @nn.compact
  def density(self, u, x):
    """Energy density e_i = <kappa_theta(x_i, u_i | u), P_u u_i>, [n]."""
    self.setup_check()
    errors.check(
      u.ndim == 1 and x.shape == u.shape,
      errors.ShapeError,
      f"IntegralKernelFunctional takes one field u [n] on points x [n], got "
      f"u {u.shape} and x {x.shape} (vmap over a batch of fields)",
    )
    pu = nn.Dense(self.proj_dim, name="lift_u")(u[:, None])  # [n, P]
    xs = x / self.length if self.normalize_x else x
    freq = nn.Dense(
      self.proj_dim // 2,
      name="lift_x",
      kernel_init=nn.initializers.normal(1.0),
    )(xs[:, None])
    h = jnp.concatenate(
      [jnp.cos(2 * jnp.pi * freq), jnp.sin(2 * jnp.pi * freq)], axis=-1
    )
    if self.kernel_type == "nonlinear" and (
      self.concat_u or self.film == "none"
    ):
      h = jnp.concatenate([h, pu], axis=-1)
    widths = [self.width] * (self.num_layers - 1) + [self.proj_dim]
    films = [None] * len(widths)
    if self.film != "none" and self.film_per_layer:
      films = [self._film(pu, 2 * w, f"film{i}_") for i, w in enumerate(widths)]
    elif self.film != "none":
      film = self._film(pu, sum(2 * w for w in widths), "film_")
      splits = np.cumsum([2 * w for w in widths])[:-1]
      films = jnp.split(film, splits, axis=-1)
    for layer, w in enumerate(widths):
      fan_in = h.shape[-1]
      scale = (
        1.0 / fan_in if layer == 0 else jnp.sqrt(6.0 / fan_in) / self.omega0
      )
      h = nn.Dense(w, kernel_init=_siren_init(scale), name=f"siren_{layer}")(h)
      h = jnp.sin(self.omega0 * h)
      if films[layer] is not None:
        gamma, beta = jnp.split(films[layer], 2, axis=-1)
        h = (self.film_gamma_offset + gamma) * h + beta
    return jnp.sum(h * pu, axis=-1)

  def _film(self, pu, out_dim, prefix):
    gelu = functools.partial(nn.gelu, approximate=not self.exact_gelu)
    if self.film == "local":
      z = pu
      for i, w in enumerate(self.film_hidden):
        z = gelu(nn.Dense(w, name=f"{prefix}dense_{i}")(z))
      return nn.Dense(out_dim, name=f"{prefix}out")(z)
    z = pu
    k = self.film_kernel_size
    for i, w in enumerate(self.film_hidden):
      z = gelu(PeriodicConv(w, k, name=f"{prefix}conv_{i}")(z))
    return PeriodicConv(out_dim, k, name=f"{prefix}out")(z)


# The official 'nf' advection model (authors' configs/hamiltonian/adv.yaml):
# hidden_layers 4 + first + last = 6 sine layers of width 32, local FiLM
# MLP [32, 32, 32, 64] per layer, proj_dim 32, SIREN input = coordinate
# features only. 6 x 1,056 + 6 x 4,224 + 64 + 32 = 31,776 parameters.
OFFICIAL_NF = dict(
  width=32,
  num_layers=6,
  proj_dim=32,
  kernel_type="nonlinear",
  film="local",
  film_hidden=(32, 32),
  film_kernel_size=3,
  omega0=1.0,
  concat_u=False,
  film_per_layer=True,
  film_gamma_offset=0.0,
  normalize_x=False,
  exact_gelu=True,
)


class PeriodicConv(nn.Module):
  """1D convolution with circular padding as one matmul over rolled copies.

  [n, c_in] -> [n, features]. We avoid `nn.Conv(padding="CIRCULAR")`
  because XLA:CPU runs convolutions inside `lax.scan` (the training loop)
  about 30x slower than outside; rolls + a matmul do not have that problem.
  """

  features: int
  kernel_size: int

  @nn.compact
  def __call__(self, x):
    c_in = x.shape[-1]
    kernel = self.param(
      "kernel",
      nn.initializers.lecun_normal(),
      (self.kernel_size * c_in, self.features),
    )
    bias = self.param("bias", nn.initializers.zeros, (self.features,))
    half = self.kernel_size // 2
    patches = jnp.concatenate(
      [jnp.roll(x, half - j, axis=0) for j in range(self.kernel_size)], axis=-1
    )
    return patches @ kernel + bias


class KernelMLPFunctional(nn.Module):
  """The plain IKF H[u] = sum_i mu_i dx kappa(x_i[, u_i]) u_i, kappa a GELU MLP.

  The paper's "linear" (kappa(x)) and "nonlinear" (concat kappa(x, u))
  kernels before FiLM/SIREN (App. B.3 ablation base). Used for the toy
  functionals of Table 1: trained on scalar F only, the moments of kappa
  are all the data fix; the zero-initialised output and the smooth GELU
  MLP make kappa the simplest function with those moments, which is what
  gives a meaningful functional derivative (a SIREN/Fourier-feature kernel
  keeps random high-frequency parts the loss cannot see).

  Attributes:
    hidden: hidden widths.
    kernel_type: "linear" (kappa(x)) or "nonlinear" (kappa(x, u)).
  """

  hidden: Sequence[int] = (64, 64)
  kernel_type: str = "linear"

  @nn.compact
  def __call__(self, u, x, mu_dx):
    errors.check(
      self.kernel_type in KERNELS,
      errors.ConfigError,
      f"unknown kernel_type {self.kernel_type!r}; expected one of {KERNELS}",
    )
    # A [B, n] batch would broadcast against kappa [n] and be summed into one
    # number for the whole batch: vmap instead.
    errors.check(
      u.ndim == 1 and x.shape == u.shape,
      errors.ShapeError,
      f"KernelMLPFunctional takes one field u [n] on points x [n], got u "
      f"{u.shape} and x {x.shape} (vmap over a batch of fields)",
    )
    z = x[:, None] if self.kernel_type == "linear" else jnp.stack([x, u], -1)
    for w in self.hidden:
      z = nn.gelu(nn.Dense(w)(z))
    kappa = nn.Dense(1, kernel_init=nn.initializers.zeros)(z)[:, 0]
    return jnp.sum(mu_dx * kappa * u)


class MLPFunctional(nn.Module):
  """Baseline F[u] = MLP([x, u]) -> scalar (HNS Table 1's MLP)."""

  hidden: Sequence[int] = (32, 32)

  @nn.compact
  def __call__(self, u, x, mu_dx):
    del mu_dx
    z = jnp.concatenate([x, u])
    for w in self.hidden:
      z = nn.gelu(nn.Dense(w)(z))
    return nn.Dense(1)(z)[0]


class PeriodicCNN(nn.Module):
  """1D CNN with circular padding, [n] -> [n] (du/dt or next-step baseline).

  Attributes:
    channels: hidden channel widths.
    kernel_size: convolution kernel size.
    residual: if True the output is u + CNN(u). `solver` leaves it off: its
      next-step baseline predicts u_{t+1} itself (next_step_target "state",
      the official 'normal' mode) or u_{t+1} - u_t ("increment", ours),
      where the rollout adds u.
    derivative_stencil: None, or the d/dx stencil ("central", "smooth",
      "spectral") of a second input channel J u = d/dx u on the periodic
      domain of `length`. It hands the baselines the J operator HNS's
      rollout applies (u_t = J dH/du), so that an exact (spectral) J is not
      an advantage of HNS alone [ours; the paper's baselines see u only].
    length: periodic domain length (used with derivative_stencil).
  """

  channels: Sequence[int] = (32, 32, 32, 32)
  kernel_size: int = 5
  residual: bool = False
  derivative_stencil: str | None = None
  length: float = 0.0

  @nn.compact
  def __call__(self, u):
    # A [B, n] batch would be convolved across the batch axis: vmap instead.
    errors.check(
      u.ndim == 1,
      errors.ShapeError,
      f"PeriodicCNN takes one field u [n], got shape {u.shape} (vmap over a "
      "batch of fields)",
    )
    z = u[:, None]
    if self.derivative_stencil is not None:
      errors.check(
        self.length > 0,
        errors.ConfigError,
        f"PeriodicCNN with derivative_stencil needs length > 0, got "
        f"{self.length}",
      )
      u_x = derivatives.first_derivative(
        u,
        dx=self.length / u.shape[-1],
        length=self.length,
        stencil=self.derivative_stencil,
      )
      z = jnp.stack([u, u_x], axis=-1)
    for c in self.channels:
      z = nn.gelu(PeriodicConv(c, self.kernel_size)(z))
    out = PeriodicConv(1, self.kernel_size)(z)[:, 0]
    return u + out if self.residual else out


def functional_derivative(hamiltonian_fn, u, mu_dx):
  """dH/du(x_i) = (dH/du_i) / (mu_i dx) by autodiff.

  Args:
    hamiltonian_fn: u [n] -> scalar H (quadrature already inside).
    u: [n] field.
    mu_dx: [n] quadrature weights times dx (dx^d in d dims).

  Returns:
    [n] functional derivative at the grid points.
  """
  return jax.grad(hamiltonian_fn)(u) / mu_dx


def hamiltonian_vector_field(derivative_fn, j_operator):
  """f(u) = J dH/du as a function for the integrators."""
  return lambda u: j_operator(derivative_fn(u))
