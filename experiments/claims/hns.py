"""Claims of "Hamiltonian Neural PDE Solvers through Functional Approximation" (NeurIPS 2025).

Every comparison is against the strongest baseline the run trained (named in
results.json under `*_vs_best.comparator`), with divergence counted in the
metric (experiments/_hns.py), the comparator's finite fraction as the
divergence flag, and a paired Student-t interval over seeds (or over the
validation trajectories when a run has one seed; for the official KdV
correlation time, one value per validation batch, over the batches).
"""

from experiments.claims.report import Claim

_PAPER = dict(paper="hns", config="quick")
_TOY_TUNING = (
  "Both models get the same budget: 3 learning rates at seed 0, the rate "
  "picked per model by its derivative MSE on a separate selection set, and "
  "seeds 0-9 at that rate, 1k steps each (paper variant: 10k); ours is the "
  "geometric mean over seeds [95% t-interval]."
)

CLAIMS = [
  Claim(
    name="hns_toy_ikf_grad_mse",
    claim="Trained on scalar F_l = int x^2 u only, the IKF's autodiff "
    "functional derivative matches x^2 (validation MSE).",
    paper_value="1.15e-3",
    comparator="analytic derivative x^2 (threshold 0.01, spec H0)",
    metric="linear.ikf.grad_mse",
    check="< 0.01",
    fmt="{:.2e}",
    interval=("linear.ikf.grad_mse_lo", "linear.ikf.grad_mse_hi"),
    samples="linear.ikf.grad_mse_seeds",
    count_key="num_seeds",
    samples_log=True,
    experiment="hns_toy",
    figures=("functional_derivatives.png",),
    **_PAPER,
  ),
  Claim(
    name="hns_toy_ikf_vs_mlp",
    claim="The IKF's functional-derivative MSE on F_l is >= 10x below an "
    "MLP's trained on the same scalars.",
    paper_value="0.083 / 1.15e-3 = 72x",
    comparator="MLP on [x, u] (7.5K params), same data, same learning-rate "
    "sweep and seeds; paired by seed",
    metric="linear.grad_mse_ratio",
    check=">= 10",
    fmt="{:.0f}x",
    interval=("linear.grad_mse_ratio_lo", "linear.grad_mse_ratio_hi"),
    samples="linear.grad_mse_ratio_seeds",
    count_key="num_seeds",
    samples_log=True,
    experiment="hns_toy",
    note=_TOY_TUNING + " The ratio is far above the paper's 72x because "
    "both errors differ from Table 1: at quick scale our tuned MLP's MSE is "
    "~0.5 (paper 0.083) and our IKF's ~3e-4 (paper 1.15e-3); see "
    "`linear.mlp.lr_sweep` in results.json.",
    **_PAPER,
  ),
  Claim(
    name="hns_toy_cubic_ikf_grad_mse",
    claim="Trained on scalar F_nl = int u^3 only, the IKF with a kernel "
    "kappa(x, u) recovers dF/du = 3 u^2 (validation MSE).",
    paper_value="0.045",
    comparator="analytic derivative 3 u^2 (threshold 0.2, spec H0)",
    metric="cubic.ikf.grad_mse",
    check="< 0.2",
    fmt="{:.3f}",
    interval=("cubic.ikf.grad_mse_lo", "cubic.ikf.grad_mse_hi"),
    samples="cubic.ikf.grad_mse_seeds",
    count_key="num_seeds",
    samples_log=True,
    experiment="hns_toy",
    figures=("functional_derivatives.png",),
    note=_TOY_TUNING + " The 1k-step budget matters here: with 2k steps "
    "(measured once, 4 rates) the band was 0.089 [0.042, 0.191].",
    **_PAPER,
  ),
  Claim(
    name="hns_toy_cubic_ikf_vs_mlp",
    claim="The IKF's functional-derivative MSE on F_nl is >= 10x below an "
    "MLP's trained on the same scalars.",
    paper_value="1.33 / 0.045 = 30x",
    comparator="MLP on [x, u] (7.5K params), same data, same learning-rate "
    "sweep and seeds; paired by seed",
    metric="cubic.grad_mse_ratio",
    check=">= 10",
    fmt="{:.0f}x",
    interval=("cubic.grad_mse_ratio_lo", "cubic.grad_mse_ratio_hi"),
    samples="cubic.grad_mse_ratio_seeds",
    count_key="num_seeds",
    samples_log=True,
    experiment="hns_toy",
    note=_TOY_TUNING,
    **_PAPER,
  ),
  Claim(
    name="hns_advection_rollout",
    claim="HNS rolled out 5x past its training window (t = 4 -> 20) on "
    "advection has a small relative L2 error.",
    paper_value="0.0039",
    comparator="threshold 0.05 (~ the paper's du/dt FNO, 0.048)",
    metric="rollout_error",
    check="<= 0.05",
    fmt="{:.4f}",
    interval=("rollout_error_lo", "rollout_error_hi"),
    samples="hns.rollout_error_seeds",
    count_key="num_seeds",
    experiment="hns_advection",
    figures=("rollout.png",),
    note="Quick scale: n_x 64, 256 train trajectories, 1.5k steps, 3 seeds "
    "(mean [95% t-interval over seeds]); spectral J (a central J at n_x 64 "
    "alone costs ~0.09 by t = 20), which the CNN baselines also get, as an "
    "input channel J u.",
    **_PAPER,
  ),
  Claim(
    name="hns_advection_rollout_vs_best",
    claim="HNS's advection rollout error is below the best baseline's "
    "(ratio baseline / HNS > 1).",
    paper_value="0.048 / 0.0039 = 12x (du/dt FNO)",
    comparator="best baseline run by rollout error, divergence counted "
    "(quick: du/dt CNN with input channels u, J u); paired by seed",
    comparator_diverged="rollout_vs_best.comparator_finite_fraction",
    metric="rollout_vs_best.point",
    check="> 1",
    fmt="{:.2f}x",
    interval=("rollout_vs_best.lo", "rollout_vs_best.hi"),
    samples="rollout_vs_best.baselines.*.per_unit",
    count_key="num_seeds",
    samples_log=True,
    experiment="hns_advection",
    figures=("rollout.png",),
    note="The quick config does not run the next-step CNN: with the J u "
    "channel and the official u_{t+1} target it diverged on 6 of 48 "
    "trajectories of 3 seeds (finite fraction 0.875; rollout error 0.29 "
    "over the finite ones, the du/dt CNN's 0.010), with our increment "
    "target on all 48, when measured; the paper variant runs it.",
    **_PAPER,
  ),
  Claim(
    name="hns_advection_h_error",
    claim="HNS's Hamiltonian error is >= 10x below the best baseline's.",
    paper_value="~165x (0.0002 vs 0.033, du/dt FNO)",
    comparator="best baseline run by H error, divergence counted (quick: "
    "du/dt CNN with input channels u, J u); paired by seed",
    comparator_diverged="h_error_vs_best.comparator_finite_fraction",
    metric="h_error_vs_best.point",
    check=">= 10",
    fmt="{:.0f}x",
    interval=("h_error_vs_best.lo", "h_error_vs_best.hi"),
    samples="h_error_vs_best.baselines.*.per_unit",
    count_key="num_seeds",
    samples_log=True,
    experiment="hns_advection",
    figures=("hamiltonian.png",),
    **_PAPER,
  ),
  Claim(
    name="hns_kdv_corr_time",
    claim="On KdV, HNS's correlation time (Pearson >= 0.8, steps of 200) "
    "exceeds the best baseline's.",
    paper_value="151 vs 113 (Unet du/dt), 134 (Unet next-step)",
    comparator="best of du/dt CNN and next-step CNN by correlation time, "
    "the official one (the Pearson correlation averaged over a batch of 32 "
    "validation trajectories, all when fewer, its first step below 0.8, "
    "nt - 1 if never, a NaN step never below; one time per batch); paired "
    "by (seed, validation batch): a t-interval over seeds of the per-seed "
    "mean over batches, or over the batches of a single seed",
    comparator_diverged="corr_time_vs_best.comparator_finite_fraction",
    ours_diverged="hns.finite_fraction",
    metric="corr_time_vs_best.point",
    check="> 0",
    fmt="{:+.1f}",
    interval=("corr_time_vs_best.lo", "corr_time_vs_best.hi"),
    samples="corr_time_vs_best.baselines.*.per_unit",
    experiment="hns_kdv",
    figures=("rollout.png", "hamiltonian.png"),
    note="Quick scale: n_x 128, 256 train trajectories, 1k steps, one seed "
    "(the HNS step is ~10x a CNN step on CPU) and 64 validation "
    "trajectories: two official batches, so two (seed, batch) units and a "
    "t-interval with 1 degree of freedom. The official rule lets a "
    "diverged batch look correlated (a NaN step never counts as below "
    "0.8): diverged trajectories are counted apart "
    "(`corr_time_vs_best.num_diverged`, `hns.finite_fraction`). "
    "Ours, each trajectory's time with a non-finite step counting as "
    "decorrelated, stands beside it in results.json "
    "(`<model>.correlation_time_per_trajectory`); "
    "`--config.corr_time=per_trajectory` makes it the row's number. "
    "Reported, not expected to match the paper's scale. "
    "Every model is trained and rolled out on the half of the generated "
    "trajectories whose H varies least, as the official loader's H filter "
    "(its measure ours: config.pde.h_filter; ':keep_all' keeps every one, "
    "where the steepest trajectories diverge). Read it with the sanity row "
    "on the oracle HNS: where an HNS with the exact dH/du decorrelates "
    "before the baselines, this row is capped by the discretisation (the "
    "official smooth J, central u_xx labels and AB2 at dt 0.5), not by "
    "what HNS learns. At the paper's n_x 256 the oracle diverges on every "
    "trajectory, and so did the trained HNS of the paper variant (one "
    "seed, measured once on our data, WORKSPACE), whose official time "
    "nonetheless read 152.25 (the paper's: 151): three of its four "
    "batches went NaN before their mean correlation fell below 0.8 and "
    "scored nt - 1. A 'yes' may not rest on that: where HNS diverged "
    "(`hns.finite_fraction` < 1) the row reads 'no'.",
    **_PAPER,
  ),
  Claim(
    name="hns_kdv_oracle_reaches_baselines",
    claim="At this discretisation an HNS with the exact functional "
    "derivative (the training label, the same J, grid and AB2 step) keeps "
    "its correlation at least as long as the best baseline: the setup "
    "leaves HNS room to win.",
    paper_value="(none)",
    metric="oracle_minus_best_baseline_corr_time",
    check=">= 0",
    fmt="{:+.1f}",
    experiment="hns_kdv",
    figures=("rollout.png",),
    note="The oracle's correlation time (`oracle.correlation_time`, the "
    "official rule) minus the best baseline's; `oracle` in results.json "
    "holds its rollout error, H error and divergence. An oracle that "
    "diverged fails the row whatever its official time.",
    ours_diverged="oracle.finite_fraction",
    sanity=True,
    **_PAPER,
  ),
]
