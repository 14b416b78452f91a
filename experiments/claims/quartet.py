"""Claims of "Quartet: Native FP4 Training Can Be Optimal for LLMs" (NeurIPS 2025).

Paper values come from the authors' notebooks (plots.ipynb at commit 5b9d74c,
benchmark_mxfp4.ipynb), which produced the paper's figures; see
shared/specs/quartet_fp4.md section 1.5.
"""

from experiments.claims.report import NO_PAPER_VALUE
from experiments.claims.report import Claim

_LLM = dict(paper="quartet", experiment="quartet_llm", config="quick")
_BENCH = dict(paper="quartet", experiment="bench_mxfp4", config="quick")
_SCALING = dict(paper="quartet", experiment="quartet_scaling", config="quick")
_SCALE_NOTE = (
  "CPU scale: 3 sizes (27k-400k non-embedding params) x 5 token counts "
  "(0.1M-0.4M bytes, D/N 0.25-15) per precision, one seed, one OneCycle run "
  "per (N, D) point as the authors' sweep (config.protocol; 'readings', one "
  "constant-lr run read at every D, was ours until 2026-12-06), bf16 "
  "matmuls as the official autocast. The base law is "
  "fitted in the physical region (alpha, "
  "beta > 0, E >= 0, gamma fixed at the paper's 0.2764); ours is the point "
  "fit with a 95 % band: a paired bootstrap over the (N, D) points refits "
  "base and efficiencies per replicate with the same estimator (the point is "
  "replicate 0), and the band joins the percentile interval with a "
  "log-normal interval around the point, so it always holds its point. "
  "A band that straddles 1 is unresolved: at this scale the Quartet-bf16 "
  "loss differences are near the fit noise, and seed noise is not in the "
  "band (one seed per point). The paper's come from 30M-200M models at "
  "D/N 25-800 on C4. Identifiability (Gauss-Newton se, bootstrap spread "
  "of alpha, beta, E) is in results.json under base."
)
_LLM_NOTE = (
  "CPU scale: 27k non-embedding params (2 layers, d 32) at the paper's D/N "
  "25 (650 steps of 8 x 128 bytes: a batch of 1,024 bytes, the paper's "
  "262,144 tokens), stdlib bytes, the paper's lr 1.2e-3 (not re-tuned), "
  "every method's matmuls in bf16 with float32 sums as under the official "
  "torch autocast (config.compute_dtype), 3 seeds (vmapped; seed s of every "
  "method shares init and data order with seed s of bf16), 256 validation "
  "windows of 128 bytes. The scale matches D/N, not size: in the authors' "
  "sweep the forward's share of the gap shrinks as D/N falls, and "
  "'quick,d128' (0.4M params at D/N 0.5, quick until 2026-12-06) is kept as "
  "a reading. Ours: mean of the per-seed paired differences with its 95 % "
  "Student-t interval (2 degrees of freedom); a claim holds only if the "
  "whole interval passes."
)
_PAIRED = "paired over 3 seeds"
_BOOTSTRAP = (
  "bootstrap band over the sweep's (N, D) points of one seed, not a t "
  "interval over seeds: more sizes and readings (the gpu tier), not seeds"
)

