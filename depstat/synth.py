"""Synthetic sources whose mutual-information profile is known exactly.

``topic_chain`` builds a stationary Markov chain over ``vocab`` tokens split into topics:
each step stays in the current topic with probability 1 - switch (moving by a peaked
within-topic transition) and otherwise jumps to a random token. It is sticky and slowly
mixing, like text, and its MI at offset d is exact:
I(d) = sum_ij pi_i (P^d)_ij log2((P^d)_ij / pi_j).

The other generators give corpora whose dependency scale is known by construction:

- ``block_sequences``: latent blocks of length B plus a copy at offset B (paper A's
  retrieval data); its MI profile is a function of r / B only, so any kernel width
  measured from it must scale in proportion to B. ``block_exact_mi`` gives it exactly.
- ``arithmetic_problems``: iGSM-style modular arithmetic in plain text, exact local
  dependencies whose scale is fixed in characters (not self-similar).
- ``markov_text``: text from a character-level Markov chain, whose MI decays
  exponentially; at byte granularity its profile is the chain's ``exact_mi``.
- ``tree_text``: text from Lin & Tegmark's recursive grammar (each character's children copy or
  redraw it): a power law in distance by construction (``tree_exact_mi``), plus a floor.
- ``two_kinds``: short documents of one kind and long ones of another, tokens i.i.d. given
  the kind: the pairs at an offset come from the documents longer than it, so the MI is the
  kind's and falls to exactly 0 beyond the short documents (``two_kinds_exact_mi``).
- ``window_task``: a stream of noisy latent blocks of length B with, at each position, the
  most frequent token of the last B as the target (paper A's frequency-law task: retrieval
  over a window whose width is set by B).
"""

from __future__ import annotations

import json
import string
from dataclasses import dataclass
from pathlib import Path

import numba as nb
import numpy as np

from depstat.errors import DepstatError
from depstat.tokenize.stream import TokenStream


@dataclass(frozen=True)
class MarkovChain:
    """Transition matrix ``P`` (rows sum to 1) and its stationary distribution ``pi``."""

    P: np.ndarray
    pi: np.ndarray

    def exact_mi(self, offsets: np.ndarray) -> np.ndarray:
        """Exact MI in bits between x_t and x_{t+d} for each offset d (stationary start)."""
        offsets = np.asarray(offsets, dtype=np.int64)
        out = np.empty(len(offsets))
        order = np.argsort(offsets)
        power = np.eye(len(self.pi))
        done = 0
        for i in order:
            power = power @ np.linalg.matrix_power(self.P, int(offsets[i]) - done)
            done = int(offsets[i])
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = np.where(power > 0, power / self.pi[None, :], 1.0)
                out[i] = max(0.0, float(np.sum(self.pi[:, None] * power * np.log2(ratio))))
        return out

    def sample(self, n_docs: int, doc_len: int, seed: int = 0) -> TokenStream:
        """Independent documents, each started from the stationary distribution."""
        cum = np.cumsum(self.P, axis=1)
        cum[:, -1] = 1.0
        pi_cum = np.cumsum(self.pi)
        pi_cum[-1] = 1.0
        tokens = _sample(cum, pi_cum, n_docs, doc_len, seed)
        return TokenStream(
            name="markov", tokens=tokens, doc_lengths=np.full(n_docs, doc_len),
            vocab_size=len(self.pi),
        )


def stationary(P: np.ndarray) -> np.ndarray:
    """Stationary distribution of an ergodic transition matrix (left eigenvector for 1)."""
    w, v = np.linalg.eig(P.T)
    pi = np.real(v[:, np.argmin(np.abs(w - 1.0))])
    pi = np.abs(pi)
    return pi / pi.sum()


def topic_chain(
    vocab: int = 512, topics: int = 16, switch: float = 0.01, concentration: float = 0.05,
    seed: int = 0,
) -> MarkovChain:
    """A sticky chain: within-topic moves from Dirichlet(concentration) rows, jumps with prob ``switch``."""
    rng = np.random.default_rng(seed)
    size = vocab // topics
    P = np.full((vocab, vocab), switch / vocab)
    for t in range(topics):
        block = slice(t * size, (t + 1) * size)
        P[block, block] += (1 - switch) * rng.dirichlet(np.full(size, concentration), size=size)
    if vocab % topics:
        tail = slice(topics * size, vocab)
        P[tail, :] += (1 - switch) / vocab
    P /= P.sum(axis=1, keepdims=True)
    return MarkovChain(P=P, pi=stationary(P))


