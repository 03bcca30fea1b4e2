"""Synthetic token sources whose true conditional distribution is known (claims C1, C2, C3, C5).

Every rung of the ladder estimates a conditional distribution P(s_t | s_<t) from samples.
On real text the truth is unknown, so a validation NLL says only which model is better. On
these sources the truth is known exactly, so the best any model can do is known too:

    bayes_nll(S) = mean over sequences and positions t of -log P(s_t | s_<t)

and a model's validation NLL minus `bayes_nll` of the same sequences is its excess loss,
a Monte-Carlo estimate of KL(P || model) per token (Cover & Thomas 2006, §2.3 and
Thm 5.4.3): zero only for a model that has learned the true conditional distribution.

- `MarkovSource`: an order-k chain with a random (Dirichlet) transition table; the context a
  model needs is exactly the last k tokens (an n-gram with n = k + 1 is well specified).
- `HMMSource`: a hidden Markov model; the exact predictive distribution depends on the whole
  past through a belief state (the forward algorithm, Rabiner 1989, eqs. 19-20), which an
  RNN's fixed-size state must compress (C5).
- `RecallSource`: copy the token L positions back with probability p; a dependency at a set
  distance, for vanishing gradients (C3) and attention's direct access to any position (C6).

Every source samples sequences that start in its stationary distribution, so position 0 is
scored too (P(s_0) is the stationary marginal), exactly as `SequenceData(end_token=False)`
scores them: `source.data(...)` gives that data source, with the boundary id = vocab_size
(the model's vocabulary is vocab_size + 1). Legend: N sequences, L length, V vocab_size,
S states (V**order for a Markov chain, n_states for an HMM).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod

import numpy as np

from redthread.data.sequences import SequenceData
from redthread.errors import InvalidValue, RedthreadError, check_int

MAX_TABLE_ENTRIES = 1 << 24  # a Markov table of V**(order+1) float64 entries: 128 MiB at most
STATIONARY_TOL = 1e-11  # L1 change between power-iteration steps at which the stationary distribution is taken
STATIONARY_MAX_ITERS = 100_000


class SyntheticSource(ABC):
    """A distribution over token sequences with an exact conditional P(s_t | s_<t)."""

    vocab_size: int

    @abstractmethod
    def sample(self, n_sequences: int, length: int, seed: int = 0) -> np.ndarray:
        """(N, L) int64 ids in [0, vocab_size), each sequence started in the stationary distribution."""

    @abstractmethod
    def log_probs(self, sequences: np.ndarray) -> np.ndarray:
        """(N, L) float64: log P(s_t | s_<t) under the true distribution, position 0 included."""

    def entropy_rate(self) -> float | None:
        """lim H(s_t | s_<t) in nats per token, where it has a closed form; else None."""
        return None

    def bayes_nll(self, sequences) -> float:
        """The exact mean of -log P(s_t | s_<t) over every position of every sequence: the
        lowest expected NLL any model can reach on them, in nats per token."""
        return float(-self.log_probs(self._check(sequences)).mean())

    def data(self, n_train: int, n_val: int, length: int, seed: int = 0) -> SequenceData:
        """Train and val splits of independent sequences, as one sample split in two."""
        _check_positive(n_train=n_train, n_val=n_val)
        seqs = self.sample(n_train + n_val, length, seed)  # (N, L)
        return SequenceData(
            seqs[:n_train], seqs[n_train:], vocab_size=self.vocab_size + 1, boundary=self.vocab_size, end_token=False
        )

    def _check(self, sequences) -> np.ndarray:
        try:
            seqs = np.asarray(sequences)
        except ValueError:
            raise InvalidValue("bayes_nll needs sequences of one length") from None
        if seqs.ndim != 2 or seqs.shape[0] == 0 or seqs.shape[1] == 0 or not np.issubdtype(seqs.dtype, np.integer):
            raise InvalidValue(f"bayes_nll needs a non-empty (N, L) array of integer ids, got shape {seqs.shape} of {seqs.dtype}")
        if seqs.min() < 0 or seqs.max() >= self.vocab_size:
            raise InvalidValue(f"token ids must lie in 0..{self.vocab_size - 1}, got {seqs.min()}..{seqs.max()}")
        return seqs.astype(np.int64)


class MarkovSource(SyntheticSource):
    """An order-k Markov chain: P(s_t | s_<t) = transition[state(s_{t-k} .. s_{t-1}), s_t].

    A state is a k-gram read as a base-V number, oldest token most significant. With
    `hierarchy=None` each row of the (V**k, V) transition table is drawn independently from
    Dirichlet(concentration): a concentration below 1 gives peaked rows, never deterministic.
    Then, though, the shorter contexts say almost nothing (P(s_t | s_{t-1}) averages V**(k-1)
    unrelated rows to nearly the stationary distribution), so a learner gets no signal until it
    has the whole k-gram, a parity-like plateau for gradient descent. With `hierarchy=beta`
    the table is built the way language is usually modelled (a hierarchical Dirichlet, as in
    Teh 2006): P(. ) ~ Dir(concentration), then each context of j tokens draws its row from
    Dir(beta * the row of its last j - 1 tokens), for j = 1 .. k. Every order then adds
    information, and the chain is still exactly order k.
    """

    def __init__(self, order: int = 3, vocab_size: int = 16, concentration: float = 0.3, seed: int = 0,
                 hierarchy: float | None = None):
        _check_positive(order=order, vocab_size=vocab_size)
        if vocab_size < 2 or not concentration > 0:
            raise InvalidValue(f"need vocab_size >= 2 and concentration > 0, got {vocab_size} and {concentration}")
        if vocab_size ** (order + 1) > MAX_TABLE_ENTRIES:
            raise InvalidValue(f"a Markov table of vocab_size**(order + 1) = {vocab_size ** (order + 1)} entries is too large")
        self.order, self.vocab_size, self.concentration = order, vocab_size, concentration
        self.n_states = vocab_size**order
        rng = np.random.default_rng(seed)
        self.hierarchy = hierarchy
        if hierarchy is None:
            self.transition = rng.dirichlet(np.full(vocab_size, concentration), size=self.n_states)  # (S, V)
        else:
            if not hierarchy > 0:
                raise InvalidValue(f"hierarchy must be > 0, got {hierarchy!r}")
            table = rng.dirichlet(np.full(vocab_size, concentration))[None]  # (1, V): no context
            for _j in range(1, order + 1):
                parent = np.tile(table, (vocab_size, 1))  # (V**j, V): context c refines row c % V**(j-1)
                g = rng.gamma(np.maximum(hierarchy * parent, 1e-6))  # Dirichlet(beta * parent), row by row
                table = g / np.maximum(g.sum(1, keepdims=True), np.finfo(np.float64).tiny)
            self.transition = 0.999 * table + 0.001 / vocab_size  # every k-gram reachable: the chain mixes
        self.transition = np.maximum(self.transition, np.finfo(np.float64).tiny)  # a log never meets an exact zero
        self.transition /= self.transition.sum(1, keepdims=True)
        self.stationary = self._stationary()  # (S,)

    def _stationary(self) -> np.ndarray:
        """pi over k-grams with pi = pi @ M, by power iteration on the sparse state graph."""
        V, S = self.vocab_size, self.n_states
        pi = np.full(S, 1.0 / S)
        for _ in range(STATIONARY_MAX_ITERS):
            # state a*V**(k-1) + r moves to r*V + v: sum over the dropped oldest token a
            new = (pi[:, None] * self.transition).reshape(V, S // V, V).sum(0).reshape(S)  # (S,)
            new /= new.sum()
            if np.abs(new - pi).sum() < STATIONARY_TOL:
                return new
            pi = new
        raise RedthreadError("the Markov chain's stationary distribution did not converge; try another seed or concentration")

    def sample(self, n_sequences: int, length: int, seed: int = 0) -> np.ndarray:
        _check_positive(n_sequences=n_sequences, length=length)
        V, k = self.vocab_size, self.order
        rng = np.random.default_rng(seed)
        state = rng.choice(self.n_states, size=n_sequences, p=self.stationary)  # (N,): the first k tokens
        digits = V ** np.arange(k - 1, -1, -1)  # (k,): place values, oldest first
        seqs = np.empty((n_sequences, max(length, k)), dtype=np.int64)
        seqs[:, :k] = state[:, None] // digits % V  # (N, k)
        cdf = np.cumsum(self.transition, axis=1)  # (S, V)
        for t in range(k, length):
            u = rng.random(n_sequences)[:, None]  # (N, 1)
            nxt = np.minimum((cdf[state] < u).sum(1), V - 1)  # (N,): inverse-CDF draw
            seqs[:, t] = nxt
            state = state % (self.n_states // V) * V + nxt
        return seqs[:, :length]

    def log_probs(self, sequences: np.ndarray) -> np.ndarray:
        V, k = self.vocab_size, self.order
        N, L = sequences.shape
        out = np.empty((N, L))
        # t < k: P(s_t | s_<t) = m_{t+1}(s_0..s_t) / m_t(s_0..s_{t-1}), m_j the stationary j-gram marginal
        log_prev, prefix = np.zeros(N), np.zeros(N, dtype=np.int64)
        for t in range(min(k, L)):
            prefix = prefix * V + sequences[:, t]
            marginal = self.stationary.reshape(V ** (t + 1), V ** (k - t - 1)).sum(1)  # (V**(t+1),)
            log_joint = np.log(marginal[prefix])
            out[:, t] = log_joint - log_prev
            log_prev = log_joint
        if L > k:
            state = np.zeros((N, L - k), dtype=np.int64)  # state[:, j] = the k-gram s_j .. s_{j+k-1}
            for i in range(k):
                state = state * V + sequences[:, i : L - k + i]
            out[:, k:] = np.log(self.transition[state, sequences[:, k:]])  # (N, L-k)
        return out

    def entropy_rate(self) -> float:
        """sum over states of pi(state) * H(transition[state]), in nats."""
        P = self.transition
        return float(-(self.stationary[:, None] * P * np.log(P)).sum())


class HMMSource(SyntheticSource):
    """A hidden Markov model: z_{t+1} ~ transition[z_t], s_t ~ emission[z_t], z_0 ~ stationary.

    Both matrices have Dirichlet(concentration) rows. The exact P(s_t | s_<t) needs the whole
    past, summarised by the belief P(z_t | s_<t) of the forward algorithm.
    """

    def __init__(self, n_states: int = 8, vocab_size: int = 16, concentration: float = 0.3, seed: int = 0):
        _check_positive(n_states=n_states, vocab_size=vocab_size)
        if vocab_size < 2 or not concentration > 0:
            raise InvalidValue(f"need vocab_size >= 2 and concentration > 0, got {vocab_size} and {concentration}")
        self.n_states, self.vocab_size, self.concentration = n_states, vocab_size, concentration
        rng = np.random.default_rng(seed)
        tiny = np.finfo(np.float64).tiny
        self.transition = _normalise(np.maximum(rng.dirichlet(np.full(n_states, concentration), size=n_states), tiny))  # (S, S)
        self.emission = _normalise(np.maximum(rng.dirichlet(np.full(vocab_size, concentration), size=n_states), tiny))  # (S, V)
        # pi (A - I) = 0 with sum(pi) = 1, solved in the least-squares sense (exact: the system is consistent)
        system = np.vstack([self.transition.T - np.eye(n_states), np.ones((1, n_states))])  # (S+1, S)
        rhs = np.zeros(n_states + 1)
        rhs[-1] = 1.0
        self.stationary = _normalise(np.maximum(np.linalg.lstsq(system, rhs, rcond=None)[0], 0.0))  # (S,)

    def sample(self, n_sequences: int, length: int, seed: int = 0) -> np.ndarray:
        _check_positive(n_sequences=n_sequences, length=length)
        rng = np.random.default_rng(seed)
        z = rng.choice(self.n_states, size=n_sequences, p=self.stationary)  # (N,)
        trans_cdf, emit_cdf = np.cumsum(self.transition, 1), np.cumsum(self.emission, 1)
        seqs = np.empty((n_sequences, length), dtype=np.int64)
        for t in range(length):
            u = rng.random((n_sequences, 2))  # (N, 2): one draw to emit, one to move
            seqs[:, t] = np.minimum((emit_cdf[z] < u[:, :1]).sum(1), self.vocab_size - 1)
            z = np.minimum((trans_cdf[z] < u[:, 1:]).sum(1), self.n_states - 1)
        return seqs

    def log_probs(self, sequences: np.ndarray) -> np.ndarray:
        N, L = sequences.shape
        out = np.empty((N, L))
        belief = np.broadcast_to(self.stationary, (N, self.n_states))  # (N, S): P(z_t | s_<t)
        emit_by_token = self.emission.T  # (V, S)
        for t in range(L):
            joint = belief * emit_by_token[sequences[:, t]]  # (N, S): P(z_t, s_t | s_<t)
            p = joint.sum(1)  # (N,): P(s_t | s_<t)
            out[:, t] = np.log(p)
            belief = (joint / p[:, None]) @ self.transition  # (N, S): P(z_{t+1} | s_<=t)
        return out


class RecallSource(SyntheticSource):
    """s_t uniform for t < distance; after that, s_t = s_{t-distance} with probability p, else uniform.

    P(s_t | s_<t) = p [s_t == s_{t-distance}] + (1 - p) / V for t >= distance, 1 / V before. The
    process is stationary (every token is uniform), so position 0 needs no special start.
    """

    def __init__(self, distance: int = 8, p: float = 0.9, vocab_size: int = 16):
        _check_positive(distance=distance, vocab_size=vocab_size)
        if vocab_size < 2 or not 0 <= p <= 1:
            raise InvalidValue(f"need vocab_size >= 2 and 0 <= p <= 1, got {vocab_size} and {p}")
        self.distance, self.p, self.vocab_size = distance, p, vocab_size

    def sample(self, n_sequences: int, length: int, seed: int = 0) -> np.ndarray:
        _check_positive(n_sequences=n_sequences, length=length)
        rng = np.random.default_rng(seed)
        seqs = rng.integers(self.vocab_size, size=(n_sequences, length))  # (N, L): the uniform draws
        copy = rng.random((n_sequences, length)) < self.p  # (N, L)
        d = self.distance
        for start in range(d, length, d):  # a block of d positions depends only on the block before it
            stop = min(start + d, length)
            seqs[:, start:stop] = np.where(copy[:, start:stop], seqs[:, start - d : stop - d], seqs[:, start:stop])
        return seqs

    def log_probs(self, sequences: np.ndarray) -> np.ndarray:
        V, d = self.vocab_size, self.distance
        out = np.full(sequences.shape, -math.log(V))  # (N, L)
        match = sequences[:, d:] == sequences[:, :-d] if d < sequences.shape[1] else None  # (N, L-d)
        if match is not None:
            out[:, d:] = np.log(self.p * match + (1 - self.p) / V)
        return out

    def entropy_rate(self) -> float:
        """H(s_t | s_<t) for t >= distance: the copy's probability mass, then V - 1 equal rest."""
        V, p = self.vocab_size, self.p
        hit, miss = p + (1 - p) / V, (1 - p) / V
        return float(-hit * math.log(hit) - ((V - 1) * miss * math.log(miss) if miss > 0 else 0.0))


def _normalise(m: np.ndarray) -> np.ndarray:
    return m / m.sum(-1, keepdims=True)


def _check_positive(**values: int) -> None:
    for name, value in values.items():
        check_int(name, value)