CLAIMS = [
  Claim(
    name="quartet_forward_error",
    claim="QuEST MXFP4 forward (H32, RMS scale, RTN) of a linear layer has "
    "relative squared output error ~5.7e-2 on Gaussian data.",
    paper_value="5.7e-2 (authors' notebook, asserted 2e-2..6e-2)",
    comparator="the authors' notebook value",
    metric="errors.y",
    check="in [0.045, 0.065]",
    fmt="{:.4f}",
    **_BENCH,
  ),
  Claim(
    name="quartet_backward_error_rtn",
    claim="MXFP4 backward GEMMs (absmax x 3/4, random H32) give a weight "
    "gradient (dW) error ~1.2e-1 with round-to-nearest.",
    paper_value="1.2e-1 (authors' notebook: w.grad, asserted 6e-2..15e-2)",
    comparator="the authors' notebook value",
    metric="errors.dw_rtn",
    check="in [0.10, 0.14]",
    fmt="{:.4f}",
    **_BENCH,
  ),
  Claim(
    name="quartet_llm_gap",
    claim="Training all linear GEMMs in MXFP4 (Quartet) stays close to the "
    "high-precision baseline's validation loss: a small positive gap.",
    paper_value="+0.085 nats (30M, D/N 25, C4)",
    comparator=f"bf16 baseline (same layers, quantization off), {_PAIRED}",
    comparator_diverged="gap.quartet.comparator_finite",
    metric="gap.quartet.mean",
    check="in [0.0, 0.15]",
    interval=("gap.quartet.lo", "gap.quartet.hi"),
    samples="gap.quartet.per_seed",
    count_key="seeds",
    fmt="{:+.4f}",
    figures=("loss_curves.png",),
    note=_LLM_NOTE,
    **_LLM,
  ),
  Claim(
    name="quartet_sr_backward_cheap",
    claim="The SR MXFP4 backward alone (BF16 forward) costs little loss.",
    paper_value="+0.0145 nats (30M, D/N 25; plots.ipynb, +0.015 rounded)",
    comparator=f"bf16 baseline (same layers, quantization off), {_PAIRED}",
    comparator_diverged="gap.sr_bwd_only.comparator_finite",
    metric="gap.sr_bwd_only.mean",
    check="in [-0.03, 0.05]",
    interval=("gap.sr_bwd_only.lo", "gap.sr_bwd_only.hi"),
    samples="gap.sr_bwd_only.per_seed",
    count_key="seeds",
    fmt="{:+.4f}",
    note=_LLM_NOTE,
    **_LLM,
  ),
  Claim(
    name="quartet_forward_dominates_gap",
    claim="The forward quantizer causes more of Quartet's loss gap than the "
    "backward (gap of QuEST-fwd-only minus gap of SR-bwd-only > 0).",
    paper_value="+0.0519 nats (30M, D/N 25; plots.ipynb: QuEST-fwd-only "
    "gap minus SR-bwd-only gap)",
    comparator=f"SR-backward-only run (its gap to bf16), {_PAIRED}",
    comparator_diverged="fwd_minus_bwd_gap.comparator_finite",
    metric="fwd_minus_bwd_gap.mean",
    check="> 0",
    interval=("fwd_minus_bwd_gap.lo", "fwd_minus_bwd_gap.hi"),
    samples="fwd_minus_bwd_gap.per_seed",
    count_key="seeds",
    fmt="{:+.4f}",
    note=_LLM_NOTE,
    **_LLM,
  ),
  Claim(
    name="quartet_scaling_law_fits",
    claim="The paper's law L = (A/N^alpha + B/D^beta)^gamma + E, Huber-fitted "
    "on log L, describes the high-precision runs across N and D.",
    paper_value="(none); fit on C4 30M-800M (plots notebook)",
    comparator="threshold (ours) on the fit residual of the law "
    "constrained to the physical region",
    metric="base.rms_log_residual",
    check="<= 0.02",
    fmt="{:.4f}",
    figures=("scaling_fit.png",),
    note="Ours: rms of log(fitted / observed) over the bf16 sweep points, "
    "for the fit constrained to alpha, beta > 0, E >= 0 and the paper's "
    "gamma 0.2764 (reparameterised, so no fit can leave that region; the "
    "earlier unconstrained fit passed with alpha 0.004, gamma 20.9). The "
    "threshold is ours and loose: the authors' fit leaves 0.0014 on their "
    "points; quartet_scaling_law_beats_plane compares with a 3-parameter "
    "plane.",
    **_SCALING,
  ),
  Claim(
    name="quartet_scaling_law_beats_plane",
    claim="The law fits the bf16 points better than a plane log L = c + a "
    "log N + b log D (3 parameters): law rms log residual minus the plane's.",
    paper_value=NO_PAPER_VALUE,
    metric="base.law_minus_plane_rms",
    check="< 0",
    fmt="{:+.4f}",
    sanity=True,
    note="A yardstick for quartet_scaling_law_fits: a law that fits no "
    "better than a plane in (log N, log D) shows no curvature (no "
    "irreducible loss E, no interaction of N and D) that these points can "
    "confirm. With 'readings' (one constant-lr run read at every D) the "
    "plane won, 0.0085 against 0.0151 (2026-12-05).",
    **_SCALING,
  ),
  Claim(
    name="quartet_scaling_exponents_identified",
    claim="At this scale the base law's exponents are identified: "
    "Gauss-Newton standard error of log alpha and log beta <= 0.25.",
    paper_value=NO_PAPER_VALUE,
    metric="base.identifiability.exponent_se",
    check="<= 0.25",
    fmt="{:.3f}",
    sanity=True,
    note="Diagnostic of the fit behind quartet_eff_n / quartet_eff_d: the "
    "larger of the standard errors of log alpha and log beta (from J^T J of "
    "log L over the bf16 points, scaled by the residual rms); inf when the "
    "points cannot separate an exponent from its prefactor.",
    **_SCALING,
  ),
  Claim(
    name="quartet_eff_n",
    claim="Quartet's MXFP4 forward costs parameter efficiency: effN < 1 "
    "(an FP4 model is worth effN N baseline parameters).",
    paper_value="effN 0.658 (Quartet joint fit)",
    comparator="bf16 baseline (effN = 1 by definition of the base law "
    "fitted on its points)",
    metric="eff.quartet.eff_n",
    check="< 1",
    fmt="{:.3f}",
    interval=("eff.quartet.eff_n_lo", "eff.quartet.eff_n_hi"),
    no_samples=_BOOTSTRAP,
    figures=("scaling_fit.png",),
    note=_SCALE_NOTE,
    **_SCALING,
  ),
  Claim(
    name="quartet_eff_d",
    claim="Quartet's SR MXFP4 backward costs data efficiency: effD < 1 "
    "(FP4 training on D tokens is worth effD D baseline tokens).",
    paper_value="effD 0.822 (Quartet joint fit)",
    comparator="bf16 baseline (effD = 1 by definition of the base law "
    "fitted on its points)",
    metric="eff.quartet.eff_d",
    check="< 1",
    fmt="{:.3f}",
    interval=("eff.quartet.eff_d_lo", "eff.quartet.eff_d_hi"),
    no_samples=_BOOTSTRAP,
    note=_SCALE_NOTE,
    **_SCALING,
  ),
]