@nb.njit(cache=True)
def _sample(cum: np.ndarray, pi_cum: np.ndarray, n_docs: int, doc_len: int, seed: int) -> np.ndarray:
    np.random.seed(seed)
    out = np.empty(n_docs * doc_len, dtype=np.int32)
    for d in range(n_docs):
        s = np.searchsorted(pi_cum, np.random.random())
        for t in range(doc_len):
            out[d * doc_len + t] = s
            s = np.searchsorted(cum[s], np.random.random())
    return out


def reference_chain() -> MarkovChain:
    """The chain behind depstat's accuracy bar: V = 512, 16 sticky topics, I(1) ~ 4.4 bits.

    Topics persist for ~10 tokens, so pairs are autocorrelated (the case where an i.i.d.
    null leaves bias) while 2M tokens still pin every offset's MI inside the bar: the
    jackknife standard error stays below about 0.6 of the tolerance (benchmarks/output/accuracy.txt).
    Slower chains (``topic_chain(switch=0.01)``) have sampling noise above the bar itself.
    """
    return topic_chain(vocab=512, topics=16, switch=0.1, concentration=0.3, seed=6)


def block_sequences(
    n_docs: int, doc_len: int, block: int, vocab: int = 256, seed: int = 0,
    states: int = 16, noise: float = 0.1, copy: float = 0.5,
) -> TokenStream:
    """Token documents whose dependencies reach exactly as far as twice the block length B.

    Definition. A document is a run of latent blocks of length B = ``block``, grouped in
    periods of two: a *key* block then a *query* block. Every block draws its own state s
    uniformly from ``states`` states, independently of all other blocks. A fresh token in
    state s is, with probability 1 - ``noise``, uniform on the state's own slice
    [s*m, (s+1)*m) of m = vocab // states tokens and otherwise uniform on the whole
    vocabulary. Key blocks hold fresh tokens. In a query block each position t
    independently holds, with probability ``copy``, a copy of x[t - B] (the key token at
    the same place B earlier), and otherwise a fresh token of the query block's state.
    Each document starts at a uniform random phase of the 2B period, so the process is
    stationary and ``block_exact_mi`` gives its MI exactly.

    Resulting profile: I(r) falls linearly over 0 < r < B (pairs sharing a block state),
    spikes at r = B (the copies), falls linearly again over B < r < 2B (copies of
    key tokens sharing the key state), and is exactly 0 for r >= 2B. It depends on r / B
    only, so the true dependency scale is B (support 2B) and any width W read from it is
    proportional to B. ``info`` records ``true_scale`` = B.
    """
    _check_block_params(block, vocab, states, noise, copy)
    if n_docs < 1 or doc_len < 1:
        raise DepstatError(f"need n_docs >= 1 and doc_len >= 1, got {n_docs} and {doc_len}")
    rng = np.random.default_rng(seed)
    docs = [_block_document(rng, doc_len, block, vocab, states, noise, copy) for _ in range(n_docs)]
    return TokenStream(
        name=f"blocks-B{block}", tokens=np.concatenate(docs), doc_lengths=np.full(n_docs, doc_len),
        vocab_size=vocab,
        info={"generator": "block_sequences", "true_scale": block, "states": states,
              "noise": noise, "copy": copy},
    )


def block_exact_mi(
    block: int, offsets: np.ndarray, vocab: int = 256, states: int = 16, noise: float = 0.1,
    copy: float = 0.5,
) -> np.ndarray:
    """Exact MI in bits between x_t and x_{t+r} of ``block_sequences``, the reference for its estimates.

    The pair at offset r is a mixture of three joints with the same marginal p: independent
    (p p^T), same block state (E^T E / states) and identical token (diag p); the weights
    follow from where t and t + r fall in the key/query period (see ``_block_weights``).
    """
    _check_block_params(block, vocab, states, noise, copy)
    offsets = np.asarray(offsets, dtype=np.int64)
    if offsets.size and offsets.min() < 1:
        raise DepstatError(f"offsets must be positive integers, got {offsets.min()}")
    E = _block_emissions(vocab, states, noise)
    p = E.mean(axis=0)
    indep, same, ident = np.outer(p, p), E.T @ E / states, np.diag(p)
    out = np.empty(len(offsets))
    for k, r in enumerate(offsets):
        w_same, w_ident = _block_weights(int(r), block, copy)
        joint = (1 - w_same - w_ident) * indep + w_same * same + w_ident * ident
        out[k] = _mi_bits(joint, indep)
    return out


