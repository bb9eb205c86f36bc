"""Order invariance and interval coverage of the profile, design by design.

Designs (``mi_profile`` / ``profile`` options):

- ``default``: grassberger-rotation, documents counted in a seeded hash order, 2 null draws.
- ``1 draw``: the same with one rotation null.
- ``reading order``: grassberger-rotation counted as the documents come, one null, the jackknife
  groups contiguous runs of documents (depstat 0.x's rule).
- ``i.i.d. null``: the ``shuffle`` estimator (plug-in minus an i.i.d. null), hash order.
- ``grassberger``: Grassberger entropies with no null, hash order.

Tables:

1. Two domains with disjoint vocabularies (32 symbols each, 100 documents of 1000 tokens each,
   uniform within a domain): the true MI is 1 bit at every offset. Documents sorted by domain
   and shuffled: the smallest and largest MI over offsets 1-512.
2. A grouped real corpus in source order against the same documents shuffled, through
   ``depstat.profile`` on jsonl files: the bundled Python docs (text), the standard library's
   ``.py`` files (code) and generated arithmetic, at bytes and BPE-1k. The largest
   |difference| over offsets in units of the combined standard error, and the median ratio of
   the two orders' standard errors (sorted / shuffled).
3. Coverage on chains with exact MI: ``reference_chain()``, the slow
   ``topic_chain(512, 16, switch=0.01, concentration=0.05, seed=1)`` and four held-out chains
   that were not used to choose the bias bound (``CHAINS``), independent samples of 0.5M, 1M
   and 2M tokens (``--tokens``) in documents of 4096, the default profile: the share of
   (offset, sample) cells whose 95% interval holds the exact MI at r <= 16 and r > 16; the same
   with the jackknife's bias bound alone (the rule before the entropy correction's size joined
   it, recorded in the same run) and with no bias bound (the half-width with ``bias_bound``
   taken out in quadrature); the largest miss in half-widths; the median ratio of the
   half-width to the jackknife-bound one; at r = 1 the mean error and the mean bias bound.
4. The accuracy bar (|error| <= max(0.005, 2% of the exact MI)) on the reference chain at 1M and 2M tokens.
5. The bias at short offsets against the corpus size: the default's mean error at r = 1, 2, 4, 8, 16
   on both chains from 0.25M to 2M tokens, its mean bias bound at r = 1, and at r = 1 the same
   estimator on as many independent pairs drawn from the exact joint distribution of (x_t, x_t+1)
   (documents of two tokens): whether the bias comes from undersampling or from autocorrelation.
6. Documents that end: the default, whose rotation null rotates the pair list at the offsets
   where more than 1% of the positions have no partner (``counting.split_rotation``), against
   the stream's rotation at every offset (the rule before), on ``two_kinds`` (short documents
   of one kind, long ones of another: exact MI 0 beyond the short ones), seeds 1-4: the share
   of offsets whose interval holds the exact MI below and beyond 60 tokens, the mean estimate
   beyond, and the largest upper end of an interval there. Then, where Debian's bible-kjv and
   fortunes are installed, the KJV chapters and the fortunes at BPE-8k: at each offset where
   more than 1% of the positions have no partner, that share, which null the default takes
   there (the pair list's beyond ``counting.PAIRS_DROPPED``), the estimate with the stream's
   rotation and with the pair list's at that offset, and their difference in the pair list's
   standard errors and as a share of its estimate.

Run: ``python benchmarks/bench_order.py [--quick]`` (a few minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sysconfig
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
from benchlib import format_table, machine_line
from corpora import bible, fortunes

from depstat.count import counting
from depstat.estimate import estimators as est
from depstat.estimate.profile import log_offsets, mi_profile
from depstat.pipeline import profile
from depstat.synth import (
    arithmetic_problems,
    reference_chain,
    topic_chain,
    two_kinds,
    two_kinds_exact_mi,
)
from depstat.tokenize.stream import TokenStream

DESIGNS = {
    "default": {},
    "1 draw": {"null_draws": 1},
    "reading order": {"order": "reading", "null_draws": 1},
    "i.i.d. null": {"estimator": "shuffle", "null_draws": 1},
    "grassberger": {"estimator": "grassberger"},
}
EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "python-docs.jsonl.gz"
DOC_LEN = 4096
CHAINS = {  # topic_chain's arguments (vocab, topics, switch, concentration, seed); table 3's held-out
    "reference": (512, 16, 0.1, 0.3, 6),  # chains were not used to choose the bias bound
    "slow": (512, 16, 0.01, 0.05, 1),
    "held-out a": (256, 8, 0.2, 1.0, 5),
    "held-out b": (2048, 64, 0.02, 0.1, 7),
    "held-out c": (512, 1, 0.0, 0.02, 2),
    "held-out d": (128, 4, 0.05, 0.5, 9),
}


def two_domains(shuffled: bool, seed: int = 0) -> TokenStream:
    """100 documents of each domain (32 symbols each), sorted by domain or shuffled."""
    rng = np.random.default_rng(seed)
    docs = [rng.integers(0, 32, 1000) + 32 * (i >= 100) for i in range(200)]
    if shuffled:
        docs = [docs[i] for i in rng.permutation(200)]
    return TokenStream("two-domain", np.concatenate(docs), np.full(200, 1000), 64)


def table_two_domains() -> str:
    offsets = log_offsets(512, 16)
    rows = []
    for name, options in DESIGNS.items():
        cells = [name]
        for shuffled in (False, True):
            mi = mi_profile(two_domains(shuffled), offsets, **options)[0]["mi_bits"]
            cells.append(f"{mi.min():.3f} - {mi.max():.3f}")
        rows.append(cells)
    return format_table(["design", "sorted by domain", "shuffled"], rows)


def grouped_corpus(directory: Path, n_code: int, seed: int = 0) -> tuple[Path, Path]:
    """Text, code and arithmetic in source order, and the same documents shuffled, as jsonl."""
    import gzip

    with gzip.open(EXAMPLES, "rt", encoding="utf-8") as f:
        text = [json.loads(line)["text"] for line in f]
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    files = sorted(p for p in stdlib.rglob("*.py") if "test" not in p.parts and p.stat().st_size > 2000)
    code = [p.read_text(encoding="utf-8", errors="replace") for p in files[:n_code]]
    arithmetic = arithmetic_problems(len(text), seed=seed, doc_chars=2048)
    docs = text + code + arithmetic
    sorted_path, shuffled_path = directory / "grouped.jsonl", directory / "grouped_shuffled.jsonl"
    shuffled = np.random.default_rng(seed).permutation(len(docs))
    for path, order in ((sorted_path, range(len(docs))), (shuffled_path, shuffled)):
        with path.open("w", encoding="utf-8") as f:
            for i in order:
                f.write(json.dumps({"text": docs[i]}) + "\n")
    return sorted_path, shuffled_path


def table_grouped(n_code: int) -> str:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        paths = grouped_corpus(Path(tmp), n_code)
        for name, options in DESIGNS.items():
            if name == "1 draw":
                continue
            tables = [profile(str(p), granularities=["bytes", "bpe-1k"], max_offset=2048, **options).table
                      for p in paths]
            for g in ("bytes", "bpe-1k"):
                a, b = (t.filter(t["granularity"] == g).sort("offset") for t in tables)
                diff = np.abs(a["mi_bits"].to_numpy() - b["mi_bits"].to_numpy())
                se = np.hypot(a["se"].to_numpy(), b["se"].to_numpy())
                ratio = np.median(a["se"].to_numpy() / b["se"].to_numpy())
                rows.append([name, g, f"{np.nanmax(diff):.4f}", f"{np.nanmax(diff / se):.2f}", f"{ratio:.2f}"])
    return format_table(["design", "granularity", "max |diff| bits", "max |diff| / SE", "SE ratio"], rows)


@contextlib.contextmanager
def jackknife_bounds() -> Iterator[list[np.ndarray]]:
    """Record the jackknife's part of every bias bound computed inside (``est.jackknife_bias``),
    so that one run gives the coverage of both rules: the bound in use and the jackknife's alone."""
    seen, bound = [], est.bias_bound

    def recording(name, points, reps, real, draws):
        seen.append(est.jackknife_bias(name, points, reps))
        return bound(name, points, reps, real, draws)

    est.bias_bound = recording
    try:
        yield seen
    finally:
        est.bias_bound = bound


