"""A user's own evaluation data: a CSV with score, label, group (and V) columns.

ACS PUMS (the paper's real data, via folktables) is a user download: export a
model's scores with the columns named in the config and point the experiment
at the file. Nothing is fetched at run time.
"""

import csv
import math
import os

import numpy as np

from lib.core import errors

# Larger |x| overflows float32 in the variance of x's polynomial features
# (`metrics.polynomial_features`): NaN features, NaN metrics, no error.
_X_LIMIT = 1e15

# What each role's column must hold (for the messages).
_EXPECTED = {
  "score": "a probability in [0, 1]",
  "label": "0 or 1",
  "group": "0 or 1",
  "x": f"a finite number within +-{_X_LIMIT:g}",
}


def load_csv(path: str, columns: dict, group_values=()) -> dict:
  """{"p", "y", "a"[, "x"]} arrays from the CSV's named columns, validated.

  Every value is checked where it is read, and the first bad one stops the
  load with a one-line ConfigError naming the file, the column, the data row
  (1 = the first row after the header) and what was expected: scores are
  probabilities in [0, 1] (logits are refused, with how to convert them),
  labels are 0/1, groups are exactly two, coded 0/1 or mapped by
  `group_values`, x is finite; no value may be missing or NaN; and each group
  must hold both labels (recall, specificity and AUC need both).

  Args:
    path: CSV with a header row.
    columns: {"score": name, "label": name, "group": name[, "x": name]};
      an empty name skips that column.
    group_values: () when the group column holds 0 and 1; else the two
      values (as written in the file) that mean group 0 and group 1.

  Raises:
    WorkdirError: the file is missing or unreadable. ConfigError: a named
    column is absent, or a value is missing, not a number or out of range.
  """
  if os.path.isdir(path):
    raise errors.WorkdirError(f"evaluation CSV {path!r} is a directory")
  if not os.path.isfile(path):
    raise errors.WorkdirError(f"evaluation CSV {path!r} does not exist")
  unknown = sorted(set(columns) - set(_EXPECTED))
  errors.check(
    not unknown,
    errors.ConfigError,
    f"columns has unknown role(s) {unknown}; the roles are {sorted(_EXPECTED)}",
  )
  wanted = {k: v for k, v in columns.items() if v}
  codes = _group_codes(group_values)
  out = {role: [] for role in wanted}
  try:
    # utf-8-sig: a spreadsheet's "CSV UTF-8" export starts with a BOM.
    with open(path, newline="", encoding="utf-8-sig") as f:
      reader = csv.DictReader(f)
      header = reader.fieldnames or []
      missing = sorted(v for v in wanted.values() if v not in header)
      errors.check(
        not missing,
        errors.ConfigError,
        f"{path}: no column(s) {missing}; the file has {header}",
      )
      for row_number, row in enumerate(reader, start=1):
        where = f"{path} row {row_number} (line {reader.line_num})"
        errors.check(
          None not in row,
          errors.ConfigError,
          f"{where} has more fields than the header's {len(header)}",
        )
        for role, name in wanted.items():
          out[role].append(_value(row.get(name), role, name, where, codes))
  except (OSError, UnicodeDecodeError, csv.Error) as e:
    raise errors.WorkdirError(f"cannot read {path!r} as a CSV: {e}") from None
  n = len(out[next(iter(wanted))]) if wanted else 0
  errors.check(
    n > 0, errors.ConfigError, f"{path} holds a header but no data rows"
  )
  key = {"score": "p", "label": "y", "group": "a", "x": "x"}
  data = {key[role]: np.asarray(values) for role, values in out.items()}
  for k in ("y", "a"):
    if k in data:
      data[k] = data[k].astype(np.int32)
  if "a" in data:
    _check_groups(path, wanted["group"], data, codes)
  return data


def _group_codes(group_values) -> dict | None:
  """{file value: 0 or 1} from the mapping, or None for a 0/1 column."""
  if not group_values:
    return None
  values = tuple(str(v) for v in group_values)
  errors.check(
    len(values) == 2 and values[0] != values[1],
    errors.ConfigError,
    f"group_values={tuple(group_values)!r} must name two distinct values "
    "(group 0's, then group 1's)",
  )
  return {values[0]: 0, values[1]: 1}


def _value(text, role: str, name: str, where: str, codes):
  """One cell as a number of its role, or a ConfigError naming it."""

  expected = _EXPECTED[role]
  if role == "group" and codes is not None:
    expected = f"one of the mapped group values {list(codes)}"

  def fail(what):
    raise errors.ConfigError(
      f"{where}, column {name!r}: {what}; expected {expected}"
    )

  if text is None or not text.strip():
    fail("the value is missing")
  text = text.strip()
  if role == "group" and codes is not None:
    if text not in codes:
      fail(f"{text!r} is not a mapped group value")
    return codes[text]
  try:
    value = float(text)
  except ValueError:
    fail(f"{text!r} is not a number")
  if not math.isfinite(value):
    fail(f"{text!r} is not finite")
  if role == "x" and abs(value) > _X_LIMIT:
    fail(f"{value:g} is too large for float32 features (rescale the column)")
  if role == "score" and not 0 <= value <= 1:
    fail(f"{value:g} is not a probability (logits? pass 1 / (1 + exp(-logit)))")
  if role == "label" and value not in (0, 1):
    fail(f"{value:g} is not a binary label")
  if role == "group" and value not in (0, 1):
    fail(
      f"{value:g} is not a group code (exactly two groups, coded 0 and 1; "
      "other codes: set config.csv_group_values to the two values)"
    )
  return value


def _check_groups(path, name: str, data: dict, codes) -> None:
  """Both groups present, and each with both labels (the metrics need them)."""
  shown = list(codes) if codes else [0, 1]
  for g in (0, 1):
    in_group = data["a"] == g
    errors.check(
      bool(in_group.any()),
      errors.ConfigError,
      f"{path}, column {name!r}: no row of group {shown[g]!r}; a "
      "disaggregated evaluation needs both groups",
    )
    if "y" in data:
      labels = set(np.unique(data["y"][in_group]).tolist())
      errors.check(
        labels == {0, 1},
        errors.ConfigError,
        f"{path}: group {shown[g]!r} has only label(s) {sorted(labels)}; "
        "recall, specificity and AUC need both labels in each group",
      )