def _check_block_params(block: int, vocab: int, states: int, noise: float, copy: float) -> None:
    """Reject parameters for which the block source is undefined."""
    if block < 1:
        raise DepstatError(f"block must be at least 1, got {block}")
    if not 1 <= states <= vocab:
        raise DepstatError(f"need 1 <= states <= vocab, got states={states}, vocab={vocab}")
    if not (0 <= noise <= 1 and 0 <= copy <= 1):
        raise DepstatError(f"noise and copy are probabilities, got noise={noise}, copy={copy}")


def _block_document(
    rng: np.random.Generator, doc_len: int, block: int, vocab: int, states: int, noise: float,
    copy: float,
) -> np.ndarray:
    """One document of ``block_sequences``: whole key/query periods cut at a random phase."""
    period = 2 * block
    n_periods = -(-(doc_len + period) // period)
    shape = (n_periods, 2, block)
    m = vocab // states
    state = rng.integers(states, size=(n_periods, 2, 1), dtype=np.int32)
    own = state * m + rng.integers(m, size=shape, dtype=np.int32)
    tokens = np.where(rng.random(shape) < noise, rng.integers(vocab, size=shape, dtype=np.int32), own)
    copied = rng.random((n_periods, block)) < copy
    tokens[:, 1] = np.where(copied, tokens[:, 0], tokens[:, 1])
    start = int(rng.integers(period))
    return tokens.reshape(-1)[start:start + doc_len]


def _block_emissions(vocab: int, states: int, noise: float) -> np.ndarray:
    """E[s, v]: probability that a fresh token of state s is v (own slice plus uniform noise)."""
    m = vocab // states
    E = np.full((states, vocab), noise / vocab)
    for s in range(states):
        E[s, s * m:(s + 1) * m] += (1 - noise) / m
    return E


def _block_weights(r: int, block: int, copy: float) -> tuple[float, float]:
    """(same-state, identical-token) weights of the pair at offset r, over a uniform phase."""
    if r < block:
        inside = (block - r) / block  # share of pairs whose two ends lie in one block
        both = copy**2 + (1 - copy) ** 2  # query pair: both copies or both fresh
        return 0.5 * inside * (1 + both) + 0.5 * (1 - inside) * copy, 0.0
    if r == block:
        return 0.0, 0.5 * copy
    if r < 2 * block:
        return 0.5 * (2 * block - r) / block * copy, 0.0
    return 0.0, 0.0


def _mi_bits(joint: np.ndarray, indep: np.ndarray) -> float:
    """Mutual information in bits of a joint table whose product of marginals is ``indep``."""
    nz = joint > 0
    return float(np.sum(joint[nz] * np.log2(joint[nz] / indep[nz])))


# The frequency-law task: the majority over a window of width B.


def window_stream(rng: np.random.Generator, n_seq: int, length: int, block: int, vocab: int = 8,
                  signal: float = 0.5) -> np.ndarray:
    """(n_seq, length) tokens: latent blocks of length ``block`` at a random phase, each with a
    uniform symbol; a token is its block's symbol with probability ``signal``, else uniform."""
    if block < 1 or length < 1 or vocab < 2 or not 0 <= signal <= 1:
        raise DepstatError(f"need block >= 1, length >= 1, vocab >= 2 and 0 <= signal <= 1, got "
                           f"{block}, {length}, {vocab}, {signal}")
    n_blocks = length // block + 2
    symbols = rng.integers(vocab, size=(n_seq, n_blocks))
    phase = rng.integers(block, size=(n_seq, 1))
    positions = (np.arange(length)[None, :] + phase) // block
    own = np.take_along_axis(symbols, positions, axis=1)
    return np.where(rng.random((n_seq, length)) < signal, own, rng.integers(vocab, size=(n_seq, length)))


def window_targets(tokens: np.ndarray, block: int, vocab: int = 8) -> np.ndarray:
    """The most frequent token among each position's last ``block`` tokens (ties: the smallest id),
    -100 (not counted by the loss) where fewer than ``block`` tokens precede."""
    onehot = np.eye(vocab, dtype=np.int32)[tokens]  # (n, L, V)
    counts = np.cumsum(onehot, axis=1)
    counts[:, block:] -= counts[:, :-block].copy()
    out = counts.argmax(axis=2)
    out[:, :block - 1] = -100
    return out


def window_task(rng: np.random.Generator, n_seq: int, length: int, block: int, vocab: int = 8,
                signal: float = 0.5) -> tuple[np.ndarray, np.ndarray]:
    """(tokens, targets) of ``window_stream`` and ``window_targets``: a target needs the whole
    window of the last ``block`` tokens, so retrieval must cover a field of width B."""
    tokens = window_stream(rng, n_seq, length, block, vocab, signal)
    return tokens, window_targets(tokens, block, vocab)


# iGSM-style arithmetic: exact dependencies at a fixed scale in characters.

MODULUS = 23
_OPS = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b}


