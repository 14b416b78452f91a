"""Compact memory for continual logistic regression: K-prior + PPCA Hessian matching.

Modules:
- `kprior`: the K-prior loss of multinomial logistic regression (bias as a
  constant feature; one weight column: the binary sigmoid model), the memory pytree, the replay loss, and the linear-regression
  K-prior with its exact eigen-memory (spec oracle 1).
- `memory`: the PPCA-EM memory update read from the official code
  (un-normalised scatter, clamped beta, un-transform with the previous vectors;
  the Split-CIFAR script's or the four-moons notebook's scaling and stop),
  the memory initialisations (class-balanced random points, largest beta) and
  the distance of a memory from the EM's fixed point (`fixed_point_gap`).
- `learner`: the methods (replay, the random-points K-priors, compact memory)
  as one objective and one task-boundary memory update per method, and the
  batch baseline's loss.
- `data`: the four-moons and Split-digits task sequences and a user's own
  feature file (.npz), with one-line errors for bad input.

References:
  Jung, Lee, Chen, Moellenhoff, Li, Lee, Khan, "How to Train Your Compact
  Memory" (compact memory for continual learning), NeurIPS 2025,
  arXiv 2511.09167; official code team-approx-bayes/compact_memory_code.
  Khan & Swaroop, "Knowledge-Adaptation Priors", NeurIPS 2021 (the K-prior).
"""

from lib.continual.data import Tasks
from lib.continual.data import add_bias
from lib.continual.data import check_tasks
from lib.continual.data import four_moons
from lib.continual.data import from_arrays
from lib.continual.data import load_feature_file
from lib.continual.data import pad_tasks
from lib.continual.data import split_digits
from lib.continual.kprior import Memory
from lib.continual.kprior import accuracy
from lib.continual.kprior import cross_entropy_sum
from lib.continual.kprior import data_divisor
from lib.continual.kprior import eigen_memory
from lib.continual.kprior import empty_memory
from lib.continual.kprior import kprior
from lib.continual.kprior import kprior_linear
from lib.continual.kprior import logits
from lib.continual.kprior import replay_loss
from lib.continual.kprior import soft_cross_entropy
from lib.continual.kprior import task_loss
from lib.continual.learner import METHODS
from lib.continual.learner import Learner
from lib.continual.learner import Trace
from lib.continual.learner import batch_loss
from lib.continual.learner import batch_step
from lib.continual.learner import end_task
from lib.continual.learner import init_learner
from lib.continual.learner import init_theta
from lib.continual.learner import learner_step
from lib.continual.learner import method_id
from lib.continual.learner import objective
from lib.continual.learner import task_boundary
from lib.continual.memory import BETA_CLAMPS
from lib.continual.memory import EARLY_STOP_FROM
from lib.continual.memory import EM_STYLES
from lib.continual.memory import FixedPointGap
from lib.continual.memory import add_vectors
from lib.continual.memory import balanced_picks
from lib.continual.memory import beta
from lib.continual.memory import data_beta
from lib.continual.memory import fixed_point_gap
from lib.continual.memory import memory_beta
from lib.continual.memory import notebook_columns
from lib.continual.memory import observed_rows
from lib.continual.memory import ppca_em_step
from lib.continual.memory import refine
from lib.continual.memory import refine_notebook
from lib.continual.memory import select_balanced
from lib.continual.memory import select_top_beta
from lib.continual.memory import tilde_rows
from lib.continual.memory import until_rise
from lib.continual.memory import update_memory
