"""Task sequences for continual classification: four moons, Split-digits, a file.

A `Tasks` holds per-task training inputs (bias column appended) and labels, and
one test set over all classes (evaluation is class-incremental: argmax over all
classes, no task mask, as in the official code).

Jung et al., "How to Train Your Compact Memory", NeurIPS 2025.
"""

import dataclasses
import os

import numpy as np

from lib.core import errors


@dataclasses.dataclass(frozen=True)
class Tasks:
  """Continual-learning data: task i trains on (x_train[i], y_train[i])."""

  x_train: tuple  # T arrays [N_t, d] (float64, bias column included)
  y_train: tuple  # T int32 arrays [N_t]
  x_test: np.ndarray  # [N_test, d]
  y_test: np.ndarray  # [N_test]
  num_classes: int
  raw_train: tuple = ()  # T arrays [N_t, 2] of raw 2-D points (four moons)

  @property
  def num_tasks(self) -> int:
    return len(self.x_train)

  @property
  def num_train(self) -> int:
    return sum(len(y) for y in self.y_train)


def add_bias(x) -> np.ndarray:
  """Appends the constant-1 feature (the model has no bias term)."""
  x = np.asarray(x, np.float64)
  return np.concatenate([x, np.ones((len(x), 1))], axis=1)


def check_labels(y, num_classes: int, what: str) -> np.ndarray:
  """Integer labels in [0, num_classes), else a one-line error naming the
  first bad entry."""
  y = np.asarray(y)
  if y.ndim != 1:
    raise errors.ShapeError(f"{what} must be 1-D, got shape {y.shape}")
  _check_integers(y, what, "labels")
  if y.size and (y.min() < 0 or y.max() >= num_classes):
    raise errors.ConfigError(
      f"{what} holds labels outside [0, {num_classes}): "
      f"min {y.min()}, max {y.max()}"
    )
  return y.astype(np.int32)


def _check_integers(v, what: str, expected: str) -> None:
  """Finite whole numbers; else a ConfigError naming the first bad index."""
  if not np.issubdtype(v.dtype, np.number) or np.issubdtype(
    v.dtype, np.complexfloating
  ):
    raise errors.ConfigError(
      f"{what} has dtype {v.dtype}; expected integer {expected}"
    )
  bad = ~np.isfinite(v) | (np.mod(v, 1) != 0) if v.size else v.astype(bool)
  if np.any(bad):
    i = int(np.flatnonzero(bad)[0])
    raise errors.ConfigError(
      f"{what}[{i}] is {v[i].item()!r}; expected integer {expected} "
      f"({int(bad.sum())} such entries)"
    )


def check_tasks(tasks: Tasks, memory_sizes, what: str, key: str) -> None:
  """What a continual run with these memory sizes needs of the tasks.

  At least two tasks (the memory carries task t to t + 1), a training
  example in every task, and every memory size no larger than the training
  examples of each task it summarises (tasks 1..T-1).

  Args:
    tasks: the loaded tasks.
    memory_sizes: memory points per task.
    what: the data's name for messages (e.g. the file).
    key: the config key of the memory sizes, for messages.

  Raises:
    ConfigError naming the task and the sizes.
  """
  sizes = [len(y) for y in tasks.y_train]
  if len(sizes) < 2:
    raise errors.ConfigError(
      f"{what} holds {len(sizes)} task: a continual run needs at least 2 "
      "(distinct task_ids)"
    )
  for t, n in enumerate(sizes):
    if n == 0:
      raise errors.ConfigError(
        f"{what}: task {t + 1} of {len(sizes)} keeps no training example "
        "after the test split; give it more examples or a smaller test "
        "fraction"
      )
  smallest = min(sizes[:-1])
  t = sizes.index(smallest)
  big = [k for k in memory_sizes if k > smallest]
  if big:
    raise errors.ConfigError(
      f"{key} holds {big[0]}, more memory points than task {t + 1} of "
      f"{what} has training examples ({smallest}); use sizes <= {smallest}"
    )


def _check_finite(x, what: str) -> None:
  if not np.all(np.isfinite(x)):
    bad = int(np.sum(~np.isfinite(x)))
    raise errors.NonFiniteError(f"{what} holds {bad} non-finite values")


