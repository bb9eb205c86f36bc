"""The profile pipeline end to end: API, CLI, saved outputs, edge cases and bad input."""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import depstat
from depstat.cli import main
from depstat.count.counting import PairCounter
from depstat.estimate.profile import Profile, log_offsets, mi_profile
from depstat.io.corpus import Document
from depstat.report.console import render
from depstat.synth import MarkovChain, stationary
from depstat.tokenize.granularity import encode_stream, ids_stream, training_texts
from depstat.tokenize.stream import TokenStream

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "python-docs.jsonl.gz"
COLUMNS = ["granularity", "offset", "mi_bits", "ci_low", "ci_high", "n_pairs", "n_docs", "estimator"]


@pytest.fixture(scope="module")
def small_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The first 30 documents of the bundled example as plain jsonl."""
    path = tmp_path_factory.mktemp("corpus") / "docs.jsonl"
    with gzip.open(EXAMPLE, "rt", encoding="utf-8") as f:
        lines = [next(f) for _ in range(30)]
    path.write_text("".join(lines), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def result(small_corpus: Path) -> Profile:
    return depstat.profile(str(small_corpus), granularities=["bytes", "bpe-512", "words"], max_offset=256)


def test_profile_table_has_one_row_per_granularity_and_offset(result: Profile, small_corpus: Path) -> None:
    table = result.to_polars()
    assert table.columns[: len(COLUMNS)] != [] and set(COLUMNS) <= set(table.columns)
    assert set(table["granularity"]) == {"bytes", "bpe-512", "words"}
    grid = set(log_offsets(256).tolist())
    for _, rows in table.group_by("granularity"):
        assert set(rows["offset"]) <= grid
    assert (table["ci_low"] <= table["mi_bits"]).all() and (table["mi_bits"] <= table["ci_high"]).all()


def test_pair_and_document_counts_follow_document_lengths(result: Profile) -> None:
    docs = [json.loads(line)["text"] for line in Path(result.corpus["files"][0]).read_text().splitlines()]
    lengths = np.array([len(d.encode()) for d in docs])
    rows = result.table.filter(pl.col("granularity") == "bytes")
    for r, n_pairs, n_docs in rows.select("offset", "n_pairs", "n_docs").iter_rows():
        assert n_pairs == int(np.clip(lengths - r, 0, None).sum())
        assert n_docs == int((lengths > r).sum())


def test_facts_record_vocabulary_tokens_and_compression(result: Profile) -> None:
    g = result.summary()["granularities"]
    assert g["bytes"]["vocab_size"] == 256 and g["bytes"]["bytes_per_token"] == 1.0
    assert g["bytes"]["n_bytes"] == g["words"]["n_bytes"] == g["bpe-512"]["n_bytes"]
    assert 1.0 < g["bpe-512"]["bytes_per_token"] < g["words"]["bytes_per_token"]
    assert g["bpe-512"]["vocab_size"] <= 512


def test_text_profile_decays_with_offset(result: Profile) -> None:
    for name in ("bytes", "bpe-512"):
        mi = result.table.filter(pl.col("granularity") == name).sort("offset")["mi_bits"].to_numpy()
        assert mi[0] > 0.3 and mi[0] > 4 * mi[-1]


def test_save_and_load_round_trip(result: Profile, tmp_path: Path) -> None:
    result.save(tmp_path)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["estimator"] == depstat.DEFAULT_ESTIMATOR
    assert summary["depstat_version"] == depstat.__version__
    assert summary["sampling"]["rule"] == "whole corpus"
    assert set(summary["granularities"]) == {"bytes", "bpe-512", "words"}
    back = Profile.load(tmp_path)
    assert back.to_polars().equals(result.to_polars())
    assert back.granularities == result.granularities  # every fact back, as a GranularityFacts
    assert all("pair_list_null_from" in g and "round_trips" in g for g in summary["granularities"].values())
    assert not list(tmp_path.glob("*.tmp"))


def test_max_docs_and_max_tokens_take_whole_documents(small_corpus: Path) -> None:
    p = depstat.profile(str(small_corpus), granularities=["bytes"], max_docs=5, max_offset=16)
    assert p.granularities["bytes"].n_docs == 5
    q = depstat.profile(str(small_corpus), granularities=["bytes"], max_tokens=3000, max_offset=16)
    assert q.granularities["bytes"].n_tokens >= 3000
    assert "3000 UTF-8 bytes" in q.sampling["rule"]


def test_training_texts_stop_at_either_limit_with_the_last_document_whole() -> None:
    texts = ["ab", "é" * 3, "cd", "ef"]  # 2, 6, 2 and 2 bytes of UTF-8
    assert list(training_texts(iter(texts), None, None)) == texts
    assert list(training_texts(iter(texts), 2, None)) == texts[:2]
    assert list(training_texts(iter(texts), None, 3)) == texts[:2]  # "é" * 3 reaches 3 bytes: kept whole
    assert list(training_texts(iter(texts), None, 8)) == texts[:2]
    assert list(training_texts(iter(texts), None, 9)) == texts[:3]
    assert list(training_texts(iter(texts), 1, 100)) == texts[:1]


def test_vocabularies_are_trained_on_the_first_bytes_of_text(tmp_path: Path) -> None:
    words = [f"w{i:04d}" for i in range(400)]  # each document has words of its own
    path = tmp_path / "docs.jsonl"
    path.write_text("".join(json.dumps({"text": " ".join(words[k : k + 20])}) + "\n" for k in range(0, 400, 20)))
    doc_bytes = len(" ".join(words[:20]).encode())
    full = depstat.profile(str(path), granularities=["words"], max_offset=4, train_bytes=None)
    cut = depstat.profile(str(path), granularities=["words"], max_offset=4, train_bytes=2 * doc_bytes)
    assert full.granularities["words"].vocab_size == 401  # every word and [UNK]
    assert cut.granularities["words"].vocab_size == 41  # two documents' words (those of smallest key)
    assert f"until {2 * doc_bytes:,} bytes of text" in cut.sampling["tokenizer_training"]
    assert "whole sample" in depstat.profile(
        str(path), granularities=["words"], max_offset=4, train_docs=None, train_bytes=None,
    ).sampling["tokenizer_training"]


def test_cli_reads_train_bytes_as_a_size_or_all(small_corpus: Path, tmp_path: Path) -> None:
    rules = {}
    for value in ("all", "1K"):
        out = tmp_path / value
        assert main(["profile", str(small_corpus), "-g", "words", "--max-offset", "4", "--train-bytes", value,
                     "--no-cache", "--out", str(out)]) == 0
        rules[value] = json.loads((out / "summary.json").read_text())["sampling"]["tokenizer_training"]
    assert rules["all"].endswith("at most 20000 documents")
    assert rules["1K"].endswith("at most 20000 documents; until 1,024 bytes of text (the last document whole)")


def test_pre_tokenized_stream_with_eos(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    docs = [rng.integers(0, 50, 300) for _ in range(30)]
    stream = np.concatenate([np.r_[d, 50] for d in docs]).astype(np.uint16)
    stream.tofile(tmp_path / "train.bin")
    p = depstat.profile(str(tmp_path / "train.bin"), eos_id=50, bin_dtype="uint16", max_offset=64, vocab_size=51)
    facts = p.granularities["ids"]
    assert facts.n_docs == 30 and facts.n_tokens == 9000 and facts.vocab_size == 51
    assert p.table["mi_bits"].abs().max() < 0.05  # independent draws


def test_single_document_uses_token_blocks() -> None:
    """One long document of a two-state chain: block jackknife, and the exact MI recovered."""
    P = np.array([[0.9, 0.1], [0.2, 0.8]])
    chain = MarkovChain(P=P, pi=stationary(P))
    stream = chain.sample(1, 200_000, seed=3)
    table, skipped = mi_profile(stream, [1, 3, 10, 1000])
    assert not skipped
    truth = chain.exact_mi([1, 3, 10, 1000])
    np.testing.assert_allclose(table["mi_bits"].to_numpy(), truth, atol=0.005)
    assert (table["ci_low"] <= truth + 0.002).all() and (table["ci_high"] >= truth - 0.002).all()


def test_one_symbol_has_zero_information() -> None:
    table, _ = mi_profile(TokenStream("flat", np.zeros(2000, int), [1000, 1000], 1), [1, 10])
    assert table["mi_bits"].to_list() == [0.0, 0.0]


def test_offsets_longer_than_every_document_are_skipped_and_reported() -> None:
    stream = TokenStream("s", np.arange(3000) % 5, [100] * 30, 5)
    table, skipped = mi_profile(stream, [1, 50, 99, 100, 500])
    assert table["offset"].to_list() == [1, 50]
    assert skipped == [99, 100, 500]  # 99 leaves 30 pairs, under the minimum of 64


def test_top_id_of_the_vocabulary_is_counted() -> None:
    stream = TokenStream("top", np.tile([0, 999], 500), [1000], 1000)
    table, _ = mi_profile(stream, [1, 2], estimator="plugin")
    assert table["mi_bits"].to_list() == pytest.approx([1.0, 1.0], abs=0.01)


def test_cli_table_and_json(small_corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    rc = main(["profile", str(small_corpus), "-g", "bytes", "--max-offset", "64", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert rc == 0 and "I(r) in bits" in out and "bytes" in out
    assert pl.read_parquet(tmp_path / "profile.parquet").height > 5
    rc = main(["profile", str(small_corpus), "-g", "bytes", "--max-offset", "8", "--format", "json"])
    summary = json.loads(capsys.readouterr().out)
    assert rc == 0 and summary["granularities"]["bytes"]["vocab_size"] == 256


def test_pair_memory_counts_in_groups_with_the_same_profile(
    small_corpus: Path, capsys: pytest.CaptureFixture,
) -> None:
    """``--pair-memory`` caps the pair buffers: more passes over the stream, the same profile."""
    opts = dict(granularities=["bpe-512", "words"], max_offset=64)
    whole = depstat.profile(str(small_corpus), **opts)
    grouped = depstat.profile(str(small_corpus), pair_memory=4096, **opts)
    assert grouped.run["engine"] == {"name": "local", "pair_memory": 4096}
    a, b = (p.table.sort("granularity", "offset") for p in (whole, grouped))
    assert a["n_pairs"].to_list() == b["n_pairs"].to_list()
    for column in ("mi_bits", "ci_low", "ci_high"):
        np.testing.assert_allclose(b[column].to_numpy(), a[column].to_numpy(), rtol=1e-9, atol=1e-12)
    rc = main(["profile", str(small_corpus), "-g", "words", "--max-offset", "8", "--pair-memory", "4K",
               "--format", "json"])
    assert rc == 0 and json.loads(capsys.readouterr().out)["granularities"]["words"]["vocab_size"] > 256
    with pytest.raises(SystemExit):
        main(["profile", str(small_corpus), "--pair-memory", "lots"])
    assert "expected a size such as 512M" in capsys.readouterr().err
    with pytest.raises(depstat.DepstatError, match="--pair-memory caps the local counter"):
        depstat.profile(str(small_corpus), workers=2, pair_memory=4096, **opts)
    with pytest.raises(depstat.DepstatError, match="--shard-tokens sizes the Dask engine"):
        depstat.profile(str(small_corpus), shard_tokens=1 << 20, **opts)


def test_spooled_streams_and_capped_counters_are_file_backed() -> None:
    """With --pair-memory the stream and the relabelled copy live in memory-mapped temporary files."""
    texts = [f"line {i} " * (i % 5 + 1) for i in range(500)]
    held, spooled = (encode_stream("bytes", iter(texts), None, spool=s) for s in (False, True))
    np.testing.assert_array_equal(spooled.tokens, held.tokens)
    np.testing.assert_array_equal(spooled.doc_lengths, held.doc_lengths)

    def mapped(a: np.ndarray) -> bool:
        while a is not None and not isinstance(a, np.memmap):
            a = a.base
        return a is not None

    assert mapped(spooled.tokens) and not mapped(held.tokens)
    counter = PairCounter(spooled, pair_memory=1 << 20)
    assert mapped(counter.tokens) and not mapped(PairCounter(held).tokens)
    assert encode_stream("bytes", iter([]), None, spool=True).n_tokens == 0
    # pre-tokenized ids: spooled in 32 bits until the vocabulary is known, then narrowed
    rng = np.random.default_rng(1)
    docs = [Document("ids.jsonl", i + 1, ids=rng.integers(0, 700, 50 + i)) for i in range(40)]
    for vocab in (None, 700):
        held, spooled = (ids_stream(iter(docs), vocab, spool=s) for s in (False, True))
        assert mapped(spooled.tokens) and spooled.tokens.dtype == held.tokens.dtype == np.uint16
        np.testing.assert_array_equal(spooled.tokens, held.tokens)
        np.testing.assert_array_equal(spooled.doc_lengths, held.doc_lengths)
        assert spooled.vocab_size == held.vocab_size
    bad = docs[:3] + [Document("ids.jsonl", 4, ids=np.array([3, -1]))]
    for spool in (False, True):
        with pytest.raises(depstat.DepstatError, match="ids.jsonl:4: token id -1 is outside"):
            ids_stream(iter(bad), None, spool=spool)


BAD_INPUTS = {
    "missing file": (lambda d: d / "nope.jsonl", "nope.jsonl"),
    "malformed json": (lambda d: _write(d / "bad.jsonl", '{"text": "ok"}\n{"text": oops}\n'), "bad.jsonl:2:"),
    "missing field": (lambda d: _write(d / "f.jsonl", '{"body": "hello there"}\n'), "f.jsonl:1:"),
    "non-utf8": (lambda d: _write_bytes(d / "u.jsonl", b'{"text": "ok"}\n{"text": "\xff\xfe"}\n'), "u.jsonl:2:"),
    "empty corpus": (lambda d: _write(d / "e.jsonl", '{"text": ""}\n'), "no non-empty documents"),
    "too short": (lambda d: _write(d / "s.jsonl", '{"text": "ab"}\n'),
                  "needs 64, and the smallest, r = 1, has 1 (1 document, the longest 2 tokens)"),
    "unknown extension": (lambda d: _write(d / "notes.log", "some text"), "unknown file extension '.log'"),
    "csv without the column": (lambda d: _write(d / "k.csv", "book,verse\nGen,In the beginning\n"),
                               "no column 'text' (columns: book, verse)"),
    "bin without dtype": (lambda d: _write_bytes(d / "t.bin", bytes(range(200))), "--bin-dtype"),
    "directory with other files": (lambda d: (_write(d / "c" / "a.md", "# a"), _write_bytes(d / "c" / "b.png", b"x"))[0]
                                   .parent, "directory holds 1 file of no supported extension: b.png"),
}


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _write_bytes(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_input_gives_one_line_error(case: str, tmp_path: Path) -> None:
    make, expected = BAD_INPUTS[case]
    path = make(tmp_path)
    proc = subprocess.run(
        [sys.executable, "-m", "depstat.cli", "profile", str(path), "-g", "bytes", "--max-offset", "64"],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 2
    err = proc.stderr.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    assert err.startswith("depstat: error:") and expected in err, err


def test_out_of_vocabulary_ids_name_the_record(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    _write(tmp_path / "ids.jsonl", '{"input_ids": [1, 2, 3]}\n{"input_ids": [4, 70000]}\n')
    rc = main(["profile", str(tmp_path / "ids.jsonl"), "--vocab-size", "50000", "--max-offset", "1"])
    err = capsys.readouterr().err
    assert rc == 2 and "ids.jsonl:2:" in err and "70000" in err


def test_skip_bad_counts_what_it_skipped(tmp_path: Path) -> None:
    good = '{"text": "' + "abcdefgh " * 40 + '"}\n'
    path = _write(tmp_path / "m.jsonl", good * 20 + "{broken\n" + good * 20)
    p = depstat.profile(str(path), granularities=["bytes"], max_offset=32, skip_bad=True)
    assert p.corpus["skipped_bad_records"] == 1 and p.granularities["bytes"].n_docs == 40


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"granularities": ["bpe-huge"]}, "unknown granularity"),
        ({"granularities": ["bpe-0"]}, "needs more than 256 tokens"),
        ({"granularities": ["bpe-256"]}, "needs more than 256 tokens"),
        ({"estimator": "magic"}, "unknown estimator"),
        ({"max_offset": 0}, "--max-offset"),
        ({"n_blocks": 1}, "2 to 32,767 blocks"),
        ({"n_blocks": 40_000}, "2 to 32,767 blocks"),
        ({"train_docs": 0}, "--train-docs must be positive"),
        ({"train_bytes": 0}, "--train-bytes must be positive"),
    ],
)
def test_bad_parameters_are_rejected_at_the_edge(small_corpus: Path, kwargs: dict, message: str) -> None:
    with pytest.raises(depstat.DepstatError, match=message):
        depstat.profile(str(small_corpus), **kwargs)


def test_a_users_tokenizer_json_becomes_a_granularity(small_corpus: Path, tmp_path: Path) -> None:
    from depstat.tokenize.granularity import train_bpe

    texts = [json.loads(line)["text"] for line in small_corpus.read_text().splitlines()]
    model_dir = tmp_path / "my-model"
    model_dir.mkdir()
    train_bpe(texts, 600).save(str(model_dir / "tokenizer.json"))
    p = depstat.profile(str(small_corpus), granularities=[], tokenizers=[str(model_dir / "tokenizer.json")], max_offset=64)
    facts = p.granularities["my-model"]
    assert facts.tokenizer.endswith("tokenizer.json") and facts.vocab_size <= 600
    assert set(p.table["granularity"]) == {"my-model"}
    with pytest.raises(depstat.DepstatError, match="not a valid tokenizer.json"):
        (tmp_path / "bad.json").write_text("{}")
        depstat.profile(str(small_corpus), granularities=[], tokenizers=[str(tmp_path / "bad.json")], max_offset=8)


def test_a_streamed_dataset_is_read_once_for_all_granularities(small_corpus: Path) -> None:
    """hf: datasets stream; profiling copies the sample once instead of re-downloading per pass."""
    from datasets import IterableDataset

    texts = [json.loads(line)["text"] for line in small_corpus.read_text().splitlines()]
    passes = []

    def rows():
        passes.append(1)
        for t in texts:
            yield {"text": t}

    corpus = depstat.Corpus.from_dataset(IterableDataset.from_generator(rows), source="hf:test/stream")
    assert corpus.streamed
    opened = len(passes)
    p = depstat.profile(corpus, granularities=["bytes", "bpe-512", "words"], max_offset=64, max_docs=20, sample="first")
    assert len(passes) - opened == 1
    assert p.granularities["bytes"].n_docs == 20
    assert p.corpus["spec"] == "hf:test/stream" and p.corpus["documents_read"] == 20
    local = depstat.profile(str(small_corpus), granularities=["bytes"], max_offset=64, max_docs=20, sample="first")
    assert p.to_polars().filter(pl.col("granularity") == "bytes").equals(local.to_polars())
    # the random sample of a stream: the first documents of its seeded shuffle, read once
    opened = len(passes)
    q = depstat.profile(corpus, granularities=["bytes"], max_offset=64, max_docs=20)
    assert len(passes) - opened == 1 and q.granularities["bytes"].n_docs == 20
    assert q.sampling["sample"] == "random" and "seeded shuffle" in q.sampling["rule"]


def test_token_id_corpus_gets_the_whole_ladder_with_its_tokenizer(tmp_path):
    """Decoded with the tokenizer that made them, ids get bytes, BPE and bytes per token; the ids
    themselves come back as the tokenizer's granularity, token for token."""
    from tests.test_corpus import climbmix_fixture

    root, tok_path, _, ids_ = climbmix_fixture(tmp_path)
    spec = str(root / "*.parquet")
    p = depstat.profile(spec, granularities=["bytes", "bpe-1k"], max_offset=16, ids_tokenizer=str(tok_path))
    assert set(p.granularities) == {"bytes", "bpe-1k", "tok"}  # "tok": the tokenizer's directory
    given = depstat.profile(spec, max_offset=16)
    assert p.granularities["tok"].n_tokens == given.granularities["ids"].n_tokens == sum(map(len, ids_))
    assert p.granularities["tok"].bytes_per_token > 1 and given.granularities["ids"].bytes_per_token is None
    mine = p.table.filter(pl.col("granularity") == "tok").sort("offset")
    theirs = given.table.filter(pl.col("granularity") == "ids").sort("offset")
    # the same ids; only the null's draws differ (they follow the documents' keys: text here, ids there)
    half_width = (theirs["ci_high"] - theirs["ci_low"]).to_numpy() / 2
    assert np.all(np.abs(mine["mi_bits"].to_numpy() - theirs["mi_bits"].to_numpy()) < half_width)


