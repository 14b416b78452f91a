"""Claims of MIX: multi-view time-frequency explanations (NeurIPS 2025).

Ours: a small 1-D CNN per dataset; the best Haar view (and IGV vs OSIGV) is
chosen by deletion AUC on the first half of the explained test series and
scored on the other half, paired per series against time-domain IG (view 0
IGV) and a random ranking; 95 % t intervals over the scored series.
"""

from experiments.claims.report import NO_PAPER_VALUE
from experiments.claims.report import Claim

_COMMON = dict(
  paper="mix", experiment="mix", config="quick", figures=("metrics.png",)
)


def _claim(name, metric, claim, paper_value, comparator, check, note):
  return Claim(
    name=name,
    claim=claim,
    paper_value=paper_value,
    comparator=comparator,
    metric=f"{metric}.mean",
    check=check,
    interval=(f"{metric}.lo", f"{metric}.hi"),
    fmt="{:+.4f}",
    note=note,
    **_COMMON,
  )


_IG = "time-domain integrated gradients (view 0), same series, paired"
_DEL = (
  "Ours: deletion AUC of time IG minus that of the best view (> 0 = MIX's "
  "explanation removes the evidence faster)."
)

CLAIMS = [
  _claim(
    "mix_deletion_beats_time_ig_synthetic",
    "synthetic.deletion.gain_over_time_ig",
    "MIX's best view is more faithful than time-domain IG (deletion AUC) on "
    "the planted sine-burst task.",
    "MIX beats prior methods on faithfulness (UCR/UEA)",
    _IG,
    "> 0",
    _DEL,
  ),
  _claim(
    "mix_deletion_beats_time_ig_gunpoint",
    "GunPoint.deletion.gain_over_time_ig",
    "... and on GunPoint (UCR).",
    "MIX beats prior methods on faithfulness (UCR/UEA)",
    _IG,
    "> 0",
    _DEL,
  ),
  _claim(
    "mix_deletion_beats_time_ig_italy_power",
    "ItalyPowerDemand.deletion.gain_over_time_ig",
    "... and on ItalyPowerDemand (UCR).",
    "MIX beats prior methods on faithfulness (UCR/UEA)",
    _IG,
    "> 0",
    _DEL,
  ),
  _claim(
    "mix_localises_planted_burst",
    "synthetic.localisation.mix_minus_random",
    "The best view localises the planted burst far above random: top-k "
    "precision at least 0.3 above a random ranking.",
    NO_PAPER_VALUE,
    "a random ranking of the time points (precision = window fraction)",
    "> 0.3",
    "Ours: k = the window length; view attributions are mapped to time by "
    "|H|^T |a|. 0.3 was fixed before the runs.",
  ),
]
