"""The one place experiments pick matplotlib's backend: headless Agg.

Binaries import pyplot from here, inside their plotting functions (so a run
that draws no figure never imports matplotlib), and write every figure through
`lib.train.save_figure` (process 0 only, any epath workdir such as gs://).
"""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402

__all__ = ["plt"]
