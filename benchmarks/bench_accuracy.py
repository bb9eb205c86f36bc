"""Accuracy of every depstat MI estimator against the exact MI of synthetic Markov chains.

Chains: ``reference_chain()`` (V = 512, the chain behind the accuracy bar) at several
corpus sizes, and the slower-mixing ``topic_chain(512, 16, switch=0.01,
concentration=0.05, seed=1)`` at the largest size. Documents are 4096 tokens long and
pairs never cross them. For each estimator in ``depstat.estimate.estimators.ESTIMATORS`` and each
offset r (log-spaced from 1 to 2048) the error is estimate - exact MI, in bits.

Accuracy bar: |error| / max(0.005, 0.02 * exact) <= 1 at every offset (the "bar ratio").
Errors are marked as within sampling noise when |error| <= 2 standard errors (the interval's: jackknife and null draws).

Every estimator's profile is ``depstat.estimate.profile.mi_profile`` with its defaults (documents
counted in hash order, two null draws), so the table is what ``depstat profile --estimator NAME``
gives; SE is the interval's standard error.

Run: ``python benchmarks/bench_accuracy.py [--quick]``.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass

import numpy as np
from benchlib import format_table, machine_line, signed

from depstat.estimate import estimators as est
from depstat.estimate.profile import log_offsets, mi_profile
from depstat.synth import MarkovChain, reference_chain, topic_chain
from depstat.tokenize.stream import TokenStream

SIZES = (250_000, 500_000, 1_000_000, 2_000_000)
QUICK_SIZES = (500_000, 2_000_000)
SEEDS = 3
QUICK_SEEDS = 1
DOC_LEN = 4096
MAX_OFFSET = 2048
N_OFFSETS = 22  # log_offsets merges duplicates: 21 distinct offsets
BAR_FLOOR = 0.005  # bits
BAR_REL = 0.02
NOISE_SE = 2.0  # |error| <= NOISE_SE * SE counts as within sampling noise
SLOW_CHAIN = "topic_chain(512, 16, switch=0.01, concentration=0.05, seed=1)"

PerEstimator = dict[str, np.ndarray]


@dataclass
class Sample:
    """Estimates and standard errors (bits) per estimator, one value per offset."""

    n_tokens: int
    seed: int
    mi: PerEstimator
    se: PerEstimator


def estimate_all(stream: TokenStream, offsets: np.ndarray) -> tuple[PerEstimator, PerEstimator]:
    """Every estimator's point estimate and standard error at each offset, as ``mi_profile`` gives them."""
    mi, se = {}, {}
    for name in est.ESTIMATORS:
        table, skipped = mi_profile(stream, offsets, estimator=name)
        if skipped or table.height != len(offsets):
            raise AssertionError(f"mi_profile skipped offsets {skipped} for {name}")
        table = table.sort("offset")
        mi[name], se[name] = table["mi_bits"].to_numpy(), table["se"].to_numpy()
    return mi, se


def draw(chain: MarkovChain, n_tokens: int, seed: int, offsets: np.ndarray) -> Sample:
    """Sample about ``n_tokens`` tokens in whole documents and estimate at every offset."""
    stream = chain.sample(max(1, round(n_tokens / DOC_LEN)), DOC_LEN, seed=seed)
    mi, se = estimate_all(stream, offsets)
    return Sample(stream.n_tokens, seed, mi, se)


def bar_ratio(error: np.ndarray | float, true: np.ndarray | float) -> np.ndarray | float:
    """|error| / max(BAR_FLOOR, BAR_REL * true): the accuracy bar holds where this is <= 1."""
    return np.abs(error) / np.maximum(BAR_FLOOR, BAR_REL * true)