def test_an_unwritable_out_is_one_line_before_any_work(small_corpus: Path, tmp_path: Path, capsys) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    assert main(["profile", str(small_corpus), "-g", "bytes", "--out", str(blocker / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cannot write to --out" in err[0]


def test_first_run_says_it_compiles_and_the_next_loads(tmp_path: Path) -> None:
    """In a fresh Numba cache the first line on stderr announces the compilation, with the partitioned
    kernels (those of BPE granularities) in a second process: this one compiles the dense ones of bytes,
    then those of the real pairs while it waits, never the null's sweep, each named as it is done. A
    second run with the same cache compiles nothing and says nothing of it."""
    path = _write(tmp_path / "t.txt", "the cat sat on the mat, the dog sat on the log. " * 60)
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba")}
    command = [sys.executable, "-m", "depstat.cli", "profile", str(path), "-g", "bytes", "-g", "bpe-300",
               "--max-offset", "8"]
    runs = [subprocess.run(command + ["--out", str(tmp_path / f"out{i}")], env=env, capture_output=True, text=True,
                           timeout=600) for i in range(2)]
    assert [run.returncode for run in runs] == [0, 0], runs[0].stderr + runs[1].stderr
    first = runs[0].stderr.splitlines()
    assert first[0] == ("compiling depstat's kernels (first run only: later runs load them from Numba's cache), "
                        "the partitioned ones in a second process ..."), first[:3]
    compiled = [line for line in first if line.lstrip().startswith("compiled ")]
    assert any("dense_worker" in line for line in compiled), compiled
    assert not any("sweep_worker" in line for line in compiled), compiled
    assert "compil" not in runs[1].stderr, runs[1].stderr


def test_console_marks_a_vocabulary_the_trainer_could_not_fill(tmp_path: Path) -> None:
    path = _write(tmp_path / "t.jsonl", "".join(json.dumps({"text": f"the cat {i} sat on the mat. " * 20}) + "\n"
                                                for i in range(20)))
    p = depstat.profile(str(path), granularities=["bpe-4k"], max_offset=8)
    vocab = p.granularities["bpe-4k"].vocab_size
    assert vocab < 4096 and f"{vocab} (of 4096 asked: no more merges)" in render(p)


def test_every_subcommand_help_starts_with_a_description() -> None:
    from depstat.cli import build_parser

    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    assert set(commands) == {"profile", "selfsim", "recommend", "synth", "card", "report", "validate"}
    for name, sub in commands.items():
        assert sub.description and len(sub.description) > 150, name
        assert sub.format_help().split("\n\n")[1].replace("\n", " ").startswith(sub.description[:40]), name


def test_granularities_with_the_same_tokens_are_counted_once_and_named_together(tmp_path: Path) -> None:
    path = _write(tmp_path / "t.jsonl", "".join(json.dumps({"text": f"the cat {i} sat on the mat. " * 20}) + "\n"
                                                for i in range(20)))
    p = depstat.profile(str(path), granularities=["bpe-2k", "bpe-4k"], max_offset=8)
    small, large = (p.table.filter(pl.col("granularity") == g).drop("granularity") for g in ("bpe-2k", "bpe-4k"))
    assert small.equals(large) and p.granularities["bpe-4k"].same_tokens_as == "bpe-2k"
    assert "the tokens of bpe-2k: counted once" in render(p)
    assert "count bpe-4k" not in p.run["seconds"]


def test_skipped_files_are_listed_in_the_summary_and_on_the_console(tmp_path: Path) -> None:
    for i in range(3):
        _write(tmp_path / "d" / f"doc{i}.md", "the cat sat on the mat. " * 40)
    _write_bytes(tmp_path / "d" / "logo.png", b"\x89PNG")
    p = depstat.profile(str(tmp_path / "d"), granularities=["bytes"], max_offset=8, skip_bad=True)
    assert [Path(f).name for f in p.summary()["corpus"]["skipped_files"]] == ["logo.png"]
    assert "skipped 1 file of no supported extension: " in render(p)


def test_a_corpus_too_small_for_its_advice_says_so_before_it(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    lines = ["The cat sat on the mat and looked at the dog.", "A bird flew over the house, singing a song.",
             "Rain fell all day; the river rose slowly.", "She read the letter twice before she smiled."]
    path = _write(tmp_path / "tiny.jsonl", "".join(json.dumps({"text": t}) + "\n" for t in lines * 3))
    assert main(["profile", str(path), "-g", "bytes", "-g", "bpe-300", "--max-offset", "64"]) == 0
    out = capsys.readouterr().out
    note = out.index("note: your data show no decay of dependence with distance beyond their error at bpe-300")
    assert note < out.index("your data do not constrain the base")