def from_arrays(
  features,
  labels,
  task_ids,
  *,
  num_classes: int | None = None,
  test_fraction: float = 0.2,
  seed: int = 0,
  what: str = "features",
) -> Tasks:
  """Tasks from flat arrays: a random `test_fraction` of each task is held out.

  Tasks are taken in increasing task-id order; a bias column is appended.

  Raises:
    ShapeError: lengths differ, features not 2-D, or labels not 1-D.
    NonFiniteError: NaN/inf in the features.
    ConfigError: labels outside [0, num_classes) or not integers, a single
      class, or test_fraction outside [0, 1).
  """
  x = np.asarray(features)
  y = np.asarray(labels)
  t = np.asarray(task_ids)
  if not 0.0 <= test_fraction < 1.0:
    raise errors.ConfigError(
      f"test_fraction must be in [0, 1), got {test_fraction}"
    )
  if x.ndim != 2:
    raise errors.ShapeError(f"{what} must be [N, d], got shape {x.shape}")
  if not (len(x) == len(y) == len(t)):
    raise errors.ShapeError(
      f"{what}: features, labels and task ids have different lengths "
      f"({len(x)}, {len(y)}, {len(t)})"
    )
  if len(x) == 0:
    raise errors.ShapeError(f"{what} holds no examples")
  if not np.issubdtype(x.dtype, np.number):
    raise errors.ConfigError(
      f"{what} features have dtype {x.dtype}; expected numbers"
    )
  _check_finite(x, what)
  if t.ndim != 1:
    raise errors.ShapeError(f"{what} task ids must be 1-D, got {t.shape}")
  _check_integers(t, f"{what} task_ids", "task ids")
  if y.ndim != 1:
    raise errors.ShapeError(
      f"{what} labels must be 1-D class ids, got shape {y.shape}"
    )
  _check_integers(y, f"{what} labels", "labels")
  if num_classes is None:
    num_classes = int(np.max(y)) + 1 if y.size else 0
  y = check_labels(y, num_classes, f"{what} labels")
  if len(np.unique(y)) < 2:
    raise errors.ConfigError(
      f"{what} labels hold one class ({y[0].item()}); a classifier needs at "
      "least 2 (every model would score 1.0)"
    )
  rng = np.random.default_rng(seed)
  xs, ys, tx, ty = [], [], [], []
  for task in np.unique(t):
    idx = rng.permutation(np.flatnonzero(t == task))
    n_test = int(round(test_fraction * len(idx)))
    xs.append(add_bias(x[idx[n_test:]]))
    ys.append(y[idx[n_test:]])
    tx.append(x[idx[:n_test]])
    ty.append(y[idx[:n_test]])
  return Tasks(
    tuple(xs),
    tuple(ys),
    add_bias(np.concatenate(tx)),
    np.concatenate(ty),
    num_classes,
  )


FEATURE_KEYS = ("features", "labels", "task_ids")


def load_feature_file(path: str, **kwargs) -> Tasks:
  """A user's own features (.npz with `features`, `labels`, `task_ids`).

  E.g. CLIP embeddings of their own images, saved with
  `np.savez(path, features=[N, d], labels=[N], task_ids=[N])`; see
  `from_arrays` for the split and the checks. Any other format (a .csv, a
  .npy, a pickle) is a one-line ConfigError saying what is expected.
  """
  expected = (
    "an .npz with arrays features [N, d], labels [N], task_ids [N] "
    "(np.savez(path, features=..., labels=..., task_ids=...))"
  )
  if not os.path.exists(path):
    raise errors.ConfigError(f"feature file {path!r} does not exist")
  if os.path.isdir(path):
    raise errors.ConfigError(
      f"feature file {path!r} is a directory; expected {expected}"
    )
  ext = os.path.splitext(path)[1].lower()
  if ext != ".npz":
    raise errors.ConfigError(
      f"feature file {path!r} is a {ext or 'file without extension'}; "
      f"expected {expected}"
    )
  try:
    # Our own handle: np.load leaks the one it opens when the zip is damaged.
    with open(path, "rb") as fh, np.load(fh, allow_pickle=False) as f:
      missing = [k for k in FEATURE_KEYS if k not in f]
      if missing:
        raise errors.ConfigError(
          f"feature file {path!r} lacks arrays {missing} (it has "
          f"{sorted(f.files)}); expected {expected}"
        )
      arrays = {k: f[k] for k in FEATURE_KEYS}
  except errors.ConfigError:
    raise
  except errors.NPY_READ_ERRORS as e:
    raise errors.ConfigError(
      f"feature file {path!r} is not a readable .npz ({e}); expected {expected}"
    ) from None
  return from_arrays(
    arrays["features"],
    arrays["labels"],
    arrays["task_ids"],
    what=f"feature file {os.path.basename(path)}",
    **kwargs,
  )


