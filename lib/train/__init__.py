"""Training runtime: TrainState, step builders, the scanned loop, checkpoints, metrics."""

from lib.train.checkpoint import Checkpointer
from lib.train.distributed import initialize as initialize_distributed
from lib.train.loop import Preempted
from lib.train.loop import Task
from lib.train.loop import full_batch
from lib.train.loop import train
from lib.train.metrics import MetricWriter
from lib.train.metrics import Progress
from lib.train.metrics import check_finite
from lib.train.metrics import prepare_workdir
from lib.train.metrics import read_jsonl
from lib.train.metrics import write_config
from lib.train.metrics import write_results
from lib.train.state import TrainState
from lib.train.state import create_state
from lib.train.state import make_eval_step
from lib.train.state import make_train_step