def worst_error(samples: list[Sample], name: str, true: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per offset, the signed error of largest magnitude over the samples, and that sample's SE."""
    errors = np.array([s.mi[name] - true for s in samples])
    ses = np.array([s.se[name] for s in samples])
    pick = np.argmax(np.abs(errors), axis=0)
    cols = np.arange(errors.shape[1])
    return errors[pick, cols], ses[pick, cols]


# ----------------------------------------------------------------------------- report


def size_label(n_tokens: int) -> str:
    """2,000,000 -> '2M', 250,000 -> '250k'."""
    return f"{n_tokens / 1e6:g}M" if n_tokens >= 1_000_000 else f"{n_tokens / 1e3:g}k"


def summary_tables(by_size: dict[int, list[Sample]], true: np.ndarray) -> list[str]:
    """Max |error| and worst bar ratio per estimator (rows) and corpus size (columns)."""
    sizes = sorted(by_size)
    err_rows, bar_rows = [], []
    for name in est.ESTIMATORS:
        errors = [worst_error(by_size[n], name, true)[0] for n in sizes]
        bars = [bar_ratio(err, true) for err in errors]
        n_over = int(np.sum(bars[-1] > 1))
        verdict = "yes" if n_over == 0 else f"no ({n_over} offsets)"
        err_rows.append([name] + [f"{np.max(np.abs(err)):.4f}" for err in errors])
        bar_rows.append([name] + [f"{np.max(b):.2f}" for b in bars] + [verdict])
    heads = [f"N={size_label(n)}" for n in sizes]
    return [
        "max |error| (bits) over the offsets, worst seed:",
        format_table(["estimator"] + heads, err_rows),
        "",
        "worst bar ratio |error| / max(0.005, 0.02 * exact) over the offsets and seeds (<= 1 passes):",
        format_table(["estimator"] + heads + [f"passes at {size_label(sizes[-1])}"], bar_rows),
    ]


def exact_label(value: float) -> str:
    """Exact MI with 4 decimals, or in e-notation when it rounds to zero (rounding residue)."""
    return f"{value:.4f}" if abs(value) >= 5e-5 else f"{value:.0e}"


def offset_table(offsets: np.ndarray, true: np.ndarray, samples: list[Sample]) -> str:
    """Exact MI and each estimator's worst-seed signed error per offset.

    '!' flags an error that breaks the accuracy bar, '~' one within NOISE_SE jackknife
    SEs of the same seed.
    """
    rows = []
    columns = {name: worst_error(samples, name, true) for name in est.ESTIMATORS}
    for i, r in enumerate(offsets):
        row = [str(int(r)), exact_label(true[i])]
        for name in est.ESTIMATORS:
            err, se = columns[name][0][i], columns[name][1][i]
            flag = "!" if bar_ratio(err, true[i]) > 1 else " "
            flag += "~" if abs(err) <= NOISE_SE * se else " "
            row.append(signed(err) + flag)
        rows.append(row)
    return format_table(["offset", "exact"] + list(est.ESTIMATORS), rows)


def se_table(offsets: np.ndarray, true: np.ndarray, samples: list[Sample]) -> str:
    """The SE (bits) behind each worst-seed error of offset_table."""
    rows = []
    columns = {name: worst_error(samples, name, true)[1] for name in est.ESTIMATORS}
    for i, r in enumerate(offsets):
        rows.append([str(int(r))] + [f"{columns[name][i]:.4f}" for name in est.ESTIMATORS])
    return format_table(["offset"] + list(est.ESTIMATORS), rows)


def noise_summary(samples: list[Sample], true: np.ndarray) -> str:
    """Per estimator: offsets that break the bar, and how many of those are within 2 SE."""
    rows = []
    for name in est.ESTIMATORS:
        err, se = worst_error(samples, name, true)
        broken = bar_ratio(err, true) > 1
        noisy = broken & (np.abs(err) <= NOISE_SE * se)
        rows.append([
            name, f"{np.max(np.abs(err)):.4f}", f"{np.max(bar_ratio(err, true)):.2f}",
            int(broken.sum()), int(noisy.sum()),
            f"{np.median(np.abs(err) / se):.2f}",
        ])
    return format_table(
        ["estimator", "max |error|", "worst bar ratio", "offsets over bar", "of which <= 2 SE",
         "median |error|/SE"],
        rows,
    )


def chain_report(title: str, offsets: np.ndarray, true: np.ndarray, samples: list[Sample]) -> list[str]:
    """Noise summary, per-offset errors and their SEs for one chain and size."""
    return [
        f"{title}, worst seed of {len(samples)}: offsets over the bar, and how many are within "
        f"{NOISE_SE:g} SE",
        noise_summary(samples, true),
        "",
        f"{title}, per offset: signed error of the worst seed ('!' breaks the bar; '~' within "
        f"{NOISE_SE:g} SE of that seed)",
        offset_table(offsets, true, samples),
        "",
        f"{title}: SE (bits) of the same seed",
        se_table(offsets, true, samples),
    ]


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="sizes 500k and 2M, one seed")
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    sizes = QUICK_SIZES if args.quick else SIZES
    seeds = list(range(QUICK_SEEDS if args.quick else SEEDS))
    offsets = log_offsets(MAX_OFFSET, n=N_OFFSETS)
    start = time.perf_counter()

    chain = reference_chain()
    true = chain.exact_mi(offsets)
    by_size = {n: [draw(chain, n, seed, offsets) for seed in seeds] for n in sizes}
    largest = max(sizes)

    slow = topic_chain(512, 16, switch=0.01, concentration=0.05, seed=1)
    slow_true = slow.exact_mi(offsets)
    slow_samples = [draw(slow, largest, seed, offsets) for seed in seeds]

    print(machine_line())
    print(f"offsets ({len(offsets)}): {offsets.tolist()}")
    print(
        f"documents of {DOC_LEN} tokens; sample seeds {seeds}; tokens per size: "
        + ", ".join(f"{size_label(n)} = {by_size[n][0].n_tokens:,}" for n in sizes)
    )
    print(f"estimators: {', '.join(est.ESTIMATORS)} (default {est.DEFAULT_ESTIMATOR}); MI in bits")
    print("each estimator: mi_profile(stream, offsets, estimator=NAME) with its defaults (hash order, 2 null draws)")
    print()
    print(f"== reference_chain() (V=512): exact I(1) = {true[0]:.4f} bits")
    print("\n".join(summary_tables(by_size, true)))
    print()
    title = f"reference_chain() at N={size_label(largest)}"
    print("\n".join(chain_report(title, offsets, true, by_size[largest])))
    print()
    print(f"== {SLOW_CHAIN}: exact I(1) = {slow_true[0]:.4f} bits")
    print("\n".join(chain_report(f"N={size_label(largest)}", offsets, slow_true, slow_samples)))
    print()
    print(f"total time {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
