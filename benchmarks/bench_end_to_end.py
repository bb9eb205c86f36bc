"""End-to-end time of ``depstat.profile`` on about 100 MB of jsonl, split by stage.

Builds a jsonl corpus from text on this machine, every document distinct (no text is
repeated: repeats would inflate MI and flatter the cache), in this order until ``--mb``:

1. the Python standard library (``sysconfig.get_path("stdlib")``, site-packages excluded):
   every UTF-8 text file, one document per file;
2. the fortune files in ``/usr/share/games/fortunes`` (Debian ``fortunes``), if installed;
3. GCIDE, the Collaborative International Dictionary of English
   (``/usr/share/dictd/gcide.dict.dz``, Debian ``dict-gcide``), if installed, cut into
   documents of about 64 KB at entry boundaries;
4. Python source under this interpreter's site-packages, one document per file, to fill up.

Files with identical content are taken once. Then it times, in one process, after a tiny
warm-up profile and a warm-up of the kernels for wide (32-bit) token ids (Numba compiles
or loads its kernels there, ``warm_up``):

* ``profile()`` with an empty cache (cold), split into read + train + tokenize, count (also
  per granularity) and estimate (``Profile.run["seconds"]``);
* the tokenize stage again with that cache filled (warm: what a rerun's ``profile()``
  spends before counting, which is unchanged) and without a cache (``text_streams``),
  granularity by granularity; the warm and uncached streams must be identical or the
  run fails;
* reading the documents alone, and reading plus cutting them into hashed shards: what a
  warm run still does for every granularity;
* ``encode_batch_fast`` on ``--encode-mb`` of text in two fresh interpreters, one with
  ``RAYON_NUM_THREADS=1``: wall and CPU seconds, to show the thread pool at work;
* the floor of the ladder's tokenization: the largest BPE trained on the same training sample
  and all the text encoded with it; the smaller BPEs encoded directly too, and checked equal to
  the streams ``text_streams`` cuts from the largest one's tokens (``Refinement``), or the run fails;
* the ladder's BPE vocabularies trained one by one on the training sample (what depstat did
  before) against the largest trained once and the others cut from it (``truncate_bpe``, what
  ``text_streams`` does); every cut vocabulary must equal its own training or the run fails;
* the corpus written as token ids of the largest BPE (jsonl, as Nemotron-ClimbMix ships) and
  read twice: as ids, and decoded to text with ``--ids-tokenizer`` (what every pass over such
  a corpus does); then a pass over a random tenth of its documents (``--max-docs``), which
  decodes only those; then, with a cache of decoded text, a pass that decodes and stores every
  batch (what the first pass of a profile does) and one that reads them (every later pass).

Run: ``python benchmarks/bench_end_to_end.py [--mb 100] [-g NAME ...] [--max-tokens N]``.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
from benchlib import format_table, machine_line

from depstat.estimate.profile import mi_profile
from depstat.io.corpus import open_corpus
from depstat.io.sampling import select
from depstat.pipeline import profile
from depstat.tokenize.cache import TokenCache, split_shards
from depstat.tokenize.granularity import (
    DEFAULT_LADDER,
    DEFAULT_TRAIN_BYTES,
    DEFAULT_TRAIN_DOCS,
    bpe_vocab_size,
    encode_stream,
    text_streams,
    train_bpe,
    truncate_bpe,
)
from depstat.tokenize.stream import TokenStream

FORTUNES_DIR = Path("/usr/share/games/fortunes")
GCIDE = Path("/usr/share/dictd/gcide.dict.dz")
GCIDE_DOC_BYTES = 64 * 1024
GRANULARITIES = DEFAULT_LADDER  # depstat's default: about 6 minutes on 2 cores


def text_files(
    label: str, root: Path, suffixes: tuple[str, ...] | None, skip: str | None = None,
) -> Iterator[tuple[str, str]]:
    """(label, text) of every UTF-8 text file under ``root`` in sorted order, optionally by suffix."""
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        if skip is not None:
            dirnames[:] = [d for d in dirnames if d != skip]
        for name in sorted(filenames):
            path = Path(dirpath) / name
            if path.is_symlink() or (suffixes is not None and path.suffix not in suffixes):
                continue
            try:
                data = path.read_bytes()
                text = data.decode("utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            if "\0" not in text and text.strip():
                yield label, text


def fortune_docs() -> Iterator[tuple[str, str]]:
    """Each plain fortune file (not the .dat indexes) as one document."""
    if FORTUNES_DIR.is_dir():
        for path in sorted(FORTUNES_DIR.iterdir()):
            if path.is_file() and not path.is_symlink() and not path.suffix:
                yield "fortunes", path.read_text(encoding="utf-8", errors="replace")


def gcide_docs() -> Iterator[tuple[str, str]]:
    """GCIDE in documents of about 64 KB, cut at blank lines (between entries)."""
    if not GCIDE.is_file():
        return
    text = gzip.open(GCIDE).read().decode("utf-8", errors="replace")
    start = 0
    while start < len(text):
        cut = text.find("\n\n", start + GCIDE_DOC_BYTES)
        end = len(text) if cut < 0 else cut + 2
        yield "gcide", text[start:end]
        start = end


def build_corpus(path: Path, target_bytes: int) -> dict[str, list[int]]:
    """Write distinct documents to ``path`` until ``target_bytes``; documents and bytes per source."""
    stdlib = Path(sysconfig.get_path("stdlib"))
    sources = [
        text_files("stdlib", stdlib, None, skip="site-packages"),
        fortune_docs(),
        gcide_docs(),
        *(text_files("site-packages .py", Path(p), (".py",)) for p in sorted(set(sys.path)) if p.endswith("site-packages")),
    ]
    seen: set[bytes] = set()
    per_source: dict[str, list[int]] = {}
    total = 0
    with path.open("w", encoding="utf-8") as out:
        for source in sources:
            for label, text in source:
                data = text.encode("utf-8")
                digest = hashlib.blake2b(data, digest_size=16).digest()
                if digest in seen:
                    continue
                seen.add(digest)
                out.write(json.dumps({"text": text}, ensure_ascii=False) + "\n")
                counts = per_source.setdefault(label, [0, 0])
                counts[0] += 1
                counts[1] += len(data)
                total += len(data)
                if total >= target_bytes:
                    return per_source
    return per_source


def encode_probe(text_path: Path, mb: float, threads: str | None) -> tuple[float, float]:
    """(wall s, CPU s) of ``encode_batch_fast`` on ``mb`` MB of the corpus in a fresh interpreter."""
    code = f"""
