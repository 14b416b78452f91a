"""Claims of "Sketched Adaptive Distributed Deep Learning" (SADL, NeurIPS 2025).

Every method of the run (SADL as Alg. 2 with two half-sketches, SADL with
one sketch into a plain Adam server, sketched SGD, FetchSGD, uncompressed
Adam) gets the same learning-rate budget (3 server lrs each on the quadratic,
chosen by final L_T/L_0; 4 on the MLP, chosen by the final error on a
validation part of the training split; experiments/sadl.py), and every
comparison is against the best
compressed baseline of the run, named in results.json (`*.comparator`), with
the baselines' divergence counted (`comparator_finite_fraction`).
"""

from experiments.claims.report import Claim

_COMMON = dict(paper="sadl", experiment="sadl", config="quick")
_SCALE = (
  "CPU scale: power-law quadratic (intrinsic dim ~2.6), 8 clients on a "
  "`clients` mesh, b = 256, 500 rounds, 3 seeds of the sketches (each "
  "method's lr chosen by its mean over them); each "
  "method at the best of its 3 server lrs; the paper's ResNet/ViT/BERT "
  "results are out of CPU reach."
)
_MLP = (
  "MLP 64-64-10 (d = 4810) on 8-client digits, K = 5 local SGD steps, 300 "
  "rounds, 22 seeds paired across methods (mean [95% t-interval]); each "
  "method at the best of its 4 server lrs by the final error on a "
  "validation fifth of the training split, held out of every client (mean "
  "over seeds; `configs/sadl.py:quick,select_train_loss`, the protocol "
  "until 2026-12-06, chooses among 3 lrs by final train loss with no "
  "hold-out, and picks SADL's fastest, most overfitting rate), accuracy read "
  "on the test split. A small model, where spec B.5 "
  "already found SADL only on par with sketched SGD. Bytes: SADL and "
  "sketched SGD send b floats each way; FetchSGD at the same sketch budget "
  "sends fewer (3 rows x b/3 up, top-k values and int32 indices down: "
  "`mlp.*.bytes_per_round`), so 'the same bytes' is at most SADL's."
)
# Table 8 reads 0.1 % and 1 % of the bytes (1000x, 100x compression); the
# MLP runs 10x and 50x: the paper values are the nearest published, not the
# same compression.
_UNSPLIT = "(none); the paper does not say how its experiments split b"