def arithmetic_problems(
    n_docs: int, seed: int = 0, n_ops: tuple[int, int] = (2, 6), doc_chars: int = 4096,
) -> list[str]:
    """ASCII documents of modular arithmetic problems, the not-self-similar reference data.

    Definition. A problem is one line: "Let a = 7." (a constant in 0..22), then k
    operations, k uniform in ``n_ops`` (inclusive), each "Let X = Y op Z." where Y is the
    variable defined just before, Z is an earlier variable or a constant 0..22 (even
    odds) and op is +, - or *; then "What is X? Answer: N." for the last variable, N its
    exact value mod 23. Variable names are distinct random lowercase words of one to three
    letters within a problem, so sentences vary in length at every granularity (with
    single letters a BPE vocabulary gives every clause the same number of tokens and the
    token stream becomes strictly periodic, which is not what arithmetic text looks like).
    Problems are appended, one per line, until a document has at least ``doc_chars``
    characters.
    """
    lo, hi = n_ops
    if not 1 <= lo <= hi <= len(string.ascii_lowercase) - 1:
        raise DepstatError(f"n_ops must satisfy 1 <= low <= high <= 25, got {n_ops}")
    rng = np.random.default_rng(seed)
    return [_arithmetic_document(rng, lo, hi, doc_chars) for _ in range(n_docs)]


def arithmetic_jsonl(
    path: str | Path, n_docs: int, seed: int = 0, n_ops: tuple[int, int] = (2, 6),
    doc_chars: int = 4096,
) -> Path:
    """Write ``arithmetic_problems`` as JSON Lines with field "text", ready for ``depstat profile``."""
    return write_jsonl(path, arithmetic_problems(n_docs, seed, n_ops, doc_chars))


def _arithmetic_document(rng: np.random.Generator, lo: int, hi: int, doc_chars: int) -> str:
    """Problems joined by newlines until the document reaches ``doc_chars`` characters."""
    lines: list[str] = []
    size = 0
    while size < doc_chars:
        line = _arithmetic_problem(rng, int(rng.integers(lo, hi + 1)))
        size += len(line) + bool(lines)  # a newline before every line but the first
        lines.append(line)
    return "\n".join(lines)


def _arithmetic_problem(rng: np.random.Generator, k: int) -> str:
    """One problem with k operations, its answer computed exactly mod 23."""
    names: list[str] = []
    while len(names) < k + 1:
        name = "".join(string.ascii_lowercase[i] for i in rng.integers(26, size=int(rng.integers(1, 4))))
        if name not in names:
            names.append(name)
    value = {names[0]: int(rng.integers(MODULUS))}
    parts = [f"Let {names[0]} = {value[names[0]]}."]
    for i in range(1, k + 1):
        op = "+-*"[int(rng.integers(3))]
        if rng.random() < 0.5:
            right = names[int(rng.integers(i))]
            operand = value[right]
        else:
            operand = int(rng.integers(MODULUS))
            right = str(operand)
        value[names[i]] = _OPS[op](value[names[i - 1]], operand) % MODULUS
        parts.append(f"Let {names[i]} = {names[i - 1]} {op} {right}.")
    parts.append(f"What is {names[k]}? Answer: {value[names[k]]}.")
    return " ".join(parts)


