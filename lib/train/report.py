"""Paper claims and the reproduce report (REPORT.md).

A `Claim` names an experiment, the config variant to run, the paper's sentence and number,
the key of ours in that run's results.json, and a check such as ">= 0.004" or
"in [-0.14, -0.06]". `experiments/reproduce.py` runs each experiment once and fills the table.
"""

import dataclasses
import math
import re


@dataclasses.dataclass(frozen=True)
class Claim:
  """One row of the reproduce report."""

  name: str  # unique id, e.g. "sb_adam_beats_gd"
  paper: str  # short paper label, e.g. "simplicity_bias"
  experiment: str  # module under experiments/
  config: str  # config argument, e.g. "quick"
  claim: str  # the paper's claim in one sentence
  paper_value: str  # the paper's number as text
  metric: str  # key in results.json, dots for nesting
  check: str  # ">= x", "<= x", "> x", "< x", "in [a, b]"
  fmt: str = "{:.4g}"
  figures: tuple[str, ...] = ()
  note: str = ""
  # Optional (low, high) metric keys of a spread shown next to ours, e.g. a
  # bootstrap band: "0.86 [0.64, 1.63]".
  interval: tuple[str, str] | None = None

  @property
  def run_name(self) -> str:
    """Sub-directory of the reproduce workdir that holds this claim's run."""
    config = self.config.replace(",", "_").replace("=", "-")
    return (
      self.experiment if config == "quick" else f"{self.experiment}_{config}"
    )


_CHECK = re.compile(
  r"^\s*(?:(>=|<=|>|<)\s*(\S+)|in\s*\[\s*([^,\]]+)\s*,\s*([^\]]+)\s*\])\s*$"
)


def parse_check(check: str):
  """Returns a predicate float -> bool for a check string; raises ValueError."""
  m = _CHECK.match(check)
  if not m:
    raise ValueError(
      f"bad claim check {check!r}: use '>= x', '<= x', '> x', '< x' or 'in [a, b]'"
    )
  op, x, lo, hi = m.groups()
  if op:
    t = float(x)
    return {
      ">=": lambda v: v >= t,
      "<=": lambda v: v <= t,
      ">": lambda v: v > t,
      "<": lambda v: v < t,
    }[op]
  lo, hi = float(lo), float(hi)
  return lambda v: lo <= v <= hi


def lookup(results: dict, metric: str):
  """results['a']['b'] for metric 'a.b'; None when absent.

  Keys may hold dots themselves ('qng_beta0.3'): the longest key that matches
  wins at each level.
  """
  parts = metric.split(".")

  def walk(value, i):
    if i == len(parts):
      return value
    if not isinstance(value, dict):
      return None
    for j in range(len(parts), i, -1):
      key = ".".join(parts[i:j])
      if key in value:
        found = walk(value[key], j)
        if found is not None:
          return found
    return None

  return walk(results, 0)


def evaluate(claim: Claim, results: dict | None) -> dict:
  """Reads our number for `claim` from `results`; returns the report row."""
  value = None if results is None else lookup(results, claim.metric)
  if isinstance(value, int | float) and math.isfinite(value):
    holds = bool(parse_check(claim.check)(float(value)))
    ours = claim.fmt.format(value)
    if claim.interval is not None:
      lo, hi = (lookup(results, k) for k in claim.interval)
      if isinstance(lo, int | float) and isinstance(hi, int | float):
        ours += f" [{claim.fmt.format(lo)}, {claim.fmt.format(hi)}]"
  else:
    holds, ours = False, "missing" if value is None else str(value)
  return {"claim": claim, "value": value, "ours": ours, "holds": holds}


def render_markdown(
  rows: list[dict], *, environment: str, failures: dict
) -> str:
  """The REPORT.md text: one table row per claim, then notes and failed runs."""
  lines = [
    "# Reproduction report",
    "",
    environment,
    "",
    "| paper | claim | paper | ours | check | holds? | figures |",
    "|---|---|---|---|---|---|---|",
  ]
  for row in rows:
    c = row["claim"]
    figs = " ".join(f"[{f}]({c.run_name}/{f})" for f in c.figures)
    lines.append(
      f"| {c.paper} | {c.claim} | {c.paper_value} | {row['ours']} | "
      f"`{c.metric} {c.check}` | {'yes' if row['holds'] else '**no**'} | {figs} |"
    )
  notes = [r["claim"] for r in rows if r["claim"].note]
  if notes:
    lines += ["", "## Notes", ""]
    lines += [f"- `{c.name}`: {c.note}" for c in notes]
  if failures:
    lines += ["", "## Runs that failed", ""]
    lines += [f"- `{k}`: {v}" for k, v in failures.items()]
  held = sum(r["holds"] for r in rows)
  lines += ["", f"{held}/{len(rows)} claims hold at the quick scale.", ""]
  return "\n".join(lines)
