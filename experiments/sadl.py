r"""SADL vs sketched SGD, FetchSGD and uncompressed Adam on a clients mesh.

Clients are the devices of the `clients` axis of a `jax.make_mesh` mesh; each
round runs K local steps per client under `jax.shard_map` and averages the
sketches with `lax.pmean` (lib/optim/sadl.py). Two parts:
  (i) spec E.B's power-law quadratic dimension sweep: with eps = 1e-3, SADL's
      loss after T rounds does not grow with d at a fixed sketch size b
      (dimension-free rate, the paper's Thm 2.2 / Cor. 2);
  (ii) an MLP on the bundled digits with 8 clients (IID or label-sharded):
      final loss / test accuracy against bytes sent per client.
The paper's ResNet/ViT/BERT results need GPUs and days; they are out of CPU
reach and not claimed here.

Run: python -m experiments.sadl --config configs/sadl.py:quick --workdir runs/sadl
"""

import os

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
from absl import logging
from jax.flatten_util import ravel_pytree

from experiments import _cli
from lib import train as train_lib
from lib.core import errors
from lib.core import rng
from lib.data.digits import load_digits
from lib.data.digits import split_indices
from lib.optim import sadl as sadl_lib

# ----------------------------------------------------------------------------
# Methods
# ----------------------------------------------------------------------------


def make_method(name, *, dim, sketch_size, cfg, key) -> sadl_lib.Method:
  """Builds one of the compared methods from a config section."""
  if name == "sadl":
    return sadl_lib.sadl(
      dim=dim,
      sketch_size=sketch_size,
      learning_rate=cfg.sadl_lr,
      b1=cfg.b1,
      b2=cfg.b2,
      eps=cfg.eps,
    )
  if name == "sadl_eps1e-8":  # spec B.5: tiny eps degrades with d
    return sadl_lib.sadl(
      dim=dim,
      sketch_size=sketch_size,
      learning_rate=cfg.sadl_lr,
      b1=cfg.b1,
      b2=cfg.b2,
      eps=1e-8,
    )._replace(name="sadl_eps1e-8")
  if name == "sketched_sgd":
    return sadl_lib.sketched_sgd(
      dim=dim, sketch_size=sketch_size, learning_rate=cfg.sgd_lr
    )
  if name == "fetchsgd":
    return sadl_lib.fetchsgd(
      key,
      dim=dim,
      sketch_size=sketch_size,
      learning_rate=cfg.fetchsgd_lr,
      rows=cfg.fetchsgd_rows,
    )
  if name == "adam":
    return sadl_lib.distributed_adam(
      dim=dim, learning_rate=cfg.adam_lr, b1=cfg.b1, b2=cfg.b2, eps=cfg.eps
    )
  raise errors.ConfigError(
    f"unknown method {name!r}; known: sadl, sadl_eps1e-8, sketched_sgd, "
    "fetchsgd, adam"
  )


