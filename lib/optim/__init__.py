"""Optimizers as optax GradientTransformations (NamedTuple states), and methods built on them.

optax transforms: signGD (simplicity bias), NanoAdam, SADL's sketched Adam server step
(`sadl.sketched_adam`), the quotient natural gradient (`qblr.qng`). SADL's distributed
methods (`sadl.sadl(...)` and its baselines) are `sadl.Method`s, not optax transforms: a
client encodes its delta and the server applies the averaged message (`lib.optim.sadl`).
The SADL and NanoAdam constructors keep their module names: `lib.optim.sadl.sadl(...)`,
`lib.optim.nanoadam.nanoadam(...)`. Schedules: `one_cycle_schedule` (torch's OneCycleLR, the
Quartet trainer's).
"""

from lib.optim.nanoadam import NanoAdamLeaf
from lib.optim.nanoadam import NanoAdamState
from lib.optim.nanoadam import bottom_k_mask
from lib.optim.nanoadam import cosine_density
from lib.optim.nanoadam import num_selected
from lib.optim.nanoadam import select_indices
from lib.optim.nanoadam import state_floats
from lib.optim.qblr import QNGLeafState
from lib.optim.qblr import QNGState
from lib.optim.qblr import check_domain
from lib.optim.qblr import fisher
from lib.optim.qblr import horizontal_project
from lib.optim.qblr import in_domain
from lib.optim.qblr import lifted_kl
from lib.optim.qblr import log_partition
from lib.optim.qblr import mean_params
from lib.optim.qblr import natural_from_normal_gamma
from lib.optim.qblr import natural_from_student_t
from lib.optim.qblr import natural_gradient
from lib.optim.qblr import normal_gamma_from_natural
from lib.optim.qblr import pi_jacobian
from lib.optim.qblr import project
from lib.optim.qblr import qng
from lib.optim.qblr import quotient_metric
from lib.optim.qblr import sample_student_t
from lib.optim.qblr import student_t_entropy
from lib.optim.qblr import student_t_fisher
from lib.optim.qblr import student_t_logpdf
from lib.optim.qblr import vertical
from lib.optim.qblr import von_expectations
from lib.optim.qblr import von_step
from lib.optim.sadl import CLIENTS_AXIS
from lib.optim.sadl import Method
from lib.optim.sadl import RoundState
from lib.optim.sadl import check_client_data
from lib.optim.sadl import check_mesh
from lib.optim.sadl import distributed_adam
from lib.optim.sadl import fetchsgd
from lib.optim.sadl import init_state
from lib.optim.sadl import make_client_mesh
from lib.optim.sadl import make_round_fn
from lib.optim.sadl import scale_by_sketched_adam
from lib.optim.sadl import shard_clients
from lib.optim.sadl import sketched_adam
from lib.optim.sadl import sketched_sgd
from lib.optim.schedules import one_cycle_schedule
from lib.optim.sign import sign_gd
from lib.optim.sketch import SKETCH_KINDS
from lib.optim.sketch import fwht
from lib.optim.sketch import make_count_sketch_table
from lib.optim.sketch import make_sketch
from lib.optim.sketch import make_tree_sketch