CLAIMS = [
  Claim(
    name="sadl_dimension_free",
    claim="With a fixed sketch size, SADL's convergence does not degrade with "
    "the ambient dimension d when the intrinsic dimension is small: "
    "L_T/L_0 at d = 2^16 over d = 2^12.",
    paper_value="(none); Thm 2.2, Cor. 2: rate depends on intrinsic dim, "
    "log d only",
    comparator="SADL itself at d = 2^12 (the baselines' own growth is in "
    "quadratic.dim_growth)",
    metric="quadratic.sadl_dim_growth",
    check="<= 1.25",
    fmt="{:.3f}",
    figures=("sadl.png",),
    note=_SCALE + " eps = 1e-3 (spec B.5); with eps = 1e-8 the same sweep "
    "degrades with d (results.json quadratic.*.sadl_eps1e-8). Not specific "
    "to SADL: sketched SGD's L_T/L_0 is as flat in d "
    "(quadratic.dim_growth.sketched_sgd).",
    **_COMMON,
  ),
  Claim(
    name="sadl_quadratic_beats_best_baseline",
    claim="At the same bytes (b = 256), SADL's L_T/L_0 on the power-law "
    "quadratic is at most the best compressed baseline's at every d "
    "(worst over d of SADL minus the best baseline).",
    paper_value="(none) on a quadratic; on ResNet/CIFAR-10 at 0.1 % SADL "
    "17.8 % vs FetchSGD 36.2 % val. error (Table 8)",
    comparator="best of sketched SGD and FetchSGD at each d, each at its "
    "best of 3 lrs (named in quadratic.vs_best_baseline.comparator)",
    comparator_diverged="quadratic.vs_best_baseline.comparator_finite_fraction",
    metric="quadratic.vs_best_baseline.point",
    check="<= 0",
    interval=("quadratic.vs_best_baseline.lo", "quadratic.vs_best_baseline.hi"),
    samples="quadratic.vs_best_baseline.per_seed.*",
    count_key="quadratic.seeds",
    fmt="{:+.4f}",
    figures=("sadl.png",),
    note=_SCALE + " Sketched SGD (server SGD on the de-sketched mean delta) "
    "is the best baseline at every d; spec B.5's prototype found the same "
    "(0.092-0.100 vs SADL's 0.097-0.106 at fixed lrs). Band: paired by "
    "round-key seed against every baseline at every d.",
    **_COMMON,
  ),
  Claim(
    name="sadl_close_to_uncompressed_adam",
    claim="SADL at >= 16x compression stays within 0.1 L_0 of uncompressed "
    "distributed Adam on the quadratic sweep (max over d of the L_T/L_0 gap).",
    paper_value="(none); SADL ~ uncompressed at 0.1-1 % of the bytes "
    "(Table 8, Fig. 2)",
    comparator="uncompressed distributed Adam, best of 3 lrs",
    comparator_diverged="quadratic.adam_diverged",
    metric="quadratic.sadl_gap_to_adam_max",
    check="<= 0.1",
    interval=("quadratic.sadl_gap_to_adam.lo", "quadratic.sadl_gap_to_adam.hi"),
    samples="quadratic.sadl_gap_to_adam.per_seed.*",
    count_key="quadratic.seeds",
    fmt="{:.3f}",
    note=_SCALE + " Adam may pick the largest lr of its grid "
    "(quadratic.d*.adam.best_at_edge): a better-tuned Adam could only widen "
    "the gap, by at most Adam's own L_T/L_0 (quadratic.d*.adam.loss_ratio). "
    "Band: paired by round-key seed at every d.",
    **_COMMON,
  ),
  Claim(
    name="sadl_mlp_accuracy_near_adam",
    claim="On 8-client digits, SADL at 10x compression reaches test accuracy "
    "within 2 points of uncompressed distributed Adam (Adam minus SADL).",
    paper_value="ResNet/CIFAR-10 at 0.1 % of the bytes (1000x): SADL 17.8 % "
    "val. error (Table 8)",
    comparator="uncompressed distributed Adam, best of 4 lrs by validation "
    "error; paired by seed",
    comparator_diverged="mlp.vs_adam_10x.comparator_finite_fraction",
    metric="mlp.vs_adam_10x.point",
    check="<= 0.02",
    fmt="{:+.3f}",
    interval=("mlp.vs_adam_10x.lo", "mlp.vs_adam_10x.hi"),
    samples="mlp.vs_adam_10x.per_seed",
    count_key="mlp.seeds",
    figures=("sadl.png",),
    note=_MLP,
    **_COMMON,
  ),
  Claim(
    name="sadl_mlp_beats_best_baseline_10x",
    claim="At the same bytes (10x), SADL's test accuracy is at least the "
    "best compressed baseline's on 8-client digits (SADL minus best).",
    paper_value="SADL 17.8 % vs FetchSGD 36.2 % val. error at 0.1 % of the "
    "bytes, 1000x (Table 8; ours is 10x)",
    comparator="best of sketched SGD and FetchSGD at 10x by test accuracy, "
    "each at its best of 4 lrs by validation error (named in "
    "mlp.vs_best_baseline_10x."
    "comparator); paired by seed",
    comparator_diverged="mlp.vs_best_baseline_10x.comparator_finite_fraction",
    metric="mlp.vs_best_baseline_10x.point",
    check=">= 0",
    fmt="{:+.3f}",
    interval=("mlp.vs_best_baseline_10x.lo", "mlp.vs_best_baseline_10x.hi"),
    samples="mlp.vs_best_baseline_10x.baselines.*.per_seed",
    count_key="mlp.seeds",
    figures=("sadl.png",),
    note=_MLP + " FetchSGD: 3-row count sketch, top-k = cols/2, momentum 0.9.",
    **_COMMON,
  ),
  Claim(
    name="sadl_mlp_beats_best_baseline_50x",
    claim="At the same bytes (50x), SADL's test accuracy is at least the "
    "best compressed baseline's on 8-client digits (SADL minus best).",
    paper_value="SADL 16.9 % vs FetchSGD 28.2 % val. error at 1 % of the "
    "bytes, 100x (Table 8; ours is 50x)",
    comparator="best of sketched SGD and FetchSGD at 50x by test accuracy, "
    "each at its best of 4 lrs by validation error (named in "
    "mlp.vs_best_baseline_50x."
    "comparator); paired by seed",
    comparator_diverged="mlp.vs_best_baseline_50x.comparator_finite_fraction",
    metric="mlp.vs_best_baseline_50x.point",
    check=">= 0",
    fmt="{:+.3f}",
    interval=("mlp.vs_best_baseline_50x.lo", "mlp.vs_best_baseline_50x.hi"),
    samples="mlp.vs_best_baseline_50x.baselines.*.per_seed",
    count_key="mlp.seeds",
    figures=("sadl.png",),
    note=_MLP,
    **_COMMON,
  ),
  # The same comparisons for one full-b sketch into a plain Adam server
  # (`sadl_one_sketch`): Alg. 2 splits b into two half-sketches, one per
  # moment; the experiments say only "Adam as the server optimizer".
  Claim(
    name="sadl_one_sketch_quadratic_beats_best_baseline",
    claim="SADL with one sketch of all b rows and a plain Adam server: at "
    "the same bytes its L_T/L_0 on the power-law quadratic is at most the "
    "best compressed baseline's at every d.",
    paper_value="(none) on a quadratic",
    comparator="best of sketched SGD and FetchSGD at each d, each at its "
    "best of 3 lrs (named in quadratic.one_sketch_vs_best_baseline."
    "comparator)",
    comparator_diverged="quadratic.one_sketch_vs_best_baseline."
    "comparator_finite_fraction",
    metric="quadratic.one_sketch_vs_best_baseline.point",
    check="<= 0",
    interval=(
      "quadratic.one_sketch_vs_best_baseline.lo",
      "quadratic.one_sketch_vs_best_baseline.hi",
    ),
    samples="quadratic.one_sketch_vs_best_baseline.per_seed.*",
    count_key="quadratic.seeds",
    fmt="{:+.4f}",
    figures=("sadl.png",),
    note=_SCALE + " Ours: a reading of the experiments' server (a repository "
    "thought to be the first author's, not confirmed as the official "
    "release, sketches once); SADL's lr grid.",
    **_COMMON,
  ),
  *(
    Claim(
      name=f"sadl_one_sketch_mlp_beats_best_baseline_{r}x",
      claim=f"SADL with one sketch of all b rows and a plain Adam server: at "
      f"the same bytes ({r}x) its test accuracy is at least the best "
      "compressed baseline's on 8-client digits.",
      paper_value=_UNSPLIT,
      comparator=f"best of sketched SGD and FetchSGD at {r}x by test "
      "accuracy, each at its best of 4 lrs by validation error (named in "
      f"mlp.one_sketch_vs_best_baseline_{r}x.comparator); paired by seed",
      comparator_diverged=f"mlp.one_sketch_vs_best_baseline_{r}x."
      "comparator_finite_fraction",
      metric=f"mlp.one_sketch_vs_best_baseline_{r}x.point",
      check=">= 0",
      fmt="{:+.3f}",
      interval=(
        f"mlp.one_sketch_vs_best_baseline_{r}x.lo",
        f"mlp.one_sketch_vs_best_baseline_{r}x.hi",
      ),
      samples=f"mlp.one_sketch_vs_best_baseline_{r}x.baselines.*.per_seed",
      count_key="mlp.seeds",
      figures=("sadl.png",),
      note=_MLP,
      **_COMMON,
    )
    for r in (10, 50)
  ),
  Claim(
    name="sadl_quadratic_converges",
    claim="SADL at >= 16x compression reduces the power-law quadratic's loss "
    "to <= 13 % of its start after 500 rounds, at every d in {2^12, 2^14, "
    "2^16}.",
    paper_value="(none)",
    sanity=True,
    metric="quadratic.sadl_ratio_max",
    check="<= 0.13",
    fmt="{:.3f}",
    note=_SCALE + " Our own oracle, not the paper's: spec B.5's prototype "
    "measured 0.097 / 0.103 / 0.106 at lr 1e-2 (spec E.B threshold 0.13).",
    **_COMMON,
  ),
]
