"""A user's own evaluation data: a CSV with score, label, group (and V) columns.

ACS PUMS (the paper's real data, via folktables) is a user download: export a
model's scores with the columns named in the config and point the experiment
at the file. Nothing is fetched at run time.
"""

import csv
import os

import numpy as np

from lib.core import errors


def load_csv(path: str, columns: dict) -> dict:
  """{"p", "y", "a"[, "x"]} arrays from the CSV's named columns.

  Args:
    path: CSV with a header row.
    columns: {"score": name, "label": name, "group": name[, "x": name]};
      an empty name skips that column.

  Raises:
    WorkdirError: the file is missing. ConfigError: a named column is
    absent, or a value is not a number.
  """
  if not os.path.isfile(path):
    raise errors.WorkdirError(f"evaluation CSV {path!r} does not exist")
  with open(path, newline="") as f:
    reader = csv.DictReader(f)
    header = reader.fieldnames or []
    wanted = {k: v for k, v in columns.items() if v}
    missing = sorted(v for v in wanted.values() if v not in header)
    errors.check(
      not missing,
      errors.ConfigError,
      f"{path}: no column(s) {missing}; the file has {header}",
    )
    rows = list(reader)
  out = {}
  key = {"score": "p", "label": "y", "group": "a", "x": "x"}
  for role, name in wanted.items():
    try:
      values = np.array([float(r[name]) for r in rows])
    except ValueError as e:
      raise errors.ConfigError(f"{path}: column {name!r}: {e}") from None
    out[key[role]] = values
  for k in ("y", "a"):
    if k in out:
      out[k] = out[k].astype(np.int32)
  return out