def run_method(
  method,
  *,
  problem,
  mesh,
  num_clients,
  rounds,
  log_every,
  key,
  writer,
  tag,
  eval_fn,
):
  """Runs `rounds` rounds in scanned chunks; returns (final params, curve)."""
  if rounds % log_every:
    raise errors.ConfigError(
      f"rounds={rounds} must be a multiple of log_every={log_every}"
    )
  round_fn = sadl_lib.make_round_fn(
    method,
    loss_fn=problem["loss_fn"],
    batch_fn=problem["batch_fn"],
    unravel=problem["unravel"],
    mesh=mesh,
    num_clients=num_clients,
    local_steps=problem["local_steps"],
    client_lr=problem["client_lr"],
  )
  run = sadl_lib.make_run_fn(
    round_fn, mesh=mesh, num_clients=num_clients, num_rounds=log_every
  )
  state = sadl_lib.init_state(method, problem["params0"], mesh)
  progress = train_lib.Progress(rounds, name=tag)
  curve = []
  for _ in range(rounds // log_every):
    state, metrics = run(state, problem["data"], key)
    done = int(state.round)
    params = np.asarray(state.params)
    record = {
      "method": tag,
      "client_loss": float(np.asarray(metrics["loss"])[-1]),
      "bytes_per_client": done * method.bytes_per_round,
      **eval_fn(params),
    }
    writer.write(done, record)
    progress.update(done, {"loss": record["client_loss"]})
    curve.append(record)
    if not np.all(np.isfinite(params)):
      logging.warning("%s diverged at round %d", tag, done)
      break
  return params, curve


# ----------------------------------------------------------------------------
# (i) Power-law quadratic dimension sweep
# ----------------------------------------------------------------------------


def quadratic_problem(config, d):
  q = config.quadratic
  lam = np.arange(1, d + 1, dtype=np.float64) ** -q.exponent
  # Client targets 1 + spread * (noise - its mean over clients): the average
  # client loss is 1/2 sum lam (x - 1)^2 + const, so the excess loss ratio is
  # comparable to spec E.B's single-client L_T / L_0.
  noise = np.random.default_rng(config.seed).normal(
    size=(config.num_clients, d)
  )
  targets = 1.0 + q.target_spread * (noise - noise.mean(0))
  lam32 = jnp.asarray(lam, jnp.float32)

  def loss_fn(x, target):
    return 0.5 * jnp.sum(lam32 * (x - target) ** 2)

  excess0 = 0.5 * lam.sum()

  def eval_fn(x):
    ratio = 0.5 * np.sum(lam * (x.astype(np.float64) - 1.0) ** 2) / excess0
    return {"loss_ratio": float(ratio)}

  problem = dict(
    loss_fn=loss_fn,
    batch_fn=lambda data, key: data,
    unravel=lambda x: x,
    params0=np.zeros(d, np.float32),
    data=targets.astype(np.float32),
    local_steps=1,
    client_lr=1.0,
  )
  return problem, eval_fn


def run_quadratic(config, mesh, writer, root) -> dict:
  q = config.quadratic
  out = {}
  for d in q.dims:
    problem, eval_fn = quadratic_problem(config, d)
    problem["data"] = sadl_lib.shard_clients(problem["data"], mesh)
    row = {}
    for name in q.methods:
      method = make_method(
        name,
        dim=d,
        sketch_size=q.sketch_size,
        cfg=q,
        key=rng.stream(root, "fetchsgd_table"),
      )
      _, curve = run_method(
        method,
        problem=problem,
        mesh=mesh,
        num_clients=config.num_clients,
        rounds=q.rounds,
        log_every=q.log_every,
        key=rng.stream(root, f"quadratic_{d}"),
        writer=writer,
        tag=f"quadratic/d{d}/{name}",
        eval_fn=eval_fn,
      )
      row[name] = {
        "loss_ratio": curve[-1]["loss_ratio"],
        "bytes_per_round": method.bytes_per_round,
        "compression": method.compression,
        "curve": [c["loss_ratio"] for c in curve],
      }
      logging.info(
        "quadratic d=%d %s: L_T/L_0 = %.4f", d, name, row[name]["loss_ratio"]
      )
    out[f"d{d}"] = row
  return out


def summarize_quadratic(quad: dict, dims) -> dict:
  """Headline numbers for the claims (sadl vs adam over the dims)."""
  first, last = f"d{dims[0]}", f"d{dims[-1]}"
  summary = {}
  if all("sadl" in quad[k] for k in quad):
    ratios = [quad[f"d{d}"]["sadl"]["loss_ratio"] for d in dims]
    summary["sadl_ratio_max"] = max(ratios)
    summary["sadl_dim_growth"] = (
      quad[last]["sadl"]["loss_ratio"] / quad[first]["sadl"]["loss_ratio"]
    )
    summary["sadl_compression_min"] = min(
      quad[f"d{d}"]["sadl"]["compression"] for d in dims
    )
    if all("adam" in quad[k] for k in quad):
      summary["sadl_gap_to_adam_max"] = max(
        quad[f"d{d}"]["sadl"]["loss_ratio"]
        - quad[f"d{d}"]["adam"]["loss_ratio"]
        for d in dims
      )
  return summary


# ----------------------------------------------------------------------------
# (ii) MLP on digits, 8 clients
# ----------------------------------------------------------------------------


class MLP(nn.Module):
  hidden: int

  @nn.compact
  def __call__(self, x):
    x = nn.relu(nn.Dense(self.hidden)(x))
    return nn.Dense(10)(x)


def digits_problem(config, root):
  m = config.mlp
  images, labels = load_digits()
  x = images.reshape(len(images), -1) / 16.0
  train_idx, test_idx = split_indices(
    len(x), test_fraction=m.test_fraction, seed=config.seed
  )
  c = config.num_clients
  per_client = (len(train_idx) // c) // 2 * 2
  order = np.random.default_rng(config.seed).permutation(train_idx)
  if m.non_iid:
    # Sort by label, cut into 2C shards, give client i shards i and i + C.
    order = order[np.argsort(labels[order], kind="stable")]
    shards = order[: c * per_client].reshape(2 * c, per_client // 2)
    client_idx = np.concatenate([shards[:c], shards[c:]], axis=1)
  else:
    client_idx = order[: c * per_client].reshape(c, per_client)
  data = {"x": x[client_idx], "y": labels[client_idx]}

  model = MLP(m.hidden)
  # One compiled init instead of one small compile per eager op.
  params = jax.jit(model.init)(rng.stream(root, "mlp_init"), jnp.zeros((1, 64)))
  params0, unravel = ravel_pytree(params)

  def loss_fn(p, batch):
    logits = model.apply(p, batch["x"])
    return optax.softmax_cross_entropy_with_integer_labels(
      logits, batch["y"]
    ).mean()

  def batch_fn(client_data, key):
    idx = jax.random.randint(key, (m.batch_size,), 0, per_client)
    return jax.tree.map(lambda a: a[idx], client_data)

  train_all = {
    "x": jnp.asarray(x[train_idx]),
    "y": jnp.asarray(labels[train_idx]),
  }
  test_all = {"x": jnp.asarray(x[test_idx]), "y": jnp.asarray(labels[test_idx])}

  @jax.jit
  def evaluate(flat):
    p = unravel(flat)
    train_loss = loss_fn(p, train_all)
    acc = jnp.mean(
      jnp.argmax(model.apply(p, test_all["x"]), -1) == test_all["y"]
    )
    return train_loss, acc

  def eval_fn(flat):
    train_loss, acc = evaluate(jnp.asarray(flat))
    return {"train_loss": float(train_loss), "test_acc": float(acc)}

  problem = dict(
    loss_fn=loss_fn,
    batch_fn=batch_fn,
    unravel=unravel,
    params0=np.asarray(params0),
    data=data,
    local_steps=m.local_steps,
    client_lr=m.client_lr,
  )
  return problem, eval_fn


def run_mlp(config, mesh, writer, root) -> dict:
  m = config.mlp
  problem, eval_fn = digits_problem(config, root)
  problem["data"] = sadl_lib.shard_clients(problem["data"], mesh)
  d = int(problem["params0"].size)
  out = {"dim": d, "clients_per_device": config.num_clients // mesh.size}
  for name in m.methods:
    for ratio in (None,) if name == "adam" else m.compressions:
      b = None if ratio is None else max(2, d // ratio)
      tag = name if ratio is None else f"{name}_{ratio}x"
      method = make_method(
        name,
        dim=d,
        sketch_size=b,
        cfg=m,
        key=rng.stream(root, "fetchsgd_table"),
      )
      params, curve = run_method(
        method,
        problem=problem,
        mesh=mesh,
        num_clients=config.num_clients,
        rounds=m.rounds,
        log_every=m.log_every,
        key=rng.stream(root, "mlp"),
        writer=writer,
        tag=f"mlp/{tag}",
        eval_fn=eval_fn,
      )
      out[tag] = {
        "train_loss": curve[-1]["train_loss"],
        "test_acc": curve[-1]["test_acc"],
        "bytes_per_round": method.bytes_per_round,
        "compression": method.compression,
        "params_l2": float(np.linalg.norm(params)),
        "curve_bytes": [c["bytes_per_client"] for c in curve],
        "curve_test_acc": [c["test_acc"] for c in curve],
        "curve_train_loss": [c["train_loss"] for c in curve],
      }
      logging.info(
        "mlp %s: %s",
        tag,
        {k: v for k, v in out[tag].items() if not k.startswith("curve")},
      )
  if "adam" in out and f"sadl_{m.compressions[0]}x" in out:
    top = f"sadl_{m.compressions[0]}x"
    out["sadl_acc_gap_to_adam"] = out["adam"]["test_acc"] - out[top]["test_acc"]
    if f"fetchsgd_{m.compressions[0]}x" in out:
      out["sadl_minus_fetchsgd_acc"] = (
        out[top]["test_acc"] - out[f"fetchsgd_{m.compressions[0]}x"]["test_acc"]
      )
  return out


# ----------------------------------------------------------------------------
# Figure and entry point
# ----------------------------------------------------------------------------


def plot(results, config, path):
  import matplotlib

  matplotlib.use("Agg")
  import matplotlib.pyplot as plt

  fig, axes = plt.subplots(1, 2, figsize=(11, 4))
  quad = results.get("quadratic", {})
  if quad:
    dims = list(config.quadratic.dims)
    for name in config.quadratic.methods:
      ys = [quad[f"d{d}"][name]["loss_ratio"] for d in dims]
      axes[0].plot(dims, ys, "o-", label=name)
    axes[0].set(
      xscale="log",
      yscale="log",
      xlabel="dimension d",
      ylabel="L_T / L_0",
      title=f"power-law quadratic, b={config.quadratic.sketch_size}",
    )
    axes[0].legend(fontsize=8)
  mlp = results.get("mlp", {})
  for tag, row in mlp.items():
    if isinstance(row, dict) and "curve_bytes" in row:
      axes[1].plot(row["curve_bytes"], row["curve_test_acc"], label=tag)
  if mlp:
    axes[1].set(
      xscale="log",
      xlabel="bytes per client (up + down)",
      ylabel="test accuracy",
      title=f"digits MLP, {config.num_clients} clients"
      + (" (non-IID)" if config.mlp.non_iid else ""),
    )
    axes[1].legend(fontsize=7)
  fig.tight_layout()
  fig.savefig(path, dpi=110)
  plt.close(fig)


def run(config, workdir) -> dict:
  train_lib.prepare_run(workdir, config)
  mesh = sadl_lib.make_client_mesh(config.mesh_clients)
  sadl_lib.check_mesh(mesh, config.num_clients)
  logging.info(
    "%d clients on %d devices (%d processes)",
    config.num_clients,
    mesh.size,
    jax.process_count(),
  )
  root = rng.root_key(config.seed)
  writer = train_lib.MetricWriter(workdir)
  results = {
    "num_clients": config.num_clients,
    "devices": int(mesh.size),
    "processes": jax.process_count(),
  }
  if config.quadratic.enabled:
    results["quadratic"] = run_quadratic(config, mesh, writer, root)
    results["quadratic"].update(
      summarize_quadratic(results["quadratic"], list(config.quadratic.dims))
    )
  if config.mlp.enabled:
    results["mlp"] = run_mlp(config, mesh, writer, root)
  if jax.process_index() == 0:
    path = os.path.join(workdir, "sadl.png")
    plot(results, config, path)
    results["figure"] = path
  return train_lib.write_results(workdir, results)


if __name__ == "__main__":
  _cli.main(run)
