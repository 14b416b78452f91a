"""The registry of paper claims: one module per paper, each defining `CLAIMS`.

`report.py` holds the machinery (Claim, verdicts, REPORT.md); `all_claims()`
collects every other module's CLAIMS in module order; `experiments/reproduce.py`
runs them. Every experiment with claims has a smoke test that calls
`tests.helpers.check_claim_keys` (claims_report_test.py enforces it), so a
claim key the results lack fails a test, not the report.
"""

import importlib
import pkgutil

_NOT_PAPERS = ("report",)


def all_claims() -> list:
  """Every Claim of every paper module in this package; names must be unique."""
  claims = []
  for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
    if info.name in _NOT_PAPERS or info.name.startswith("_"):
      continue
    module = importlib.import_module(f"{__name__}.{info.name}")
    claims.extend(module.CLAIMS)
  names = [c.name for c in claims]
  duplicates = {n for n in names if names.count(n) > 1}
  if duplicates:
    raise ValueError(f"duplicate claim names: {sorted(duplicates)}")
  return claims
