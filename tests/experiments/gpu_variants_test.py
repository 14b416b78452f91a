"""Every experiment of the reproduce report has a `gpu` variant (issue 35)
that parses, and whose `gpu,smoke` run works on CPU.

Where `gpu,smoke` is the same config as `quick,smoke` (every key but the
variant's name), the experiment's own smoke test already runs it; only the
others run here, so the suite pays for what is new.
"""

import importlib

import pytest

from configs import reproduce as reproduce_config
from experiments import claims as claims_lib
from experiments import reproduce

_GPU_RUNS = sorted(
  {
    (c.experiment, c.config)
    for c in reproduce.at_tier(claims_lib.all_claims(), "gpu")
  }
)


def _flat(d, prefix=""):
  out = {}
  for k, v in d.items():
    if isinstance(v, dict):
      out.update(_flat(v, f"{prefix}{k}."))
    else:
      out[f"{prefix}{k}"] = v
  return out


def _get(config_module, arg):
  try:
    return config_module.get_config(arg)
  except ValueError as e:
    if "unknown variant 'gpu'" in str(e):
      pytest.skip(
        f"{config_module.__name__} has no gpu variant yet (the bench "
        "configs get theirs from GPU part 1; this test covers them once "
        "both are merged)"
      )
    raise


def test_the_gpu_tier_selects_gpu_variants():
  config = reproduce_config.get_config("gpu")
  assert config.tier == "gpu"
  assert all(arg.split(",")[0] == "gpu" for _, arg in _GPU_RUNS)
  # A budget for every run of the tier.
  runs = {c.run_name for c in reproduce.at_tier(claims_lib.all_claims(), "gpu")}
  assert runs == set(config.expected_seconds)
  assert reproduce_config.get_config("gpu,smoke").smoke
  # The CPU tier is the default and may be named, as every config's `quick`.
  assert reproduce_config.get_config("").tier == "quick"
  assert reproduce_config.get_config("quick,smoke").tier == "quick"
  with pytest.raises(ValueError, match="'quick' or 'gpu'"):
    reproduce_config.get_config("paper")


@pytest.mark.parametrize("experiment,arg", _GPU_RUNS)
def test_gpu_variant_parses_and_runs_at_smoke_size(
  experiment, arg, tmp_path, fast_compile
):
  config_module = importlib.import_module(f"configs.{experiment}")
  full = _get(config_module, arg)
  assert full.variant == "gpu"
  smoke = _get(config_module, f"{arg},smoke")
  quick = config_module.get_config(
    ",".join(["quick", *arg.split(",")[1:], "smoke"])
  )
  a, b = _flat(smoke.to_dict()), _flat(quick.to_dict())
  differ = {k for k in a.keys() | b.keys() if a.get(k) != b.get(k)}
  if differ <= {"variant"}:
    return  # tests/experiments/<experiment>_test.py runs this config.
  module = importlib.import_module(f"experiments.{experiment}")
  results = module.run(smoke, str(tmp_path))
  assert results, f"{experiment}:{arg},smoke wrote no results ({differ})"
