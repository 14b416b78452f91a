"""Paper claims and the reproduce report (REPORT.md).

A `Claim` names an experiment, the config variant to run, the paper's sentence
and number, the key of ours in that run's results.json, the comparator it is
measured against, and a check such as ">= 0.004" or "in [-0.14, -0.06]".
`experiments/reproduce.py` runs each experiment once and fills the tables.

Verdicts (the report must not be able to flatter us, issues 12 and 14):

- "missing": the number (or a key the verdict needs) is not in results.json.
- "no": the point estimate fails its check and its interval (if any) lies
  wholly on the failing side, the number is not finite, the comparator
  diverged (a "yes" may never rest on a diverged baseline), or ours diverged
  where a metric can hide it (`ours_diverged`: HNS's official correlation
  time scores a batch that went NaN before its mean correlation fell below
  0.8 as correlated to the end).
- "unresolved": the point passes but its interval (`interval`) does not pass
  as a whole, a claim against another run has no interval (`needs_band`),
  the point fails but its interval reaches values that pass (a
  "no" inside the noise is no more settled than a "yes" inside it), the
  interval is absent or malformed, or it does not contain its own point
  estimate (a defect of the estimator, shown as "point outside band").
- "yes": everything above is clear.

Sanity rows (`sanity=True`: bookkeeping identities, checks against our own
earlier numbers) get the same verdicts but are listed apart and never counted
as claims.

Seeds needed (issue 35): for a claim that is not settled (unresolved or
missing), the report says how many units (seeds, splits, series) would settle
it, from the run's own per-unit paired differences (`Claim.samples`: mean m,
standard deviation s) and the check's threshold c nearest to m: the smallest
n with t_{0.975, n-1} s / sqrt(n) < |m - c|, the half-width of the same
Student-t interval the band is (`lib.core.stats.mean_interval`); "not within
1000 seeds" when m sits on c. A band that is not a t interval over per-unit
samples (a bootstrap, a range, timing rounds) says so: "n/a: <why>".
"""

import dataclasses
import math
import re

import numpy as np

VERDICTS = ("yes", "no", "unresolved", "missing")
NO_PAPER_VALUE = "(none)"
# The seeds-needed search stops here ("not within 1000 seeds").
MAX_SEEDS = 1000


@dataclasses.dataclass(frozen=True)
class Claim:
  """One row of the reproduce report."""

  name: str  # unique id, e.g. "sb_adam_beats_gd"
  paper: str  # short paper label, e.g. "simplicity_bias"
  experiment: str  # module under experiments/
  config: str  # config argument, e.g. "quick"
  claim: str  # the paper's claim in one sentence
  paper_value: str  # the paper's number as text, or "(none)"
  metric: str  # key in results.json, dots for nesting
  check: str  # ">= x", "<= x", "> x", "< x", "in [a, b]"
  # What ours is measured against, e.g. "best of next-step CNN, du/dt CNN",
  # "paper's value", "analytic optimum". Required for claims (not sanity).
  comparator: str = ""
  # Optional results key saying whether the comparator diverged: a bool
  # (True = diverged) or a finite fraction (< 1 = some runs diverged).
  comparator_diverged: str | None = None
  # The same for ours, where the metric can read well although ours diverged
  # (a finite number computed from non-finite rollouts): a "yes" may not
  # rest on it either, so the verdict is then "no".
  ours_diverged: str | None = None
  # Bookkeeping / our-own-number checks: listed apart, not counted as claims.
  sanity: bool = False
  fmt: str = "{:.4g}"
  figures: tuple[str, ...] = ()
  note: str = ""
  # Optional (low, high) metric keys of a spread of ours, e.g. a bootstrap
  # band: "0.86 [0.64, 1.63]". With it, "yes" needs the whole band to pass.
  interval: tuple[str, str] | None = None
  # Key of the per-unit paired differences (a list) whose mean and Student-t
  # interval are `metric` and `interval`, for the seeds-needed column; a '*'
  # stands for every key of one level (one list per baseline: every one must
  # settle). `samples_log`: the band is exp of the t interval of the logs
  # (a geometric-mean ratio); the check's threshold is then compared in logs.
  samples: str | None = None
  samples_log: bool = False
  sample_unit: str = "seeds"  # what one sample is: seeds, splits, series
  # Why the band is not a t interval over per-unit samples (a bootstrap, a
  # range over seeds, timing rounds): the seeds-needed column says "n/a: ...".
  no_samples: str = ""
  # The run's config key (dots) that sets how many samples `samples` holds:
  # the config value is `count_scale` x the sample count (MIX explains two
  # series for each one it scores). With it, the report gives the command
  # that reruns the experiment with the samples that would settle the claim
  # (`settle_commands`).
  count_key: str | None = None
  count_scale: int = 1
  # Ours is compared with another run of the experiment (a baseline trained
  # beside it), not with a fixed number: without `interval` (one seed) the
  # difference may be seed noise, so the verdict is "unresolved" ("one run
  # against another, no band") whichever side the point falls on.
  needs_band: bool = False

  def __post_init__(self):
    parse_check(self.check)
    if self.count_key is not None and self.samples is None:
      raise ValueError(
        f"claim {self.name!r} names count_key={self.count_key!r} but no "
        "samples: the count key sets the number of `samples`"
      )
    if self.count_scale < 1:
      raise ValueError(
        f"claim {self.name!r}: count_scale must be >= 1, got {self.count_scale}"
      )
    if self.needs_band and self.interval is not None:
      raise ValueError(
        f"claim {self.name!r}: needs_band is for a claim without interval"
      )
    if not self.sanity and not self.comparator.strip():
      raise ValueError(
        f"claim {self.name!r} names no comparator (set comparator=..., or "
        "sanity=True for a bookkeeping check)"
      )

  @property
  def run_name(self) -> str:
    """Sub-directory of the reproduce workdir that holds this claim's run."""
    config = self.config.replace(",", "_").replace("=", "-")
    return (
      self.experiment if config == "quick" else f"{self.experiment}_{config}"
    )


