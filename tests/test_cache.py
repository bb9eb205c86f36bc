"""The tokenization cache: hits reproduce a cold run, edits invalidate only what changed,
interrupted runs resume from complete shards, damaged shards are recomputed."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from polars.testing import assert_frame_equal

import depstat
from depstat.cli import main
from depstat.io.corpus import open_corpus
from depstat.tokenize import cache as cache_mod
from depstat.tokenize.cache import TokenCache
from depstat.tokenize.granularity import encode_stream, text_streams, train_bpe

GRANULARITIES = ["bytes", "bpe-300", "words"]
OPTIONS = {"granularities": GRANULARITIES, "max_offset": 32, "n_blocks": 4}


@pytest.fixture(autouse=True)
def small_shards(monkeypatch: pytest.MonkeyPatch) -> None:
    """Shards of about 2 KB, so the small corpora below make several of them."""
    monkeypatch.setattr(cache_mod, "SHARD_BYTES", 2000)


def _doc(rng: random.Random) -> str:
    words = ["alpha", "beta", "gamma", "delta", "eps", "zeta", "eta", "theta", "iota", "kappa", "la", "mu"]
    return " ".join(rng.choice(words) + rng.choice(["", "s", "ed", ",", "."]) for _ in range(rng.randint(40, 120)))


def _corpus(directory: Path, n_files: int = 4, docs_per_file: int = 12, seed: int = 0) -> Path:
    """A directory of jsonl files of word salad (about 13 KB per file)."""
    rng = random.Random(seed)
    directory.mkdir(parents=True, exist_ok=True)
    for f in range(n_files):
        lines = [json.dumps({"text": _doc(rng)}) for _ in range(docs_per_file)]
        (directory / f"part{f}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return directory


def _same(a: depstat.Profile, b: depstat.Profile) -> None:
    assert_frame_equal(a.table, b.table)
    assert a.granularities == b.granularities


def test_a_warm_run_reproduces_a_cold_run_and_encodes_nothing(tmp_path: Path) -> None:
    corpus = _corpus(tmp_path / "c")
    plain = depstat.profile(str(corpus), **OPTIONS)
    cold = depstat.profile(str(corpus), cache_dir=tmp_path / "cache", **OPTIONS)
    warm = depstat.profile(str(corpus), cache_dir=tmp_path / "cache", **OPTIONS)
    _same(plain, cold)
    _same(cold, warm)
    c, w = cold.run["cache"], warm.run["cache"]
    assert c["shards_encoded"] >= 8 and c["shards_reused"] == 0 and c["tokenizers_trained"] == 2
    assert w["shards_encoded"] == 0 and w["shards_reused"] == c["shards_encoded"]
    assert w["tokenizers_trained"] == 0 and w["tokenizers_reused"] == 2
    seconds = warm.run["seconds"]
    assert "cache" not in plain.run
    assert set(seconds) == {"tokenize", "count", "estimate"} | {f"count {g}" for g in warm.granularities}
    assert sum(seconds[f"count {g}"] for g in warm.granularities) == pytest.approx(seconds["count"])


def test_an_edited_file_invalidates_only_its_own_shards(tmp_path: Path) -> None:
    corpus = _corpus(tmp_path / "c")
    root = tmp_path / "cache"
    # a user tokenizer (fixed vocabulary), so only the shards' content decides what is re-encoded
    tok_path = tmp_path / "tok.json"
    train_bpe([_doc(random.Random(9)) for _ in range(30)], 300).save(str(tok_path))
    opts = {"granularities": [], "tokenizers": [str(tok_path)], "max_offset": 32, "n_blocks": 4}
    first = depstat.profile(str(corpus), cache_dir=root, **opts).run["cache"]["shards_encoded"]
    part = corpus / "part2.jsonl"
    lines = part.read_text(encoding="utf-8").splitlines()
    lines[5] = json.dumps({"text": "an edited document " * 20})
    part.write_text("\n".join(lines) + "\n", encoding="utf-8")
    edited = depstat.profile(str(corpus), cache_dir=root, **opts)
    counts = edited.run["cache"]
    assert 1 <= counts["shards_encoded"] <= 2 and counts["shards_reused"] >= first - 2
    _same(edited, depstat.profile(str(corpus), **opts))


def test_a_changed_tokenizer_invalidates_its_shards(tmp_path: Path) -> None:
    corpus = _corpus(tmp_path / "c")
    texts = [_doc(random.Random(s)) for s in range(30)]
    root = tmp_path / "cache"
    paths = []
    for size in (300, 320):
        (tmp_path / str(size)).mkdir()
        train_bpe(texts, size).save(str(tmp_path / str(size) / "tokenizer.json"))
        paths.append(str(tmp_path / str(size)))
    opts = {"granularities": [], "max_offset": 32, "n_blocks": 4}
    a = depstat.profile(str(corpus), tokenizers=paths[:1], cache_dir=root, **opts).run["cache"]
    b = depstat.profile(str(corpus), tokenizers=paths[1:], cache_dir=root, **opts).run["cache"]
    assert a["shards_encoded"] >= 4 and b["shards_reused"] == 0 and b["shards_encoded"] == a["shards_encoded"]


def test_a_changed_training_sample_retrains_the_vocabulary(tmp_path: Path) -> None:
    corpus = _corpus(tmp_path / "c")
    root = tmp_path / "cache"
    one = depstat.profile(str(corpus), cache_dir=root, train_docs=10, **OPTIONS).run["cache"]
    two = depstat.profile(str(corpus), cache_dir=root, train_docs=20, **OPTIONS).run["cache"]
    assert one["tokenizers_trained"] == 2 and two["tokenizers_trained"] == 2 and two["tokenizers_reused"] == 0


class _Interrupt(KeyboardInterrupt):
    """Raised by the document iterator below, like Ctrl-C in the middle of a run."""


def test_an_interrupted_run_leaves_complete_shards_and_a_rerun_resumes(tmp_path: Path) -> None:
    corpus = open_corpus(str(_corpus(tmp_path / "c")))
    tok = train_bpe([_doc(random.Random(7)) for _ in range(30)], 300)
    root = tmp_path / "cache"
    n_docs = sum(1 for _ in corpus)

    def interrupted(after: int) -> Iterator[str]:
        for i, doc in enumerate(corpus):
            if i == after:
                raise _Interrupt
            yield doc.text

    cache = TokenCache(root)
    with pytest.raises(_Interrupt):
        encode_stream("bpe", interrupted(n_docs // 2), tok, cache)
    done = cache.counts["shards_encoded"]
    assert done >= 2
    assert not list(root.rglob(".tmp-*")), "no temporary files are left behind"
    assert len(list(root.rglob("*.json"))) == done  # one manifest per complete shard

    again = TokenCache(root)
    resumed = encode_stream("bpe", (d.text for d in corpus), tok, again)
    assert again.counts["shards_reused"] == done and again.counts["shards_encoded"] >= 1
    cold = encode_stream("bpe", (d.text for d in corpus), tok)
    np.testing.assert_array_equal(resumed.tokens, cold.tokens)
    np.testing.assert_array_equal(resumed.doc_lengths, cold.doc_lengths)


@pytest.mark.parametrize("damage", ["truncate", "flip", "drop"])
def test_a_damaged_shard_is_recomputed_not_read(damage: str, tmp_path: Path) -> None:
    corpus = open_corpus(str(_corpus(tmp_path / "c", n_files=1)))
    tok = train_bpe([_doc(random.Random(7)) for _ in range(30)], 300)
    root = tmp_path / "cache"
    cold = encode_stream("bpe", (d.text for d in corpus), tok, TokenCache(root))
    victim = sorted(root.rglob("*.tokens.npy"))[0]
    data = victim.read_bytes()
    if damage == "truncate":
        victim.write_bytes(data[: len(data) // 2])
    elif damage == "flip":
        victim.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
    else:
        victim.unlink()
    cache = TokenCache(root)
    warm = encode_stream("bpe", (d.text for d in corpus), tok, cache)
    assert cache.counts["shards_invalid"] == 1 and cache.counts["shards_encoded"] == 1
    np.testing.assert_array_equal(warm.tokens, cold.tokens)
    fixed = TokenCache(root)
    encode_stream("bpe", (d.text for d in corpus), tok, fixed)
    assert fixed.counts["shards_encoded"] == 0 and fixed.counts["shards_invalid"] == 0


def test_a_damaged_cached_vocabulary_is_retrained(tmp_path: Path) -> None:
    corpus = _corpus(tmp_path / "c")
    root = tmp_path / "cache"

    def docs() -> Iterator:
        return iter(open_corpus(str(corpus)))

    cold = [s.tokens for s in text_streams(docs, ["bpe-300"], cache=TokenCache(root))]
    for path in (root / f"v{cache_mod.CACHE_VERSION}" / "tokenizers").glob("*.json"):
        path.write_text(path.read_text()[:100])
    cache = TokenCache(root)
    warm = [s.tokens for s in text_streams(docs, ["bpe-300"], cache=cache)]
    assert cache.counts["tokenizers_invalid"] == 1 and cache.counts["tokenizers_trained"] == 1
    np.testing.assert_array_equal(cold[0], warm[0])


def test_shard_boundaries_follow_content_not_position() -> None:
    rng = random.Random(1)
    docs = [_doc(rng) for _ in range(200)]
    before = [s.digest for s in cache_mod.split_shards(docs)]
    after = [s.digest for s in cache_mod.split_shards(docs[:3] + ["an inserted document"] + docs[3:])]
    assert len(before) >= 10 and len(set(before) - set(after)) == 1


def test_cli_cache_options(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    corpus = _corpus(tmp_path / "c", n_files=1)
    args = ["profile", str(corpus), "-g", "bpe-300", "--max-offset", "16", "--format", "json"]
    assert main([*args, "--cache-dir", str(tmp_path / "cache")]) == 0
    assert list((tmp_path / "cache").rglob("*.tokens.npy"))
    capsys.readouterr()
    assert main([*args, "--no-cache"]) == 0
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert main([*args, "--cache-dir", str(blocker / "sub")]) == 2
    assert "cannot create the cache directory" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([*args, "--no-cache", "--cache-dir", str(tmp_path)])



def test_decoded_ids_are_read_from_the_cache_after_the_first_pass(tmp_path: Path) -> None:
    """A token-id corpus decoded with --ids-tokenizer: the first run decodes every batch once and
    stores it, the passes after it read the stored text (training, each granularity), a warm
    run decodes nothing; the profiles equal an uncached run's. A sample's selecting pass stores
    nothing, its later passes only the sample's batches."""
    from tests.test_corpus import climbmix_fixture

    (tmp_path / "c").mkdir()
    root, tok_path, _, _ = climbmix_fixture(tmp_path / "c")
    spec, opts = str(root / "*.parquet"), {**OPTIONS, "ids_tokenizer": str(tok_path)}
    plain = depstat.profile(spec, **opts)
    cold = depstat.profile(spec, cache_dir=tmp_path / "cache", **opts)
    warm = depstat.profile(spec, cache_dir=tmp_path / "cache", **opts)
    _same(plain, cold)
    _same(plain, warm)
    c, w = cold.run["cache"], warm.run["cache"]
    assert c["decoded_stored"] == 1 and c["decoded_reused"] >= len(GRANULARITIES) + 1  # 60 documents: one batch
    assert w["decoded_stored"] == 0 and w["decoded_reused"] >= len(GRANULARITIES) + 1  # no training passes here
    sampled = depstat.profile(spec, cache_dir=tmp_path / "sample-cache", max_docs=20, **opts).run["cache"]
    assert sampled["decoded_stored"] == 1 and sampled["decoded_reused"] >= len(GRANULARITIES)
    text = next((tmp_path / "cache").rglob("*.text.npy"))
    text.write_bytes(text.read_bytes()[:-1] + b"\0")
    damaged = depstat.profile(spec, cache_dir=tmp_path / "cache", **opts)
    _same(plain, damaged)
    assert damaged.run["cache"]["decoded_invalid"] == 1 and damaged.run["cache"]["decoded_stored"] == 1
