"""The registry of paper claims: one module per paper, each defining `CLAIMS`.

`all_claims()` collects them in module order; `experiments/reproduce.py` runs them.
"""

import importlib
import pkgutil


def all_claims() -> list:
  """Every Claim of every module in this package; names must be unique."""
  claims = []
  for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
    module = importlib.import_module(f"{__name__}.{info.name}")
    claims.extend(module.CLAIMS)
  names = [c.name for c in claims]
  duplicates = {n for n in names if names.count(n) > 1}
  if duplicates:
    raise ValueError(f"duplicate claim names: {sorted(duplicates)}")
  return claims