def banded(
  *,
  name: str,
  metric: str,
  claim: str,
  paper_value: str,
  comparator: str,
  check: str,
  note: str = "",
  figure: str | None = None,
  fmt: str = "{:+.3g}",
  figures: tuple[str, ...] = (),
  **common,
) -> Claim:
  """A claim on `metric`.mean whose interval is `metric`.lo / .hi and whose
  per-unit samples are `metric`.seeds (the layout of `lib.core.stats.band`);
  `common` holds paper, experiment, config. `figure` adds one figure to
  `figures`. Keyword-only: ten texts in a row are too easy to swap."""
  if figure is not None:
    figures = tuple(figures) + (figure,)
  if "no_samples" not in common:
    common.setdefault("samples", f"{metric}.seeds")
  return Claim(
    name=name,
    claim=claim,
    paper_value=paper_value,
    comparator=comparator,
    metric=f"{metric}.mean",
    check=check,
    interval=(f"{metric}.lo", f"{metric}.hi"),
    fmt=fmt,
    note=note,
    figures=tuple(figures),
    **common,
  )


_CHECK = re.compile(
  r"^\s*(?:(>=|<=|>|<)\s*(\S+)|in\s*\[\s*([^,\]]+)\s*,\s*([^\]]+)\s*\])\s*$"
)