def split_digits(
  *, classes_per_task: int = 2, test_fraction: float = 0.3, seed: int = 0
) -> Tasks:
  """Class-incremental Split-digits: sklearn digits, pixels / 16 + bias (65-d).

  Task i holds classes [i * classes_per_task, (i + 1) * classes_per_task).
  """
  from sklearn import datasets

  digits = datasets.load_digits()
  x = digits.data / 16.0
  y = digits.target
  return from_arrays(
    x,
    y,
    y // classes_per_task,
    num_classes=10,
    test_fraction=test_fraction,
    seed=seed,
    what="digits",
  )


def four_moons(
  *, n: int = 1000, noise: float = 0.1, degree: int = 5, seed: int = 0
) -> Tasks:
  """The official four-moons demo: 2 moon halves, then the same shifted by +2.3.

  sklearn `make_moons(n, noise)` (the official CSV holds 1000 such points,
  off the unit arcs with std 0.097: noise 0.1, not stated there), each class
  sorted by x1; task 1 = the first half of each class, task 2 = the second
  half, tasks 3 and 4 = the same shifted by (2.3, 0). The points are centred
  on the mean over all tasks and mapped by PolynomialFeatures(degree) (which
  includes the constant feature: 21 features for degree 5). Labels 0 and 1
  (the notebook's model is one sigmoid weight vector: a theta of one column,
  `kprior.logits`; a 2-class softmax reads them too). The test set is a fresh draw split the same way (ours; the
  notebook only plots).
  """
  from sklearn import datasets
  from sklearn import preprocessing

  def tasks_of(points, labels):
    halves = []
    sorted_by_class = []
    for c in (0, 1):
      pts = points[labels == c]
      sorted_by_class.append(pts[np.argsort(pts[:, 0], kind="stable")])
    half = min(len(p) for p in sorted_by_class) // 2
    shift = np.array([2.3, 0.0])
    for offset, part in ((0, 0), (0, 1), (1, 0), (1, 1)):
      xs = [
        p[part * half : (part + 1) * half] + offset * shift
        for p in sorted_by_class
      ]
      ys = [np.full(half, c) for c in (0, 1)]
      halves.append((np.concatenate(xs), np.concatenate(ys)))
    return halves

  x, y = datasets.make_moons(n, noise=noise, random_state=seed)
  xt, yt = datasets.make_moons(n, noise=noise, random_state=seed + 10_000)
  train = tasks_of(x, y)
  test = tasks_of(xt, yt)
  mean = np.concatenate([p for p, _ in train]).mean(axis=0)
  poly = preprocessing.PolynomialFeatures(degree)
  feats = lambda p: poly.fit_transform(p - mean).astype(np.float64)
  return Tasks(
    tuple(feats(p) for p, _ in train),
    tuple(lab.astype(np.int32) for _, lab in train),
    feats(np.concatenate([p for p, _ in test])),
    np.concatenate([lab for _, lab in test]).astype(np.int32),
    2,
    raw_train=tuple(p - mean for p, _ in train),
  )


def moons_features(points, degree: int = 5) -> np.ndarray:
  """PolynomialFeatures(degree) of already-centred 2-D points (for plots)."""
  from sklearn import preprocessing

  return preprocessing.PolynomialFeatures(degree).fit_transform(points)


def pad_tasks(tasks: Tasks):
  """Tasks as fixed shapes: x [T, Nmax, d], y [T, Nmax], mask [T, Nmax].

  A task with fewer than Nmax points is padded with mask-0 rows, so that one
  jitted step serves every task.
  """
  nmax = max(len(y) for y in tasks.y_train)
  t, d = tasks.num_tasks, tasks.x_train[0].shape[1]
  x, y, m = (
    np.zeros((t, nmax, d)),
    np.zeros((t, nmax), np.int32),
    np.zeros((t, nmax)),
  )
  for i, (xi, yi) in enumerate(zip(tasks.x_train, tasks.y_train)):
    x[i, : len(yi)], y[i, : len(yi)], m[i, : len(yi)] = xi, yi, 1.0
  return x, y, m
