"""bench_hns peer mode: the authors' PyTorch 'nf' model, timed beside ours.

Given `config.peer_repo` (a user's checkout of the official code of Zhou &
Barati Farimani, "Hamiltonian Neural PDE Solvers through Functional
Approximation", NeurIPS 2025) and an importable torch + einops (neither is in
our requirements), this builds their `Neural_Functional` with the advection
'nf' settings (configs/hamiltonian/adv.yaml), copies its initial weights into
our `IntegralKernelFunctional(**hns.OFFICIAL_NF)`, checks that both give the
same training loss and the same dH/du on one batch, and then times their
training step (forward, autograd dH/du with create_graph, relative L2 on the
labels, backward, AdamW) and their rollout step (dH/du, central J, AB2)
against our jitted ones in alternating rounds. On a GPU backend with a CUDA
build of torch, their model and data live on the same GPU (`Official.device`)
and every timed call of theirs ends with a `torch.cuda.synchronize()`, as ours
end with `block_until_ready`.

Only timing and the parity check live here; nothing of theirs is imported
unless the user points at it.
"""

import os
import sys

import jax
import jax.numpy as jnp
import numpy as np

from lib.core import errors
from lib.core import stats as stats_lib

# configs/hamiltonian/adv.yaml, model.nf (their keys).
NF_CONFIG = {
  "kernel_name": "siren",
  "func_dim": 1,
  "coord_dim": 1,
  "kernel_type": "nonlinear",
  "quadrature": "trapezoidal",
  "proj_dim": 32,
  "mlp": {
    "hidden_features": 32,
    "hidden_layers": 4,
    "film_type": "global",
    "film_dims": [16, 32, 32],
    "kernel_size": 3,
  },
  "siren": {
    "hidden_features": 32,
    "hidden_layers": 4,
    "first_omega_0": 1.0,
    "hidden_omega_0": 1.0,
    "outermost_linear": False,
    "film_type": "local",
    "film_dims": [32, 32],
    "kernel_size": 3,
    "periodic_embedding": False,
  },
}
LR, WEIGHT_DECAY = 1e-5, 1e-3  # adv.yaml: AdamW


def load(peer_repo: str):
  """(torch, Neural_Functional) from the user's checkout; one-line errors."""
  marker = os.path.join(peer_repo, "modules", "models", "NeuralFunctional.py")
  if not os.path.isfile(marker):
    raise errors.ConfigError(
      f"config.peer_repo={peer_repo!r} is not a checkout of the official HNS "
      f"code (no modules/models/NeuralFunctional.py)"
    )
  try:
    import einops  # noqa: F401  (their models import it)
    import torch
  except ImportError as e:
    raise errors.ConfigError(
      f"config.peer_repo needs torch and einops importable ({e}); they are "
      f"not in requirements: pip install torch einops"
    ) from None
  if peer_repo not in sys.path:
    sys.path.insert(0, peer_repo)
  from modules.models.NeuralFunctional import Neural_Functional

  return torch, Neural_Functional


def flax_params(model) -> dict:
  """Their Neural_Functional's weights as our OFFICIAL_NF params tree."""

  def dense(linear):
    return {
      "kernel": jnp.asarray(linear.weight.detach().cpu().numpy().T),
      "bias": jnp.asarray(linear.bias.detach().cpu().numpy()),
    }

  kernel, ikf = model.kernel, model.IKF
  p = {"lift_u": dense(ikf.func_proj), "lift_x": dense(ikf.coord_proj)}
  for i, layer in enumerate(kernel.net):
    p[f"siren_{i}"] = dense(layer.linear)
  for i, film in enumerate(kernel.film_layers):
    fcs = film.film_net.fcs
    for j, fc in enumerate(fcs[:-1]):
      p[f"film{i}_dense_{j}"] = dense(fc)
    p[f"film{i}_out"] = dense(fcs[-1])
  return {"params": p}


class Official:
  """Their model, AdamW and one fixed batch [B, n] on the points x [n]."""

  def __init__(self, peer_repo, u, target, x, dx, seed):
    self.torch, neural_functional = load(peer_repo)
    torch = self.torch
    gpu = jax.default_backend() == "gpu" and torch.cuda.is_available()
    self.device = "cuda" if gpu else "cpu"
    torch.manual_seed(seed)  # initialised on CPU: the same weights either way
    self.model = neural_functional(NF_CONFIG).to(self.device)
    self.opt = torch.optim.AdamW(
      self.model.parameters(), lr=LR, weight_decay=WEIGHT_DECAY
    )
    b = u.shape[0]
    as_t = lambda a: torch.tensor(np.asarray(a, np.float32), device=self.device)
    self.u = as_t(u)[..., None]  # b n 1
    self.target = as_t(target)[..., None]
    self.x = as_t(np.broadcast_to(np.asarray(x), u.shape))[..., None]
    self.dx = float(dx)
    self.batch = b

  def grad_h(self, u, create_graph=True):
    """Their dH/du: autograd of H with create_graph, trapezoid rescale."""
    u = u.detach().requires_grad_(True)
    h = self.model(u, self.x)
    return self.model.get_derivative(h, u, self.x) if create_graph else h

  def loss(self):
    """Their ScaledLpLoss(dH/du, labels) on the batch."""
    torch = self.torch
    g = self.grad_h(self.u)
    diff = torch.norm((g - self.target).reshape(self.batch, -1), 2, 1)
    return torch.mean(
      diff / torch.norm(self.target.reshape(self.batch, -1), 2, 1)
    )

  def sync(self):
    if self.device == "cuda":
      self.torch.cuda.synchronize()

  def train(self, steps):
    for _ in range(steps):
      self.opt.zero_grad()
      loss = self.loss()
      loss.backward()
      self.opt.step()
    self.sync()
    return float(loss.detach())

  def rollout(self, steps, dt):
    """AB2 on u_t = d/dx dH/du (periodic central difference), as theirs."""
    torch = self.torch
    u, prev = self.u, None
    for _ in range(steps):
      g = self.grad_h(u)
      f = (torch.roll(g, -1, 1) - torch.roll(g, 1, 1)) / (2 * self.dx)
      u = u + dt * (f if prev is None else 1.5 * f - 0.5 * prev)
      u, prev = u.detach(), f.detach()
    self.sync()
    return u


def speedup(t_ours, t_theirs, per_call):
  """{ours/theirs seconds per step (median), speedup theirs/ours + band}."""
  ratio, lo, hi = stats_lib.ratio_interval(t_theirs, t_ours)
  return {
    "ours_s_per_step": float(np.median(t_ours)) / per_call,
    "official_s_per_step": float(np.median(t_theirs)) / per_call,
    "speedup": ratio,
    "speedup_lo": lo,
    "speedup_hi": hi,
  }
