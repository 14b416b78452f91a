"""Synthetic value clusters for last-layer DPO (Im & Li, NeurIPS 2025).

The paper's data model (Sec. 3, Lemma 4.1, Thm 4.2/4.3, App. B; spec:
extended_papers.md 4, "Correction"): K values, value k with its own response
tokens (2k preferred over 2k+1 on one side, the reverse on the other; V = 2K,
so no token is shared by two values), and embeddings in two clusters per value

  g ~ N(s c_k + b, v^2 I),   s = +-1 (balanced: Q pairs of each sign),

with c_k orthonormal and a shared offset b = l_b e_1 (`value_directions`,
`value_pairs`). With distinct tokens the values decouple: one GD step on
value k's pairs leaves every other value's margins unchanged.

The earlier simulation, kept as the "shared_tokens" mode of the experiment
(one Yes/No pair for every value, as the official code's empirical setup
with real LLM embeddings): cluster k has a mean mu_k (a random unit vector
times `mean_scale`) and a preference direction nu_k (unit, _|_ mu_k); a
sample is g = mu_k + b nu_k + noise * eps, b = +-1, and b decides which of
the two tokens ("Yes" = 0, "No" = 1) is preferred (`cluster_geometry`,
`sample_pairs`).
"""

import jax
import jax.numpy as jnp

from lib.core import errors
from lib.core import rng


def cluster_geometry(key, num_clusters: int, dim: int, mean_scale: float = 3.0):
  """Cluster means mu [K, d] (norm mean_scale) and unit nu [K, d] _|_ mu."""
  errors.check(
    num_clusters >= 1 and dim >= 2,
    errors.ConfigError,
    f"need >= 1 cluster and width >= 2, got K={num_clusters}, d={dim}",
  )
  k_mu, k_nu = jax.random.split(key)
  mu = jax.random.normal(k_mu, (num_clusters, dim))
  mu = mu / jnp.linalg.norm(mu, axis=-1, keepdims=True)
  nu = jax.random.normal(k_nu, (num_clusters, dim))
  nu = nu - jnp.sum(nu * mu, axis=-1, keepdims=True) * mu
  nu = nu / jnp.linalg.norm(nu, axis=-1, keepdims=True)
  return mean_scale * mu, nu


def sample_pairs(key, mu, nu, per_cluster: int, noise: float = 0.5):
  """Q pairs per cluster: embeddings g [K*Q, d], tokens y_w, y_l, clusters.

  Samples are laid out cluster-major (cluster k owns rows k*Q .. k*Q+Q-1),
  so the first q of each block are a nested subset of the Q drawn.
  """
  num_clusters, dim = mu.shape
  k_b, k_eps = jax.random.split(key)
  b = jax.random.rademacher(k_b, (num_clusters, per_cluster)).astype(mu.dtype)
  eps = jax.random.normal(k_eps, (num_clusters, per_cluster, dim), mu.dtype)
  g = mu[:, None] + b[..., None] * nu[:, None] + noise * eps
  y_w = jnp.where(b > 0, 0, 1).astype(jnp.int32)
  cluster = jnp.broadcast_to(
    jnp.arange(num_clusters)[:, None], (num_clusters, per_cluster)
  )
  flat = lambda a: a.reshape((num_clusters * per_cluster,) + a.shape[2:])
  return {
    "g": flat(g),
    "y_w": flat(y_w),
    "y_l": flat(1 - y_w),
    "cluster": flat(cluster),
  }


def value_directions(key, num_values: int, dim: int, offset: float = 0.25):
  """The paper's geometry: orthonormal c [K, d] and the offset b [d] = l_b e_1.

  c_k are a uniformly random orthonormal set in the span of e_2 .. e_d, so
  they are also orthogonal to b (our choice: the two clusters of a value
  then sit symmetrically about the separating direction c_k, and the Bayes
  accuracy of a value is Phi(1 / noise)). Needs d >= K + 1. The theorems
  take l_b in [1/4, 1/2].
  """
  errors.check(
    num_values >= 1 and dim >= num_values + 1,
    errors.ConfigError,
    f"{num_values} orthonormal value directions beside the offset need "
    f"width >= {num_values + 1}, got d={dim}",
  )
  basis, _ = jnp.linalg.qr(jax.random.normal(key, (dim - 1, num_values)))
  c = jnp.concatenate([jnp.zeros((num_values, 1)), basis.T], axis=1)
  b = jnp.zeros((dim,)).at[0].set(offset)
  return c, b


def value_pairs(
  key, c, b, per_value: int, noise: float, shared_tokens: bool = False
):
  """2Q pairs per value of the paper's model: g [K*2Q, d], y_w, y_l, sign,
  cluster (the value k of each pair).

  Value k's pairs alternate signs s = +1, -1, +1, ...: g ~ N(s c_k + b,
  noise^2 I); s = +1 prefers token 2k over 2k+1, s = -1 the reverse. Rows are
  value-major (value k owns rows 2kQ .. 2kQ + 2Q - 1), so the first 2q rows
  of each block hold q pairs of each sign, a nested subset of the Q drawn
  (`first_q_mask(K, 2Q, 2q)`). `shared_tokens`: every value uses tokens 0/1
  instead (V = 2), the setting the paper's theorems exclude. noise = 0 gives
  the cluster means themselves (the inputs of `population_accuracy`).
  """
  num_values, dim = c.shape
  sign = jnp.tile(jnp.array([1.0, -1.0], c.dtype), per_value)  # [2Q]
  eps = jax.random.normal(key, (num_values, 2 * per_value, dim), c.dtype)
  g = sign[None, :, None] * c[:, None] + b + noise * eps
  value = jnp.broadcast_to(
    jnp.arange(num_values)[:, None], (num_values, 2 * per_value)
  )
  first = 0 * value if shared_tokens else 2 * value
  y_w = (first + (sign < 0)).astype(jnp.int32)
  y_l = (first + (sign > 0)).astype(jnp.int32)
  flat = lambda a: a.reshape((num_values * 2 * per_value,) + a.shape[2:])
  return {
    "g": flat(g),
    "y_w": flat(y_w),
    "y_l": flat(y_l),
    "sign": flat(jnp.broadcast_to(sign, value.shape)),
    "cluster": flat(value),
  }