def parse_check(check: str):
  """Returns a predicate float -> bool for a check string; raises ValueError."""
  m = _CHECK.match(check)
  if not m:
    raise ValueError(
      f"bad claim check {check!r}: use '>= x', '<= x', '> x', '< x' or "
      "'in [a, b]'"
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


def band_reaches(check: str, lo: float, hi: float) -> bool:
  """Whether some value in [lo, hi] passes `check` (every check is convex)."""
  if parse_check(check)(lo) or parse_check(check)(hi):
    return True
  op, _, a, b = _CHECK.match(check).groups()
  # Neither end passes: only a band that covers a whole 'in [a, b]' reaches it.
  return not op and lo <= float(a) and float(b) <= hi


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


def check_thresholds(check: str) -> tuple[float, ...]:
  """The numbers a check compares against: (t,) or (a, b) for 'in [a, b]'."""
  parse_check(check)
  op, x, a, b = _CHECK.match(check).groups()
  return (float(x),) if op else (float(a), float(b))


def seeds_to_settle(
  m: float, s: float, c: float, level: float = 0.95, max_n: int = MAX_SEEDS
) -> int | None:
  """Smallest n >= 2 with t_{(1 + level) / 2, n - 1} s / sqrt(n) < |m - c|.

  The number of paired samples whose Student-t interval of the mean (at the
  same mean and standard deviation) lies wholly on one side of the threshold
  c; None when no n <= max_n does (m sits on c, or too close).
  """
  from scipy import stats  # Host-side only, like lib.core.stats.

  gap = abs(m - c)
  if not (math.isfinite(gap) and math.isfinite(s)) or gap == 0:
    return None
  n = np.arange(2, max_n + 1)
  half = stats.t.ppf(0.5 + level / 2, df=n - 1) * s / np.sqrt(n)
  ok = np.flatnonzero(half < gap)
  return int(n[ok[0]]) if ok.size else None


def sample_lists(results: dict, key: str) -> list:
  """The lists at `key` ('*' = every key of that level, last too: "a.*" is
  every list under "a"); [] when absent."""
  head, star, tail = key.partition(".*")
  if not star:
    found = lookup(results, key)
    return [found] if isinstance(found, list) else []
  parent = lookup(results, head) if head else results
  if not isinstance(parent, dict):
    return []
  out = []
  for sub in parent.values():
    if not tail:
      out += [sub] if isinstance(sub, list) else []
    elif isinstance(sub, dict):
      out += sample_lists(sub, tail.lstrip("."))
  return out


def sample_unit(claim: Claim, results: dict | None) -> str:
  """What one sample is: a "units" text beside the samples in results (e.g.
  "trajectories" when a run had one seed), else `claim.sample_unit`."""
  if claim.samples and "*" not in claim.samples and "." in claim.samples:
    units = lookup(results or {}, claim.samples.rsplit(".", 1)[0] + ".units")
    if isinstance(units, str):
      return units
  return claim.sample_unit


def seeds_needed(claim: Claim, results: dict | None, level: float = 0.95):
  """How many samples would settle `claim`: an int, or a text saying why not.

  From the per-unit paired differences at `claim.samples` (mean m, standard
  deviation s, the check's threshold c nearest to m): `seeds_to_settle`.
  Several lists ('*': one per baseline) need the largest n of them. Returns
  "not within 1000 seeds" when m sits on c, "n/a: <why>" where the claim's
  band is not built from per-unit samples or they are absent.
  """
  if claim.samples is None:
    return "n/a: " + (claim.no_samples or "no per-unit samples")
  lists = sample_lists(results or {}, claim.samples)
  if not lists:
    return f"n/a: no `{claim.samples}` in results"
  thresholds = check_thresholds(claim.check)
  needs = []
  for values in lists:
    x = np.asarray(
      [v if _is_number(v) else math.nan for v in values], np.float64
    )
    cs = np.asarray(thresholds, np.float64)
    if claim.samples_log:
      if np.any(x <= 0) or np.any(cs <= 0):
        return "n/a: a ratio sample or threshold is not positive"
      x, cs = np.log(x), np.log(cs)
    if x.size < 2:
      return f"n/a: fewer than 2 samples in `{claim.samples}`"
    if not np.all(np.isfinite(x)):
      return f"n/a: a sample in `{claim.samples}` is not finite (diverged)"
    m, s = float(np.mean(x)), float(np.std(x, ddof=1))
    c = float(cs[np.argmin(np.abs(cs - m))])
    needs.append(seeds_to_settle(m, s, c, level))
  if None in needs:
    return f"not within {MAX_SEEDS} {sample_unit(claim, results)}"
  return max(needs)


def seeds_needed_text(needed, unit: str, ran: int | None = None) -> str:
  """The REPORT.md cell: '12 seeds (ran 3)', or the reason as it is."""
  if not isinstance(needed, int):
    return str(needed)
  return f"{needed} {unit}" + (f" (ran {ran})" if ran is not None else "")


def count_mismatch(claim: Claim, config: dict | None, ran) -> str | None:
  """Why `claim.count_key` in a run's `config` (its config.json) does not
  hold count_scale x `ran` (the samples the run has); None when it does."""
  current = lookup(config or {}, claim.count_key)
  if _is_number(current) and _is_number(ran):
    if current == claim.count_scale * ran:
      return None
  return (
    f"config.{claim.count_key} is {current!r}, not {claim.count_scale} x the "
    f"{ran} samples the run has"
  )


# A claim needing more than this many times the samples its run had gets no
# rerun command (`settle_commands`).
SETTLE_MAX_FACTOR = 20


def settle_commands(
  rows: list[dict],
  configs: dict[str, dict],
  run_seconds: dict | None = None,
  config_suffix: str = "",
  max_factor: int = SETTLE_MAX_FACTOR,
) -> list[dict]:
  """The reruns that would settle the unresolved claims: one per run.

  A claim counts when its `seeds_needed` is a number and it names its
  `count_key`. The run's config (`configs[run name]`, its config.json) must
  hold count_scale x seeds_ran at that key, which shows that the key sets the
  sample count; the rerun sets it to count_scale x the largest number that
  the run's claims need. The number is where the band, at this run's mean and
  spread, would clear the check: a new run's mean moves too, so it settles a
  claim about as often as not when the effect is as measured. `seconds` is
  `run_seconds[run]` scaled by the samples (an estimate: compilation does not
  grow with them). `config_suffix` follows the claim's config argument in the
  command (",smoke" where the runs were smoke runs). A claim that needs more
  than `max_factor` x the samples its run had is left out of the rerun and
  listed in `beyond` ((name, needed) pairs): at its measured effect more of
  the same setting is not the way to settle it (a larger one may be).

  Returns dicts with run, experiment, config, key, value (the new config
  value), ran and needed (samples), unit, claims (names), beyond, seconds
  (None when unknown) and command; or, where the config does not hold the
  count the run has or every claim is beyond, run, key, claims, beyond and
  `skipped` (why).
  """
  by_run: dict[str, list[dict]] = {}
  for row in rows:
    c = row["claim"]
    if c.sanity or c.count_key is None:
      continue
    if not isinstance(row.get("seeds_needed"), int):
      continue
    by_run.setdefault(c.run_name, []).append(row)
  out = []
  for run, run_rows in by_run.items():
    c = run_rows[0]["claim"]
    names = [r["claim"].name for r in run_rows]
    keys = {(r["claim"].count_key, r["claim"].count_scale) for r in run_rows}
    ran = {r.get("seeds_ran") for r in run_rows}
    if len(keys) > 1 or len(ran) > 1:
      why = (
        f"its claims name different count keys {sorted(keys)} or sample "
        f"counts {sorted(map(str, ran))}"
      )
    else:
      why = count_mismatch(c, configs.get(run), next(iter(ran)))
    beyond = []
    if why is None:
      ran = next(iter(ran))
      beyond = [
        (r["claim"].name, r["seeds_needed"])
        for r in run_rows
        if r["seeds_needed"] > max_factor * ran
      ]
      run_rows = [r for r in run_rows if r["seeds_needed"] <= max_factor * ran]
      if not run_rows:
        why = f"every claim needs more than {max_factor} x the {ran} it ran"
    if why is not None:
      out.append(
        dict(
          run=run,
          key=c.count_key,
          claims=names,
          beyond=beyond,
          max_factor=max_factor,
          skipped=why,
        )
      )
      continue
    names = [r["claim"].name for r in run_rows]
    needed = max(r["seeds_needed"] for r in run_rows)
    value = c.count_scale * needed
    took = (run_seconds or {}).get(run)
    command = (
      f"python -m experiments.{c.experiment} --config "
      f"configs/{c.experiment}.py:{c.config}{config_suffix} "
      f"--config.{c.count_key}={value} "
      f"--workdir runs/settle/{run}"
    )
    out.append(
      dict(
        run=run,
        experiment=c.experiment,
        config=c.config,
        key=c.count_key,
        value=value,
        ran=ran,
        needed=needed,
        unit=run_rows[0].get("seeds_unit", c.sample_unit),
        claims=names,
        beyond=beyond,
        max_factor=max_factor,
        seconds=None if took is None else round(took * needed / ran),
        command=command,
      )
    )
  return out


def settle_section(settle: list[dict]) -> list[str]:
  """REPORT.md's lines for `settle_commands`' output ([] when empty)."""
  if not settle:
    return []
  lines = [
    "## Settling the unresolved claims",
    "",
    "Each command reruns one experiment of this report with the samples at "
    "which its unresolved claims' bands, at this run's mean and spread, would "
    "clear their checks (the largest 'seeds to settle' of its claims). A new "
    "run's mean moves too, so a claim settles about as often as not when the "
    "effect is as measured. The time is this run's in this job, scaled by "
    "the samples: an estimate, high where compilation dominates or where "
    "the job ran experiments side by side.",
  ]
  table, skipped = [], []
  for s in settle:
    claims = ", ".join(f"`{n}`" for n in s["claims"])
    for name, needed in s.get("beyond", ()):
      skipped.append(
        f"- `{s['run']}` (`{name}`): needs {needed} (more than "
        f"{s['max_factor']} x what it ran): at this effect size more of the "
        "same setting will not settle it; a larger one might."
      )
    if "skipped" in s:
      if not s.get("beyond"):
        skipped.append(
          f"- `{s['run']}` ({claims}): no command, {s['skipped']}."
        )
      continue
    table.append(
      f"| {s['run']} | {claims} | {s['needed']} {s['unit']} (ran "
      f"{s['ran']}) | {_duration(s['seconds'])} | `{s['command']}` |"
    )
  if table:
    lines += [
      "",
      "| run | claims | samples | time (est.) | command |",
      "|---|---|---|---|---|",
      *table,
    ]
  times = [s["seconds"] for s in settle if "skipped" not in s]
  if times and None not in times:
    lines += [
      "",
      f"In all, one after the other: about {_duration(sum(times))}.",
    ]
  return lines + ([""] + skipped if skipped else [])


def _is_number(v) -> bool:
  return isinstance(v, int | float) and not isinstance(v, bool)


def _finite(v) -> bool:
  return _is_number(v) and math.isfinite(v)


def diverged(value) -> bool | None:
  """Reads a divergence flag (the comparator's or ours): a bool, or a finite
  fraction.

  True for `True`, for a fraction < 1 and for a non-finite number (nothing
  says it converged); False for `False` or a fraction of 1; None when the
  value is absent or of another type.
  """
  if isinstance(value, bool):
    return value
  if _is_number(value):
    return not (math.isfinite(value) and value >= 1)
  return None


def _fmt(claim: Claim, value) -> str:
  try:
    return claim.fmt.format(value)
  except (ValueError, TypeError):
    return str(value)


def claim_keys(claim: Claim) -> dict[str, str]:
  """The results.json keys `evaluate` reads for `claim`, by role: "metric",
  "interval.lo" / "interval.hi", "comparator_diverged", "ours_diverged",
  "samples"."""
  keys = {"metric": claim.metric}
  if claim.interval is not None:
    keys["interval.lo"], keys["interval.hi"] = claim.interval
  if claim.comparator_diverged is not None:
    keys["comparator_diverged"] = claim.comparator_diverged
  if claim.ours_diverged is not None:
    keys["ours_diverged"] = claim.ours_diverged
  if claim.samples is not None:
    keys["samples"] = claim.samples
  return keys


def absent_keys(claim: Claim, results: dict) -> dict[str, str]:
  """The keys of `claim_keys` that `results` lacks, read as `evaluate` and
  `seeds_needed` read them: a metric that is absent or not a number-like leaf,
  an interval end that is absent, a divergence flag that is neither a bool nor
  a number, samples with no list. A present but non-finite value is not
  absent (that is a "no" or "unresolved", not "missing")."""
  absent = {}
  for role, key in claim_keys(claim).items():
    if role == "samples":
      found = bool(sample_lists(results, key))
    elif role in ("comparator_diverged", "ours_diverged"):
      found = diverged(lookup(results, key)) is not None
    else:
      value = lookup(results, key)
      found = value is not None and not isinstance(value, dict | list)
    if not found:
      absent[role] = key
  return absent


def evaluate(claim: Claim, results: dict | None) -> dict:
  """Reads our number for `claim` from `results`; returns the report row.

  The row: {"claim", "value", "ours", "verdict", "reasons", "holds",
  "seeds_needed", "seeds_ran"}, where `verdict` is one of VERDICTS, `reasons`
  a list of short texts shown next to it, `holds` is `verdict == "yes"`,
  `seeds_needed` None for a settled claim (yes or no), else `seeds_needed()`,
  and `seeds_ran` the number of samples the run has (None if unknown).
  """
  reasons = []
  if results is None:
    reasons.append("the run failed")
  results = results or {}
  value = lookup(results, claim.metric)

  def row(verdict, ours):
    settled = verdict in ("yes", "no")
    lists = sample_lists(results, claim.samples) if claim.samples else []
    return {
      "claim": claim,
      "value": value,
      "ours": ours,
      "verdict": verdict,
      "reasons": reasons,
      "holds": verdict == "yes",
      "seeds_needed": None if settled else seeds_needed(claim, results),
      "seeds_ran": len(lists[0]) if lists else None,
      "seeds_unit": sample_unit(claim, results),
    }

  if value is None or isinstance(value, dict | list):
    reasons[:] = reasons or [f"no `{claim.metric}` in results"]
    return row("missing", "missing")
  if not _finite(value):
    reasons.append("not a finite number")
    return row("no", str(value))

  ours = _fmt(claim, value)
  verdict = "yes" if parse_check(claim.check)(float(value)) else "no"

  if claim.interval is not None:
    lo, hi = (lookup(results, k) for k in claim.interval)
    if _finite(lo) and _finite(hi):
      ours += f" [{_fmt(claim, lo)}, {_fmt(claim, hi)}]"
      # A malformed band settles nothing, a failing point included.
      if lo > hi:
        reasons.append("band low > high")
        verdict = "unresolved"
      elif not lo <= value <= hi:
        # An estimator whose band excludes its own point is broken.
        reasons.append("point outside band")
        verdict = "unresolved"
      elif verdict == "yes":
        check = parse_check(claim.check)
        # Checks are half-lines or closed intervals (convex): the whole band
        # passes iff both ends do.
        if not (check(float(lo)) and check(float(hi))):
          reasons.append("band straddles the check")
          verdict = "unresolved"
      elif band_reaches(claim.check, float(lo), float(hi)):  # point fails
        reasons.append("band reaches the check")
        verdict = "unresolved"
    else:  # absent, NaN or infinite (one seed): no side is settled
      reasons.append("band missing")
      verdict = "unresolved"
  elif claim.needs_band:
    reasons.append("one run against another, no band")
    verdict = "unresolved"

  for key, whose in (
    (claim.comparator_diverged, "baseline"),
    (claim.ours_diverged, "ours"),
  ):
    if key is None:
      continue
    flag = lookup(results, key)
    state = diverged(flag)
    if state is None:
      reasons.append(f"no `{key}` ({whose} divergence)")
      verdict = "missing" if verdict == "yes" else verdict
    elif state:
      reasons.append(f"{whose} diverged (`{key}` = {flag})")
      verdict = "no"
  return row(verdict, ours)


def _verdict_cell(row: dict) -> str:
  verdict = row["verdict"]
  text = verdict if verdict == "yes" else f"**{verdict}**"
  if row["reasons"]:
    text += " (" + "; ".join(row["reasons"]) + ")"
  return text


def _cell(text: str) -> str:
  return str(text).replace("|", "\\|").replace("\n", " ")


def counts(rows: list[dict]) -> dict:
  """Number of rows per verdict, every verdict present."""
  out = dict.fromkeys(VERDICTS, 0)
  for r in rows:
    out[r["verdict"]] += 1
  return out


def summary_line(rows: list[dict], scale: str = "quick") -> str:
  """'N claims at the quick scale: a yes, b no, c unresolved, d missing.'"""
  claims = [r for r in rows if not r["claim"].sanity]
  sanity = [r for r in rows if r["claim"].sanity]
  n = counts(claims)
  noun = "claim" if len(claims) == 1 else "claims"
  line = f"{len(claims)} {noun} at the {scale} scale: " + ", ".join(
    f"{n[v]} {v}" for v in VERDICTS
  )
  if sanity:
    line += (
      f". Sanity checks: {counts(sanity)['yes']}/{len(sanity)} pass"
      " (not counted as claims)"
    )
  return line + "."


def _duration(seconds: float | None) -> str:
  if seconds is None or not math.isfinite(seconds):
    return "-"
  minutes, secs = divmod(int(round(seconds)), 60)
  return f"{minutes}:{secs:02d}"


def paper_table(rows: list[dict], run_seconds: dict | None = None) -> list[str]:
  """Markdown lines: one row per paper with its verdict counts (claims only)
  and the wall time of its runs (the sum of `run_seconds` over its runs, a
  run's own duration even when the report reused it), then a total row."""
  run_seconds = run_seconds or {}
  papers = list(dict.fromkeys(r["claim"].paper for r in rows))
  lines = [
    "| paper | claims | yes | no | unresolved | missing | run time |",
    "|---|---|---|---|---|---|---|",
  ]

  def line(label, subset, runs):
    claims = [r for r in subset if not r["claim"].sanity]
    n = counts(claims)
    known = [run_seconds[k] for k in runs if run_seconds.get(k) is not None]
    time = _duration(sum(known)) if known else "-"
    return (
      f"| {label} | {len(claims)} | "
      + " | ".join(str(n[v]) for v in VERDICTS)
      + f" | {time} |"
    )

  for paper in papers:
    subset = [r for r in rows if r["claim"].paper == paper]
    runs = dict.fromkeys(r["claim"].run_name for r in subset)
    lines.append(line(paper, subset, runs))
  runs = dict.fromkeys(r["claim"].run_name for r in rows)
  lines.append(line("**all**", rows, runs))
  return lines


def render_markdown(
  rows: list[dict],
  *,
  environment: str,
  failures: dict,
  changes: dict | None = None,
  scale: str = "quick",
  wall_seconds: float | None = None,
  run_seconds: dict | None = None,
  settle: list[dict] | None = None,
) -> str:
  """The REPORT.md text: summary, claims, the commands that would settle the
  unresolved ones (`settle`, from `settle_commands`), sanity checks, notes,
  failed runs, count.

  The summary at the top is one row per paper (`paper_table`; `run_seconds`:
  {run name: seconds}) under the job's wall time (`wall_seconds`). `changes`
  ({claim name: (old verdict, new verdict)}, e.g. against the last report in
  the same workdir) adds a closing list of the verdicts that changed, each
  with the reasons of its new verdict.
  """
  claims = [r for r in rows if not r["claim"].sanity]
  sanity = [r for r in rows if r["claim"].sanity]

  def figs(c):
    return " ".join(f"[{f}]({c.run_name}/{f})" for f in c.figures)

  lines = ["# Reproduction report", "", environment]
  if wall_seconds is not None:
    lines += ["", f"Wall time: {_duration(wall_seconds)} (m:ss) for the job."]
  lines += ["", "## Summary", "", summary_line(rows, scale), ""]
  lines += paper_table(rows, run_seconds)
  lines += ["", "## Claims", ""]
  lines += [
    "| paper | claim | paper value | ours | comparator | check | verdict "
    "| seeds to settle | figures |",
    "|---|---|---|---|---|---|---|---|---|",
  ]
  for row in claims:
    c = row["claim"]
    needed = row.get("seeds_needed")
    settle_cell = (
      "-"
      if needed is None
      else seeds_needed_text(
        needed, row.get("seeds_unit", c.sample_unit), row.get("seeds_ran")
      )
    )
    lines.append(
      f"| {c.paper} | {_cell(c.claim)} | {_cell(c.paper_value)} | "
      f"{_cell(row['ours'])} | {_cell(c.comparator)} | "
      f"`{c.metric} {c.check}` | {_cell(_verdict_cell(row))} | "
      f"{_cell(settle_cell)} | {figs(c)} |"
    )
  if settle:
    lines += [""] + settle_section(settle)
  if sanity:
    lines += [
      "",
      "## Sanity checks",
      "",
      "Bookkeeping identities and checks against our own numbers; not "
      "claims of the papers, not counted above.",
      "",
      "| paper | check | reference | ours | check | verdict | figures |",
      "|---|---|---|---|---|---|---|",
    ]
    for row in sanity:
      c = row["claim"]
      lines.append(
        f"| {c.paper} | {_cell(c.claim)} | {_cell(c.paper_value)} | "
        f"{_cell(row['ours'])} | `{c.metric} {c.check}` | "
        f"{_cell(_verdict_cell(row))} | {figs(c)} |"
      )
  notes = [r["claim"] for r in rows if r["claim"].note]
  if notes:
    lines += ["", "## Notes", ""]
    lines += [f"- `{c.name}`: {c.note}" for c in notes]
  if failures:
    lines += ["", "## Runs that failed", ""]
    lines += [f"- `{k}`: {v}" for k, v in failures.items()]
  if changes:
    by_name = {r["claim"].name: r for r in rows}
    lines += ["", "## Verdicts changed since the last report", ""]
    for name, (old, new) in changes.items():
      row = by_name.get(name)
      why = f" ({'; '.join(row['reasons'])})" if row and row["reasons"] else ""
      lines.append(f"- `{name}`: {old} -> {new}{why}")
  lines += ["", summary_line(rows, scale), ""]
  return "\n".join(lines)
