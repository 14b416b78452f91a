"""SADL: sketched adaptive distributed learning on a JAX device mesh.

C clients run K local SGD steps each round, send a linear sketch of their
model delta, the sketches are averaged over the `clients` mesh axis and every
device takes the same server step (Adam/AMSGrad on the de-sketched average,
the second moment fed by an independent half-sketch).

One concern a module, as optax splits its transforms:

- `method`: the `Method` interface (encode a delta, apply the averaged
  message) and the bytes-per-round accounting;
- `optimizer`: SADL itself: the sketched Adam server transformation
  (`scale_by_sketched_adam`, `sketched_adam`) and the `sadl` method;
- `baselines`: uncompressed distributed Adam, sketched SGD, FetchSGD;
- `rounds`: the round runtime: `make_round_fn` (shard_map over `clients`, or
  the single-device reference), the client mesh, `shard_clients` and the
  input checks. A round is a step of `lib.train.train`.
- `compare`: the paper's comparison (methods by name, spec E.B's quadratic,
  one sweep member running every method, the lr choice, paired summaries),
  used as `sadl.compare.<name>`, not re-exported.

`from lib.optim import sadl` then `sadl.sadl(...)`, `sadl.make_round_fn(...)`:
every public name of the first four modules is re-exported here.

References:
  Chen, Li, Banerjee. "Sketched Adaptive Distributed Deep Learning: A Sharp
  Convergence Analysis", NeurIPS 2025 (Alg. 1-2; eps finding: spec B.5).
  Rothchild et al. "FetchSGD", ICML 2020 (Alg. 1).
"""

from lib.optim.sadl import compare
from lib.optim.sadl.baselines import FetchSGDState
from lib.optim.sadl.baselines import distributed_adam
from lib.optim.sadl.baselines import fetchsgd
from lib.optim.sadl.baselines import sketched_sgd
from lib.optim.sadl.method import BYTES_PER_INDEX
from lib.optim.sadl.method import BYTES_PER_VALUE
from lib.optim.sadl.method import Method
from lib.optim.sadl.method import check_dim
from lib.optim.sadl.optimizer import ScaleBySketchedAdamState
from lib.optim.sadl.optimizer import sadl
from lib.optim.sadl.optimizer import scale_by_sketched_adam
from lib.optim.sadl.optimizer import sketched_adam
from lib.optim.sadl.rounds import CLIENTS_AXIS
from lib.optim.sadl.rounds import BatchFn
from lib.optim.sadl.rounds import LossFn
from lib.optim.sadl.rounds import RoundState
from lib.optim.sadl.rounds import check_client_data
from lib.optim.sadl.rounds import check_mesh
from lib.optim.sadl.rounds import init_state
from lib.optim.sadl.rounds import make_client_mesh
from lib.optim.sadl.rounds import make_round_fn
from lib.optim.sadl.rounds import shard_clients
