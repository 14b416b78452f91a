"""Shared model definitions (flax.linen): the tiny Llama; two_layer for simplicity bias;
the digits MLP (SADL, NanoAdam); the 1-D CNN time-series classifier (MIX).

`lib.models` may import `lib.quant` (for QuartetDense): see WORKSPACE.md.
"""

from lib.models.cnn1d import CNN1D
from lib.models.cnn1d import Conv1D
from lib.models.llama import COMPUTE_DTYPES
from lib.models.llama import RESIDUAL_INITS
from lib.models.llama import Llama
from lib.models.llama import LlamaConfig
from lib.models.llama import RMSNorm
from lib.models.llama import next_token_loss
from lib.models.llama import non_embedding_params
from lib.models.llama import rotary
from lib.models.llama import swiglu_hidden
from lib.models.llama import weight_decay_mask
from lib.models.mlp import MLP
from lib.models.two_layer import boundary_crossing
from lib.models.two_layer import correlation_loss
from lib.models.two_layer import direction_masses
from lib.models.two_layer import init_two_layer
from lib.models.two_layer import logistic_loss
from lib.models.two_layer import neuron_mass
from lib.models.two_layer import outer_weights
from lib.models.two_layer import theorem4_masses
from lib.models.two_layer import two_layer_relu