# Character-level Markov text: exponential MI decay in text mode.

TEXT_ALPHABET = string.ascii_lowercase + string.ascii_uppercase + string.digits + " ."


def text_chain(seed: int = 0) -> MarkovChain:
    """The default chain behind ``markov_text``: 64 symbols in 4 sticky topics."""
    return topic_chain(vocab=len(TEXT_ALPHABET), topics=4, switch=0.05, concentration=0.3, seed=seed)


def markov_text(
    n_docs: int, doc_len: int, seed: int = 0, chain: MarkovChain | None = None,
) -> list[str]:
    """Documents of ``doc_len`` ASCII characters from a Markov chain (default ``text_chain()``).

    Symbol i of the chain is ``TEXT_ALPHABET[i]``, one byte each, so the byte-level MI
    profile of these texts is exactly ``chain.exact_mi``: it decays exponentially.
    """
    chain = chain if chain is not None else text_chain()
    if len(chain.pi) > len(TEXT_ALPHABET):
        raise DepstatError(f"the chain has {len(chain.pi)} symbols; the alphabet has {len(TEXT_ALPHABET)}")
    stream = chain.sample(n_docs, doc_len, seed)
    chars = np.array(list(TEXT_ALPHABET))[stream.tokens].reshape(n_docs, doc_len)
    return ["".join(row) for row in chars]


# Hierarchical (tree) text: MI that decays as a power law in the distance.

TREE_ALPHABET = "etaoinshrdlucmf "  # 16 symbols, the space among them: words exist
TREE_WINDOW_LEVELS = 2  # a document is a window of a tree this many levels deeper than it needs


def tree_text(
    n_docs: int, depth: int = 12, keep: float = 0.9, favourite: float = 0.0, seed: int = 0,
) -> list[str]:
    """Documents of 2**depth characters of ``TREE_ALPHABET`` from a binary tree: the root is
    uniform and each node's two children keep its symbol with probability ``keep``, or else
    draw a uniform one. Two characters whose lowest common ancestor lies h levels up share
    the symbol through a channel of 2h such steps, so their MI falls with h, and so as a power
    law in their distance d ~ 2**h: scale-free by construction, at every tokenization. Far out
    (where the MI is small) its exponent tends to -4 log2(keep); at the default keep of 0.9 the
    exact profile's local slope is about 0.4-0.5 (``tree_exact_mi``). Each document is a window
    at a random place in a tree TREE_WINDOW_LEVELS levels deeper, so that no pair of it has to
    meet at the top of the tree (which would give far pairs a plateau of MI, not a power law).
    With ``favourite`` > 0 each character is, with that probability, replaced by the
    document's favourite symbol (uniform per document): a floor of MI shared by every pair of a
    document."""
    if depth < 1 or not 0.0 <= keep <= 1.0 or not 0.0 <= favourite < 1.0:
        raise DepstatError(f"tree_text needs depth >= 1, 0 <= keep <= 1 and 0 <= favourite < 1; got {depth}, "
                           f"{keep}, {favourite}")
    rng = np.random.default_rng(seed)
    size, n = len(TREE_ALPHABET), 1 << depth
    level = rng.integers(size, size=(n_docs, 1))
    for _ in range(depth + TREE_WINDOW_LEVELS):
        level = np.repeat(level, 2, axis=1)
        level = np.where(rng.random(level.shape) < keep, level, rng.integers(size, size=level.shape))
    start = rng.integers(level.shape[1] - n + 1, size=n_docs)
    level = level[np.arange(n_docs)[:, None], start[:, None] + np.arange(n)]
    if favourite > 0:
        chosen = rng.integers(size, size=(n_docs, 1))
        level = np.where(rng.random(level.shape) < favourite, chosen, level)
    chars = np.array(list(TREE_ALPHABET))[level]
    return ["".join(row) for row in chars]


