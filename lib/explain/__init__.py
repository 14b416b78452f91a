"""Multi-view time-frequency explanations of time-series classifiers (MIX).

Modules:
- `views`: orthonormal Haar DWT views, integrated gradients, IG in a view
  (IGV), overlapping-window segment IG (OSIGV: segment sums of IGV, or
  the SIG-style group IG of each window, `segment_ig`), keystone-first IG
  (KIGV).
- `metrics`: deletion / insertion AUC, top-k robustness, localisation.
- `refine`: cross-view refinement: keystones from the best view for KIGV,
  greedy deletion selection across the views' candidate features;
  `refine_series` runs all of it on one series.
- `data`: the planted sine-burst task and the UCR sets bundled in sktime.

Reference: Tran et al., "MIX: multi-view time-frequency explanations",
NeurIPS 2025 (no official code; inferred details are marked in docstrings).
"""

from lib.explain.data import load_ucr
from lib.explain.data import sine_burst
from lib.explain.metrics import deletion_auc
from lib.explain.metrics import insertion_auc
from lib.explain.metrics import jaccard_top_k
from lib.explain.metrics import localisation_precision
from lib.explain.refine import coefficient_supports
from lib.explain.refine import delete_time
from lib.explain.refine import greedy_deletion
from lib.explain.refine import keystone_in_view
from lib.explain.refine import keystone_time_mask
from lib.explain.refine import refine_series
from lib.explain.refine import top_time_points
from lib.explain.views import check_series
from lib.explain.views import dwt
from lib.explain.views import haar_matrix
from lib.explain.views import idwt
from lib.explain.views import integrated_gradients
from lib.explain.views import kigv
from lib.explain.views import osigv
from lib.explain.views import osigv_segment_ig
from lib.explain.views import points_from_segments
from lib.explain.views import segment_ig
from lib.explain.views import to_time
from lib.explain.views import view_ig
from lib.explain.views import window_starts
