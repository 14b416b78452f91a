"""Leaf utilities shared by every domain package: errors, rng streams, pytrees, meshes.

Modules not re-exported here: stats (t intervals), timing (benchmarks), linalg,
losses, dtypes, threads.
"""

from lib.core.errors import ConfigError
from lib.core.errors import DTypeError
from lib.core.errors import NonFiniteError
from lib.core.errors import ShapeError
from lib.core.errors import UserError
from lib.core.errors import WorkdirError
from lib.core.mesh import DATA_AXIS
from lib.core.mesh import batch_sharding
from lib.core.mesh import make_data_mesh
from lib.core.mesh import replicated
from lib.core.mesh import to_global
from lib.core.rng import epoch_indices
from lib.core.rng import is_typed_key
from lib.core.rng import permuted_index
from lib.core.rng import root_key
from lib.core.rng import stream
from lib.core.tree import all_finite
from lib.core.tree import l2_norm
from lib.core.tree import num_params
