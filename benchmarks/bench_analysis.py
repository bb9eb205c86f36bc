"""W against the true scale B, and self-similarity verdicts on sources of known type.

Run: python benchmarks/bench_analysis.py [--quick]

1. Block sequences with latent block length B (depstat.synth.block_sequences): W (q90,
   L = 1024) from the exact MI and from profiles of sampled sequences, and the fitted
   law log W = a + slope log B with a bootstrap interval over the B values.
2. Verdicts, W and curvatures on natural text (the bundled Python docs; Debian's fortunes
   when installed), code (this Python's standard library), arithmetic and Markov text
   (generated here), at the same granularities.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sysconfig
import tempfile
import time
from pathlib import Path

import numpy as np

import depstat
from depstat.analysis import Settings, attach
from depstat.dependency import kernel_width
from depstat.profile import mi_profile
from depstat.synth import arithmetic_jsonl, block_exact_mi, block_sequences, markov_text, write_jsonl

ROOT = Path(__file__).resolve().parents[1]
FORTUNES = Path("/usr/share/games/fortunes")
L = 1024
GRANULARITIES = ["bytes", "bpe-1k", "bpe-8k", "words"]


def width_law(blocks: list[int], seed: int = 0) -> None:
    """Print W/B for exact and sampled block sequences and the fitted log-log slope."""
    offsets = np.unique(np.round(np.logspace(0, np.log10(L), 80)).astype(int))
    exact, sampled = [], []
    print(f"== W (q90 of the kernel over 1..{L}) against the block length B")
    print(f"{'B':>4}  {'W exact':>8}  {'W sampled':>10}  {'interval':>14}  {'W/B':>5}")
    for b in blocks:
        mi = block_exact_mi(b, offsets, vocab=64, states=8)
        exact.append(kernel_width(offsets, mi, np.zeros_like(mi), mi > 0, L).W)
        table, _ = mi_profile(block_sequences(200, 2048, b, vocab=64, states=8, seed=seed + b), offsets)
        o, m, se, sig = (table[c].to_numpy() for c in ("offset", "mi_bits", "se", "significant"))
        w = kernel_width(o, m, se, sig, L)
        sampled.append(w.W)
        print(f"{b:>4}  {exact[-1]:>8.1f}  {w.W:>10.1f}  {w.ci_low:>6.0f}-{w.ci_high:<7.0f}  {w.W / b:>5.2f}")
    for name, ws in (("exact", exact), ("sampled", sampled)):
        slope, ci = _bootstrap_slope(np.log(blocks), np.log(ws), seed)
        ratio = float(np.exp(np.mean(np.log(ws) - np.log(blocks))))
        print(f"{name}: slope of log W on log B = {slope:.3f} [{ci[0]:.3f}, {ci[1]:.3f}], W = {ratio:.2f} B")


def _bootstrap_slope(x: np.ndarray, y: np.ndarray, seed: int) -> tuple[float, tuple[float, float]]:
    rng = np.random.default_rng(seed)
    slope = float(np.polyfit(x, y, 1)[0])
    reps = []
    for _ in range(2000):
        i = rng.integers(0, len(x), len(x))
        if len(set(i)) > 1:
            reps.append(np.polyfit(x[i], y[i], 1)[0])
    return slope, tuple(np.quantile(reps, [0.025, 0.975]))


def corpora(tmp: Path, quick: bool) -> dict[str, tuple[str, str]]:
    """Name -> (path, kind) of every corpus this machine can build offline."""
    natural = tmp / "python-docs.jsonl"
    with gzip.open(ROOT / "examples" / "python-docs.jsonl.gz", "rt", encoding="utf-8") as f:
        natural.write_text(f.read(), encoding="utf-8")
    n = 120 if quick else 300
    arithmetic_jsonl(tmp / "arithmetic.jsonl", n, seed=1)
    write_jsonl(tmp / "markov.jsonl", markov_text(n, 4096, seed=1))
    out = {"python docs (text)": (str(natural), "natural"),
           "arithmetic (synth)": (str(tmp / "arithmetic.jsonl"), "not self-similar"),
           "markov text (synth)": (str(tmp / "markov.jsonl"), "not self-similar")}
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    out["python stdlib (code)"] = (str(stdlib / "[a-z]*.py"), "code")  # top-level modules, no codec tables
    if FORTUNES.is_dir():
        texts = []
        for p in sorted(FORTUNES.iterdir()):
            if p.is_file() and not p.suffix:
                items = [x.strip() for x in p.read_text(errors="replace").split("\n%\n") if x.strip()]
                texts += ["\n\n".join(items[i:i + 40]) for i in range(0, len(items), 40)]
        write_jsonl(tmp / "fortunes.jsonl", texts)
        out["fortunes (text)"] = (str(tmp / "fortunes.jsonl"), "natural")
    return out


def verdicts(quick: bool) -> None:
    """Profile each corpus, analyse at L = 1024, print verdict, W and curvature per granularity."""
    print(f"\n== self-similarity on sources of known type (granularities {', '.join(GRANULARITIES)}; L = {L})")
    with tempfile.TemporaryDirectory() as d:
        for name, (path, kind) in corpora(Path(d), quick).items():
            t0 = time.perf_counter()
            p = depstat.profile(path, granularities=GRANULARITIES, max_offset=2048, skip_bad=True,
                                max_tokens=1_000_000 if quick else 2_000_000)
            attach(p, Settings(train_length=L, target_length=4 * L))
            a = p.analysis
            ss = a["self_similarity"]
            print(f"\n{name}: expected {kind}; verdict {ss['verdict']} ({time.perf_counter() - t0:.0f} s)")
            print(f"  {'granularity':<12} {'tokens':>9} {'B/tok':>5} {'W tokens [interval]':>22} {'curvature [95%]':>26} {'rises':>5} {'alpha':>6}")
            for g, facts in p.granularities.items():
                w = a["W"].get(g)
                c = ss["curvature"].get(g)
                alpha = ss["power_law_exponents"].get(g, {}).get("alpha")
                wtxt = f"{w['W']:.0f} [{w['ci_low']:.0f}, {w['ci_high']:.0f}]" if w else "profile too short"
                ctxt = f"{c['curvature']:+.3f} [{c['ci'][0]:+.3f}, {c['ci'][1]:+.3f}]" if c else "too few points"
                rises = str(c["significant_rises"]) if c else "-"
                atxt = f"{alpha:.2f}" if alpha is not None else "-"
                print(f"  {g:<12} {facts['n_tokens']:>9} {facts['bytes_per_token']:>5.2f} {wtxt:>22} {ctxt:>26} {rises:>5} {atxt:>6}")
            rec = a["recommendation"]
            print(f"  rope_theta {rec['rope_theta']:.4g} (range {rec['rope_theta_interval'][0]:.3g}-"
                  f"{rec['rope_theta_interval'][1]:.3g}) at {rec['granularity']}; extension: "
                  + json.dumps(rec["rope_scaling"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer block sizes and smaller corpora")
    args = parser.parse_args()
    width_law([4, 16, 64] if args.quick else [4, 8, 16, 32, 64])
    verdicts(args.quick)


if __name__ == "__main__":
    main()