def coverage(chain, label: str, n_tokens: int, samples: int) -> list[str]:
    """One row of table 3: the default profile's coverage, with the bias bound in use and with
    the jackknife's bound alone, and the widths of the two."""
    offsets = log_offsets(2048, 22)
    truth = chain.exact_mi(offsets)
    short = offsets <= 16
    inside, inside_jk, unbounded, miss, widen, err1, bound1 = [], [], [], [], [], [], []
    for s in range(samples):
        stream = chain.sample(n_tokens // DOC_LEN, DOC_LEN, seed=1000 + s)
        with jackknife_bounds() as seen:
            t = mi_profile(stream, offsets, seed=s)[0]
        order = np.argsort(t["offset"].to_numpy())
        t, jk = t[order], np.asarray(seen[0])[order]
        lo, hi, mi, bias = (t[c].to_numpy() for c in ("ci_low", "ci_high", "mi_bits", "bias_bound"))
        err = np.abs(mi - truth)
        sampling = np.sqrt(np.maximum((hi - mi) ** 2 - bias**2, 0.0))  # the half-width without a bias bound
        inside.append((lo <= truth) & (truth <= hi))
        inside_jk.append(err <= np.hypot(sampling, jk))
        unbounded.append(err <= sampling)
        miss.append(err / (hi - mi))
        widen.append((hi - mi) / np.hypot(sampling, jk))
        err1.append(mi[0] - truth[0])
        bound1.append(bias[0])
    inside, inside_jk, unbounded, miss, widen = map(np.array, (inside, inside_jk, unbounded, miss, widen))
    return [label, f"{n_tokens / 1e6:g}M", str(samples), f"{inside[:, short].mean():.3f}",
            f"{inside[:, ~short].mean():.3f}", f"{inside_jk[:, short].mean():.3f}",
            f"{inside_jk[:, ~short].mean():.3f}", f"{unbounded[:, short].mean():.3f}", f"{miss.max():.2f}",
            f"{np.median(widen[:, short]):.2f}", f"{np.median(widen[:, ~short]):.2f}", f"{np.mean(err1):+.4f}",
            f"{np.mean(bound1):.4f}"]


def accuracy(sizes: list[int], seeds: int) -> str:
    chain = reference_chain()
    offsets = log_offsets(2048, 21)
    truth = chain.exact_mi(offsets)
    tol = np.maximum(0.005, 0.02 * truth)
    rows = []
    for n in sizes:
        worst = []
        for s in range(seeds):
            t = mi_profile(chain.sample(n // DOC_LEN, DOC_LEN, seed=s), offsets)[0].sort("offset")
            worst.append(np.max(np.abs(t["mi_bits"].to_numpy() - truth) / tol))
        rows.append([f"{n / 1e6:g}M", str(seeds), f"{max(worst):.3f}", "yes" if max(worst) <= 1 else "no"])
    return format_table(["tokens", "samples", "worst |error| / bar", "within the bar"], rows)


BIAS_OFFSETS = [1, 2, 4, 8, 16]


def independent_pairs(chain, n_pairs: int, seed: int) -> TokenStream:
    """``n_pairs`` independent draws of (x_t, x_t+1) from the chain's exact joint, one document each."""
    v = len(chain.pi)
    joint = (chain.pi[:, None] * chain.P).ravel()
    cells = np.random.default_rng(seed).choice(v * v, size=n_pairs, p=joint / joint.sum())
    tokens = np.stack([cells // v, cells % v], axis=1).ravel().astype(np.int32)
    return TokenStream("pairs", tokens, np.full(n_pairs, 2), v)


def bias_against_size(sizes: list[int], samples: int) -> str:
    rows = []
    chains = {label: topic_chain(*CHAINS[label]) for label in ("reference", "slow")}
    for label, chain in chains.items():
        truth = chain.exact_mi(np.array(BIAS_OFFSETS))
        for n in sizes:
            errors, bound, pairs_error = [], [], []
            for s in range(samples):
                t = mi_profile(chain.sample(n // DOC_LEN, DOC_LEN, seed=1000 + s), BIAS_OFFSETS, seed=s)[0]
                t = t.sort("offset")
                errors.append(t["mi_bits"].to_numpy() - truth)
                bound.append(t["bias_bound"][0])
                if label == "reference":
                    pairs = mi_profile(independent_pairs(chain, int(t["n_pairs"][0]), seed=s), [1], seed=s)[0]
                    pairs_error.append(pairs["mi_bits"][0] - truth[0])
            mean = np.mean(errors, axis=0)
            rows.append([label, f"{n / 1e6:g}M", str(samples)] + [f"{e:+.4f}" for e in mean]
                        + [f"{np.mean(bound):.4f}", f"{np.mean(pairs_error):+.4f}" if pairs_error else "-"])
    return format_table(["chain", "tokens", "samples"] + [f"error r={r}" for r in BIAS_OFFSETS]
                        + ["bias bound r=1", "independent pairs: error r=1"], rows)


@contextlib.contextmanager
def pairs_dropped(share: float) -> Iterator[None]:
    """``split_rotation`` with the pair list's rotation where more than ``share`` of the
    positions have no partner: 1 is the stream's rotation everywhere (the rule before it)."""
    before = counting.PAIRS_DROPPED
    counting.PAIRS_DROPPED = share
    try:
        yield
    finally:
        counting.PAIRS_DROPPED = before


NULLS = {"default": contextlib.nullcontext, "stream's rotation everywhere (before)": lambda: pairs_dropped(1.0)}


def table_documents_end(seeds: list[int]) -> str:
    offsets = np.array([1, 4, 16, 40, 64, 128, 256, 512])
    far = offsets >= 60
    rows = []
    for seed in seeds:
        stream = two_kinds(seed=seed)
        exact = two_kinds_exact_mi(stream, offsets)
        for name, rule in NULLS.items():
            with rule():
                t, _ = mi_profile(stream, offsets.tolist())
            lo, hi, mi = (t[c].to_numpy() for c in ("ci_low", "ci_high", "mi_bits"))
            held = (lo <= exact + 1e-12) & (exact <= hi)
            rows.append([seed, f"{stream.n_tokens:,}", name, f"{held[~far].mean():.2f}", f"{held[far].mean():.2f}",
                         f"{mi[far].mean():+.4f}", f"{hi[far].max():+.4f}"])
    return format_table(["seed", "tokens", "null", "held: r < 60", "r >= 60", "mean estimate r >= 60",
                         "largest upper end r >= 60"], rows)


def table_real_documents_end() -> str:
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        corpora = {"KJV chapters": (bible(Path(tmp)) or {}).get("chapters"), "fortunes": fortunes(Path(tmp))}
        for name, path in corpora.items():
            if path is None:
                out.append(f"{name}: not installed")
                continue
            runs = {}
            for share in (1.0, 0.0):  # the stream's rotation everywhere, the pair list's wherever a pair is missing
                with pairs_dropped(share):
                    runs[share] = profile(str(path), granularities=["bpe-8k"], max_offset=2048)
            a, b = (run.table.sort("offset") for run in runs.values())
            facts = runs[0.0].granularities["bpe-8k"]
            rows = []
            for i, r in enumerate(a["offset"].to_list()):
                dropped = 1 - a["n_pairs"][i] / facts.n_tokens
                if dropped > 0.01:
                    ma, mb, se = a["mi_bits"][i], b["mi_bits"][i], b["se"][i]
                    rows.append([r, f"{dropped:.3f}", "pair list" if dropped > counting.PAIRS_DROPPED else "stream",
                                 f"{ma:+.4f}", f"{mb:+.4f} ± {se:.4f}", f"{(mb - ma) / se:+.1f}", f"{(mb - ma) / mb:+.3f}"])
            out.append(f"{name}, BPE-8k ({facts.n_tokens:,} tokens, {facts.n_docs:,} documents)\n"
                       + format_table(["offset", "without partner", "default's null", "stream's rotation",
                                       "pair list's ± se", "difference / se", "difference / pair list's"], rows))
    return "\n\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--tokens", default="500000,1000000,2000000", help="corpus sizes of the coverage table")
    args = parser.parse_args()
    samples, held_out = (4, 2) if args.quick else (10, 4)
    start = time.perf_counter()
    print(machine_line())
    print("\n1. Two domains, true MI 1 bit at every offset (min - max over offsets 1-512)\n")
    print(table_two_domains())
    print("\n2. Grouped corpus (Python docs, standard library source, arithmetic): source order against shuffled\n")
    print(table_grouped(60 if args.quick else 200))
    print(f"\n3. Coverage of the 95% intervals on chains with exact MI (documents of {DOC_LEN})\n")
    rows = []
    for n in (int(v) for v in args.tokens.split(",")):
        for label, chain in CHAINS.items():
            rows.append(coverage(topic_chain(*chain), label, n, samples if label in ("reference", "slow") else held_out))
    print(format_table(["chain", "tokens", "samples", "r <= 16", "r > 16", "jackknife bound: r <= 16", "r > 16",
                        "no bound: r <= 16", "worst miss (half-widths)", "width / jackknife's: r <= 16", "r > 16",
                        "error at r=1", "bias bound at r=1"], rows))
    print("   chains: topic_chain(vocab, topics, switch, concentration, seed) with "
          + ", ".join(f"{label} {args}" for label, args in CHAINS.items()))
    print("\n4. Accuracy bar on the reference chain\n")
    print(accuracy([1_000_000, 2_000_000], 2 if args.quick else 3))
    print("\n5. Bias at short offsets against the corpus size (mean error of the default, bits)\n")
    print(bias_against_size([250_000, 500_000, 1_000_000, 2_000_000], 2 if args.quick else 4))
    print("\n6. Documents that end: the null's marginals (two_kinds: exact MI 0 beyond 60 tokens)\n")
    print(table_documents_end([1, 2] if args.quick else [1, 2, 3, 4]))
    print()
    print(table_real_documents_end())
    print(f"\n{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