def value_model(
  key, num_values: int, dim: int, per_value: int, *, offset: float, noise
):
  """One draw of the paper's data model: (train, test) pairs of K values.

  train: `value_pairs` (Q pairs of each sign per value) around the
  orthonormal c_k and the offset b of `value_directions`; test: the 2K
  cluster means +-c_k + b themselves (`value_pairs` at noise 0), whose
  accuracy `dpo.population_accuracy` gives exactly (the paper's test error
  as an expectation). Named streams of `key`: "values" (the geometry) and
  "train" (the pairs).
  """
  k_train = rng.stream(key, "train")
  c, b = value_directions(rng.stream(key, "values"), num_values, dim, offset)
  train = value_pairs(k_train, c, b, per_value, noise)
  return train, value_pairs(k_train, c, b, 1, 0.0)


def shared_token_model(
  key,
  num_clusters: int,
  dim: int,
  per_cluster: int,
  test_per_cluster: int,
  *,
  mean_scale: float,
  noise: float,
):
  """One draw of the shared-token clusters: (train, test) sampled pairs.

  `cluster_geometry` then `sample_pairs` for train (per_cluster a cluster)
  and test (test_per_cluster a cluster) on the same clusters. Named streams
  of `key`: "values", "train", "test".
  """
  k_geo, k_train, k_test = (
    rng.stream(key, n) for n in ("values", "train", "test")
  )
  mu, nu = cluster_geometry(k_geo, num_clusters, dim, mean_scale)
  train = sample_pairs(k_train, mu, nu, per_cluster, noise)
  return train, sample_pairs(k_test, mu, nu, test_per_cluster, noise)


def first_q_mask(num_clusters: int, per_cluster_max: int, q):
  """Mask [K * Q_max] keeping the first q samples of every cluster block."""
  pos = jnp.arange(per_cluster_max)
  keep = (pos < q).astype(jnp.float32)
  return jnp.tile(keep, num_clusters)


# ----------------------------------------------------------------------------
# Concept tokens for a language model (the second, "LLM embedding" mode).
# ----------------------------------------------------------------------------


def concept_world(key, num_concepts: int, filler_vocab: int, subset: int):
  """Each concept's two disjoint filler subsets: [C, 2, subset] token ids.

  Token layout of the concept task: ids 0..C-1 are concept tokens, ids
  C..C+filler_vocab-1 fillers. Concept k writes with subset 0 of its own
  fillers under stance +1 and subset 1 under stance -1.
  """
  errors.check(
    2 * subset <= filler_vocab,
    errors.ConfigError,
    f"two subsets of {subset} fillers need filler_vocab >= {2 * subset}, "
    f"got {filler_vocab}",
  )
  perms = jax.vmap(lambda k: jax.random.permutation(k, filler_vocab))(
    jax.random.split(key, num_concepts)
  )
  return num_concepts + perms[:, : 2 * subset].reshape(num_concepts, 2, subset)


def concept_sequences(
  key, world, concepts, stance, length: int, filler_vocab: int, purity: float
):
  """Token sequences [N, length]: the concept token, then fillers.

  Each filler comes, with probability `purity`, from the concept's subset of
  the sequence's stance (+1 -> subset 0), otherwise uniformly from all
  fillers, so the stance is readable from the text and the LM must track it
  to predict the next token. `concepts` [N] int, `stance` [N] +-1.
  """
  num_concepts, _, subset = world.shape
  n = concepts.shape[0]
  k_pick, k_pure, k_any = jax.random.split(key, 3)
  side = jnp.where(stance > 0, 0, 1)
  own = world[concepts, side]  # [N, subset]
  pick = jax.random.randint(k_pick, (n, length - 1), 0, subset)
  mine = jnp.take_along_axis(own, pick, axis=1)
  anyf = num_concepts + jax.random.randint(
    k_any, (n, length - 1), 0, filler_vocab
  )
  pure = jax.random.bernoulli(k_pure, purity, (n, length - 1))
  fill = jnp.where(pure, mine, anyf)
  return jnp.concatenate([concepts[:, None], fill], axis=1).astype(jnp.int32)


def concept_pairs(
  key,
  embed,
  world,
  num_concepts: int,
  per_concept: int,
  length: int,
  filler_vocab: int,
  purity: float,
):
  """`sample_pairs`' layout with g read off a language model (the Llama mode).

  Cluster k is concept k: per_concept sequences of each concept with a
  random +-1 stance (`concept_sequences`), g = embed(tokens) [N, d] (e.g. an
  LM's final hidden state at the last token), the preferred token the stance
  (0 for +1, 1 for -1; one shared Yes/No pair), rows concept-major.
  """
  k_b, k_t = jax.random.split(key)
  b = jax.random.rademacher(k_b, (num_concepts, per_concept)).reshape(-1)
  concepts = jnp.repeat(jnp.arange(num_concepts), per_concept)
  tokens = concept_sequences(
    k_t, world, concepts, b, length, filler_vocab, purity
  )
  y_w = jnp.where(b > 0, 0, 1).astype(jnp.int32)
  return {"g": embed(tokens), "y_w": y_w, "y_l": 1 - y_w, "cluster": concepts}