import json, resource, time
from depstat.tokenize.cache import TokenCache, split_shards
from depstat.tokenize.granularity import _encode, train_bpe
texts, size = [], 0
for line in open({str(text_path)!r}, encoding="utf-8"):
    texts.append(json.loads(line)["text"]); size += len(texts[-1])
    if size >= {mb} * 1e6: break
tok = train_bpe(texts[:200], 8192)
shards = list(split_shards(texts))
cpu0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
for shard in shards: _encode(tok, shard.texts)
cpu1, t1 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
print(t1 - t0, cpu1.ru_utime + cpu1.ru_stime - cpu0.ru_utime - cpu0.ru_stime)
"""
    env = dict(os.environ)
    env.pop("RAYON_NUM_THREADS", None)
    if threads is not None:
        env["RAYON_NUM_THREADS"] = threads
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    wall, cpu = out.stdout.split()
    return float(wall), float(cpu)


def timed_each(seconds: dict[str, float], key: str, items: Iterator) -> Iterator:
    """The items, adding the time each takes to produce to ``seconds[key]``."""
    while True:
        start = time.perf_counter()
        item = next(items, None)
        seconds[key] += time.perf_counter() - start
        if item is None:
            return
        yield item


def timed(fn) -> tuple[float, object]:
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def warm_up(corpus_path: Path, names: list[str]) -> None:
    """Compile (or load) every kernel variant the timed profile runs, so that its count is not compile time.

    A tiny profile of the corpus covers each granularity's kernel path, but its words
    vocabulary is small; the full corpus uses more than 65,536 words, which the counter
    relabels to 32-bit ids: kernels of another type, compiled on a stream that needs them.
    """
    profile(str(corpus_path), granularities=names, max_docs=20, max_offset=64)
    wide = 70_000
    ids = np.random.default_rng(0).permutation(np.tile(np.arange(wide, dtype=np.uint32), 3))
    mi_profile(TokenStream("wide", ids, np.array([len(ids) // 2, len(ids) - len(ids) // 2]), wide), [1, 2, 64])


def floor_run(training, documents, size: int):
    """Train the largest BPE on the training sample and encode every document with it, no cache."""
    tokenizer = train_bpe(training(), size)
    return tokenizer, encode_stream(f"bpe-{size}", (d.text for d in documents()), tokenizer)


def ladder_training(texts: list[str], sizes: list[int]) -> list[list[str]]:
    """Table rows: each BPE size trained alone, against the largest trained once and the others cut from it."""
    alone, seconds = {}, {}
    for size in sizes:
        seconds[size], alone[size] = timed(lambda: train_bpe(texts, size))
    t_once, big = timed(lambda: train_bpe(texts, max(sizes)))
    t_cut, cut = timed(lambda: {size: truncate_bpe(big, size) for size in sizes})
    for size in sizes:
        assert cut[size].to_str() == alone[size].to_str(), f"bpe-{size}: the cut vocabulary is not the trained one"
    rows = [[f"bpe-{size} trained alone", f"{seconds[size]:.1f}"] for size in sizes]
    rows += [["one training per size (sum)", f"{sum(seconds.values()):.1f}"],
             [f"bpe-{max(sizes)} once, the others cut from it", f"{t_once + t_cut:.1f} (cutting {t_cut:.2f})"],
             ["saved", f"{sum(seconds.values()) - t_once - t_cut:.1f}"]]
    return rows


def load_tokenizer_of(cache_dir: Path, names: list[str]):
    """The largest BPE vocabulary the cold profile trained (the stand-in for a model's tokenizer), from the cache."""
    from tokenizers import Tokenizer

    size = max(bpe_vocab_size(n) or 0 for n in names) or 8192
    paths = [p for p in (cache_dir / "v1" / "tokenizers").glob("*.json")
             if Tokenizer.from_file(str(p)).get_vocab_size() == size]
    return Tokenizer.from_file(str(paths[0]))


def decode_rows(workdir: Path, documents, tokenizer) -> list[list[str]]:
    """One row: the corpus encoded with ``tokenizer`` and written as ids, then read as ids and read decoded."""
    ids_path, tok_path = workdir / "ids.jsonl", workdir / "ids-tokenizer.json"
    tokenizer.save(str(tok_path))
    n_ids = n_bytes = 0
    with ids_path.open("w", encoding="utf-8") as out:
        for shard in split_shards(d.text for d in documents()):
            n_bytes += shard.n_bytes
            for e in tokenizer.encode_batch_fast(shard.texts, add_special_tokens=False):
                out.write(json.dumps({"input_ids": e.ids}) + "\n")
                n_ids += len(e.ids)
    read_s, _ = timed(lambda: sum(d.ids.size for d in open_corpus(str(ids_path))))
    decoded = open_corpus(str(ids_path), ids_tokenizer=str(tok_path))
    decode_s, n_docs = timed(lambda: sum(1 for _ in decoded))
    sample = select(decoded, max_docs=max(n_docs // 10, 1), max_tokens=None)
    sample_s, _ = timed(lambda: sum(len(d.text) for d in sample.documents(decoded)))
    shutil.rmtree(workdir / "decode-cache", ignore_errors=True)
    decoded.cache_decoding(TokenCache(workdir / "decode-cache"))
    store_s, _ = timed(lambda: sum(1 for _ in decoded))
    cached_s, _ = timed(lambda: sum(1 for _ in decoded))
    return [[f"bpe-{tokenizer.get_vocab_size() // 1024}k", f"{n_ids:,}", f"{read_s:.1f}", f"{decode_s:.1f}",
             f"{n_bytes / 1e6 / max(decode_s - read_s, 1e-9):.0f}", f"{sample_s:.1f}", f"{store_s:.1f}",
             f"{cached_s:.1f}"]]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=100, help="corpus size in MB of UTF-8 text (default: 100)")
    ap.add_argument("-g", "--granularity", action="append", default=None,
                    help=f"granularities (default: depstat's own, {' '.join(GRANULARITIES)})")
    ap.add_argument("--max-tokens", type=int, default=None, help="profile's --max-tokens (default: the whole corpus)")
    ap.add_argument("--max-offset", type=int, default=2048, help="profile's --max-offset (default: 2048)")
    ap.add_argument("--train-docs", type=int, default=DEFAULT_TRAIN_DOCS,
                    help=f"profile's --train-docs (default: {DEFAULT_TRAIN_DOCS})")
    ap.add_argument("--train-bytes", type=int, default=DEFAULT_TRAIN_BYTES,
                    help=f"profile's --train-bytes, 0 for no limit (default: {DEFAULT_TRAIN_BYTES})")
    ap.add_argument("--encode-mb", type=float, default=8, help="text for the thread-pool probe (default: 8 MB)")
    ap.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "depstat-bench-e2e",
                    help="where the corpus and the cache go (emptied first, removed at the end)")
    args = ap.parse_args()
    names = args.granularity or list(GRANULARITIES)
    train = dict(train_docs=args.train_docs, train_bytes=args.train_bytes or None)

    print(machine_line())
    print(f"tokenizers thread pool: RAYON_NUM_THREADS={os.environ.get('RAYON_NUM_THREADS', 'unset')}, "
          f"TOKENIZERS_PARALLELISM={os.environ.get('TOKENIZERS_PARALLELISM', 'unset')}")
    shutil.rmtree(args.workdir, ignore_errors=True)
    args.workdir.mkdir(parents=True)
    corpus_path, cache_dir = args.workdir / "corpus.jsonl", args.workdir / "cache"
    try:
        build_s, per_source = timed(lambda: build_corpus(corpus_path, int(args.mb * 1e6)))
        total = sum(b for _, b in per_source.values())
        print(f"\ncorpus: {corpus_path.stat().st_size / 1e6:.1f} MB jsonl, {total / 1e6:.1f} MB of text, "
              f"{sum(d for d, _ in per_source.values())} distinct documents, built in {build_s:.1f} s")
        print(format_table(["source", "documents", "MB"],
                           [[k, d, f"{b / 1e6:.1f}"] for k, (d, b) in per_source.items()]))
        if total < args.mb * 1e6 * 0.95:
            print(f"note: only {total / 1e6:.1f} MB of distinct text found (asked for {args.mb:g} MB)")

        opts = dict(granularities=names, max_tokens=args.max_tokens, max_offset=args.max_offset, **train)
        print(f"\nprofile options: {opts}")
        warm_up(corpus_path, names)

        wall, cold = timed(lambda: profile(str(corpus_path), cache_dir=cache_dir, **opts))
        print(f"cold profile(): {wall:.1f} s", file=sys.stderr)

        corpus = open_corpus(str(corpus_path))
        selection = select(corpus, None, args.max_tokens)  # the profile's sample and training texts

        def documents():
            return selection.documents(corpus)

        def training():
            return selection.training(corpus, args.train_docs, args.train_bytes or None)

        sizes = sorted({bpe_vocab_size(n) for n in names if bpe_vocab_size(n)})
        floor_s, direct = (None, {})
        if sizes:  # the floor: one training of the largest BPE and one encoding of all the text with it
            floor_s, (largest, big_stream) = timed(lambda: floor_run(training, documents, max(sizes)))
            direct = {n: encode_stream(n, (d.text for d in documents()), truncate_bpe(largest, bpe_vocab_size(n)))
                      for n in names if bpe_vocab_size(n) and bpe_vocab_size(n) < max(sizes)}
            del big_stream

        warm_cache = TokenCache(cache_dir)
        seconds = {"warm": 0.0, "none": 0.0}
        warm = timed_each(seconds, "warm", text_streams(documents, names, cache=warm_cache, training=training))
        plain = timed_each(seconds, "none", text_streams(documents, names, training=training))
        for a, b in zip(warm, plain, strict=True):  # one granularity at a time: equal streams, equal profiles
            assert (a.tokens == b.tokens).all() and (a.doc_lengths == b.doc_lengths).all(), a.name
            assert cold.granularities[a.name].n_tokens == a.n_tokens, a.name
            if a.name in direct:  # a BPE cut from the largest one's tokens equals encoding the text with it
                d = direct.pop(a.name)
                assert (a.tokens == d.tokens).all() and (a.doc_lengths == d.doc_lengths).all(), a.name
        read_s, _ = timed(lambda: sum(1 for _ in documents()))
        shard_s, n_shards = timed(lambda: sum(1 for _ in split_shards(d.text for d in documents())))

        print("\nseconds per stage: profile() with an empty cache; read + train + tokenize again with the cache")
        print("filled (the tokenize stage of a warm profile(): counting and estimation do not change) and")
        print("without a cache (streams checked equal to the cached ones)")
        s = cold.run["seconds"]
        print(format_table(["stage", "cold cache", "warm cache", "no cache"], [
            ["read + train + tokenize", f"{s['tokenize']:.1f}", f"{seconds['warm']:.1f}", f"{seconds['none']:.1f}"],
            ["count", f"{s['count']:.1f}", "", ""],
            *[[f"  of which {name}", f"{s[f'count {name}']:.1f}", "", ""] for name in names],
            ["estimate", f"{s['estimate']:.1f}", "", ""],
            ["total profile()", f"{wall:.1f}", f"{wall - s['tokenize'] + seconds['warm']:.1f} (sum)", ""],
        ]))

        if floor_s is not None:
            print(f"\nthe floor, train bpe-{max(sizes)} on the same training sample and encode all the text with it: "
                  f"{floor_s:.1f} s; cold profile() {wall:.1f} s = {wall / floor_s:.2f}x the floor. The smaller BPEs "
                  "are cut from its tokens (tokenize.granularity.Refinement): checked equal to encoding the text "
                  "with each")

        print("\ncache")
        size = sum(p.stat().st_size for p in cache_dir.rglob("*") if p.is_file())
        print(format_table(
            ["run", "shards encoded", "shards reused", "vocabularies trained", "reused"],
            [[k, c["shards_encoded"], c["shards_reused"], c["tokenizers_trained"], c["tokenizers_reused"]]
             for k, c in (("cold", cold.run["cache"]), ("warm", warm_cache.counts))],
        ))
        print(f"cache size on disk: {size / 1e6:.1f} MB; one pass over the sample: reading {read_s:.2f} s, "
              f"reading + cutting into {n_shards} hashed shards {shard_s:.2f} s (a warm run does this once "
              "per granularity, plus once to key the vocabularies)")

        print("\ngranularities")
        print(format_table(
            ["granularity", "vocab", "tokens", "docs", "bytes/token"],
            [[k, g.vocab_size, g.n_tokens, g.n_docs, f"{g.bytes_per_token:.2f}"]
             for k, g in cold.granularities.items()],
        ))

        print(f"\nencode_batch_fast on {args.encode_mb:g} MB with a BPE-8k vocabulary (fresh interpreters)")
        probe = {t or "default": encode_probe(corpus_path, args.encode_mb, t) for t in ("1", None)}
        print(format_table(
            ["RAYON_NUM_THREADS", "wall s", "CPU s", "CPU / wall", "MB/s"],
            [[k, f"{w:.2f}", f"{c:.2f}", f"{c / w:.2f}", f"{args.encode_mb / w:.2f}"] for k, (w, c) in probe.items()],
        ))

        if len(sizes) > 1:
            texts = list(training())
            print(f"\nBPE vocabularies for the ladder on the training sample ({len(texts)} documents, "
                  f"{sum(len(t.encode()) for t in texts) / 1e6:.1f} MB); every cut vocabulary equals its own training")
            print(format_table(["BPE training", "seconds"], ladder_training(texts, sizes)))

        print("\nthe corpus as token ids (jsonl, as Nemotron-ClimbMix ships), read as ids and decoded to text by "
              "--ids-tokenizer")
        print(format_table(["tokenizer", "ids", "read ids s", "read + decode s", "decode MB/s", "a tenth's pass s",
                            "decode + store s", "from the cache s"],
                           decode_rows(args.workdir, documents, load_tokenizer_of(cache_dir, names))))
    finally:
        shutil.rmtree(args.workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
