"""NanoAdam: Adam on the k smallest-magnitude weights of each layer.

One concern a module:

- `optimizer`: NanoAdam itself, an optax GradientTransformation (`nanoadam`),
  its gradient-free mask selection and density schedule;
- `finetune`: what the paper's fine-tuning experiment measures (task-
  incremental accuracy, drift, the rank correlation of |w| and |g|, the
  ratio of selected learning rates) and `with_step`, NanoAdam inside a
  vmapped sweep.

`from lib.optim import nanoadam` then `nanoadam.nanoadam(...)`: every public
name of the two modules is re-exported here.

References:
  Zhou, Jacobs, Gadhikar, Burkholz, "Pay Attention to Small Weights"
  (NanoAdam), NeurIPS 2025.
"""

from lib.optim.nanoadam.finetune import drift
from lib.optim.nanoadam.finetune import lr_ratio
from lib.optim.nanoadam.finetune import spearman
from lib.optim.nanoadam.finetune import task_accuracy
from lib.optim.nanoadam.finetune import weight_gradient_spearman
from lib.optim.nanoadam.finetune import with_step
from lib.optim.nanoadam.optimizer import CRITERIA
from lib.optim.nanoadam.optimizer import NanoAdamLeaf
from lib.optim.nanoadam.optimizer import NanoAdamState
from lib.optim.nanoadam.optimizer import bottom_k_mask
from lib.optim.nanoadam.optimizer import cosine_density
from lib.optim.nanoadam.optimizer import nanoadam
from lib.optim.nanoadam.optimizer import num_selected
from lib.optim.nanoadam.optimizer import select_indices
from lib.optim.nanoadam.optimizer import state_floats
