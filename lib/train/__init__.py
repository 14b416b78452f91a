"""Training runtime: the loop over a step function, checkpoints, metrics, progress.

state, history = lib.train.train(init_fn, step_fn, workdir=..., config=...)
state, history = lib.train.fit(task, optax_tx, workdir=..., config=...)
result = lib.train.run_sweep(init_one, step_one, lib.train.sweep_grid(lr=...,
                             seed=...), workdir=..., config=...)
"""

from lib.core.errors import check_one_of
from lib.train.checkpoint import Checkpointer
from lib.train.distributed import initialize as initialize_distributed
from lib.train.logs import enable_logging
from lib.train.loop import Task
from lib.train.loop import fit
from lib.train.loop import full_batch
from lib.train.loop import order_key
from lib.train.loop import train
from lib.train.metrics import MetricWriter
from lib.train.metrics import Progress
from lib.train.metrics import Sweep
from lib.train.metrics import check_finite
from lib.train.metrics import read_jsonl
from lib.train.preemption import Preempted
from lib.train.state import TrainState
from lib.train.state import create_state
from lib.train.state import make_train_step
from lib.train.sweep import Settings
from lib.train.sweep import SweepResult
from lib.train.sweep import fit_seeds
from lib.train.sweep import grid as sweep_grid
from lib.train.sweep import run_sweep
from lib.train.sweep import select_best
from lib.train.sweep import stack as sweep_stack
from lib.train.workdir import draw_figure
from lib.train.workdir import is_main_process
from lib.train.workdir import lock as lock_workdir
from lib.train.workdir import phase_config
from lib.train.workdir import prepare_run
from lib.train.workdir import prepare_workdir
from lib.train.workdir import save_figure
from lib.train.workdir import write_config
from lib.train.workdir import write_json
from lib.train.workdir import write_results