def tree_exact_mi(offsets: np.ndarray, depth: int = 12, keep: float = 0.9) -> np.ndarray:
    """Exact MI (bits) of ``tree_text`` characters (``favourite`` 0) at each offset, over the
    pairs inside a document: pooled over positions and window starts, the pair's joint is a
    symmetric channel whose keep-probability is the mean of keep**(2h) over the pairs'
    common-ancestor heights h."""
    offsets = np.asarray(offsets, dtype=np.int64)
    size, n = len(TREE_ALPHABET), 1 << depth
    starts = (1 << (depth + TREE_WINDOW_LEVELS)) - n + 1  # a window starts at 0 .. starts - 1
    if offsets.size and (offsets.min() < 1 or offsets.max() >= n) or not 0.0 <= keep <= 1.0:
        raise DepstatError(f"tree_exact_mi needs offsets in 1..{n - 1} and 0 <= keep <= 1")
    out = np.empty(len(offsets))
    for i, d in enumerate(offsets):
        q = np.arange(starts + n - d - 1)  # a pair's first leaf in the tree: window start + position
        ways = np.minimum(q, starts - 1) - np.maximum(q - (n - d - 1), 0) + 1  # (start, position) pairs giving q
        height = np.frexp((q ^ (q + d)).astype(float))[1]  # levels up to the common ancestor
        mu = float(np.sum(ways * keep ** (2.0 * height)) / np.sum(ways))
        joint = (mu * np.eye(size) + (1 - mu) / size) / size
        out[i] = _mi_bits(joint, np.full((size, size), 1.0 / size**2))
    return out


def two_kinds(
    n_short: int = 3000, n_long: int = 300, vocab: int = 2048, short: tuple[int, int] = (20, 60),
    long: tuple[int, int] = (300, 900), seed: int = 0,
) -> TokenStream:
    """Documents of two kinds in random order, ``n_short`` of lengths ``short`` (low, high:
    uniform, high excluded) and ``n_long`` of lengths ``long``, each token drawn i.i.d. from its
    kind's distribution (``two_kinds_distributions``). Within a document only the kind links
    two tokens, so the MI at offset r is that of the kinds' mixture over the pairs at r: 0 once
    r reaches the longest short document. ``info["kinds"]`` holds each document's kind."""
    rng = np.random.default_rng(seed)
    lengths = np.r_[rng.integers(*short, n_short), rng.integers(*long, n_long)]
    kinds = np.r_[np.zeros(n_short, dtype=np.int64), np.ones(n_long, dtype=np.int64)]
    order = rng.permutation(len(lengths))
    lengths, kinds = lengths[order], kinds[order]
    cum = np.cumsum(two_kinds_distributions(vocab), axis=1)
    tokens = np.concatenate([np.searchsorted(cum[k], rng.random(n), side="right") for k, n in zip(kinds, lengths)])
    stream = TokenStream("ids", np.minimum(tokens, vocab - 1), lengths, vocab)
    stream.info["kinds"] = kinds
    return stream


def two_kinds_distributions(vocab: int) -> np.ndarray:
    """The two kinds' token distributions (2 x vocab): a Zipf law of exponent 1.1, the second
    kind's ranks moved half the vocabulary on."""
    zipf = 1.0 / np.arange(1, vocab + 1) ** 1.1
    zipf /= zipf.sum()
    return np.stack([zipf, np.roll(zipf, vocab // 2)])


def two_kinds_exact_mi(stream: TokenStream, offsets: np.ndarray) -> np.ndarray:
    """Exact MI (bits) over the pairs inside a document of a ``two_kinds`` stream at each
    offset (NaN where no document is longer): the kinds weighted by their pairs there."""
    kinds, lengths = stream.info["kinds"], stream.doc_lengths
    p = two_kinds_distributions(int(stream.vocab_size))
    out = np.full(len(offsets), np.nan)
    for i, r in enumerate(np.asarray(offsets, dtype=np.int64)):
        w = np.array([np.maximum(lengths[kinds == k] - r, 0).sum() for k in (0, 1)], dtype=np.float64)
        if w.sum() > 0:
            w /= w.sum()
            joint = w[0] * np.outer(p[0], p[0]) + w[1] * np.outer(p[1], p[1])
            out[i] = _mi_bits(joint, np.outer(joint.sum(axis=1), joint.sum(axis=0)))
    return out


def write_jsonl(path: str | Path, texts: list[str]) -> Path:
    """Write one {"text": ...} record per line (UTF-8), the corpus format depstat reads."""
    path = Path(path)
    with path.open("w", encoding="utf-8") as f:
        for text in texts:
            f.write(json.dumps({"text": text}, ensure_ascii=False) + "\n")
    return path
