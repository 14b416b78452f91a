"""Embedded datasets (no downloads): bundled digits and breast cancer, generated data, the stdlib corpus."""

from lib.data.breast_cancer import breast_cancer_splits
from lib.data.clusters import bayes_logodds
from lib.data.clusters import cluster_means
from lib.data.clusters import sample_gaussian_clusters
from lib.data.clusters import toy_population
from lib.data.digits import class_tasks
from lib.data.digits import holdout
from lib.data.digits import load_digits
from lib.data.digits import split_indices
from lib.data.spurious import make_patch_digits
from lib.data.text import epoch_windows
from lib.data.text import eval_windows
from lib.data.text import load_corpus
from lib.data.text import sample_windows
from lib.data.text import train_val_split
