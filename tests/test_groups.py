"""Per-group profiles (--group-by): the sample across groups, and each group's results against its own corpus."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import depstat
from depstat.analysis.result import Settings
from depstat.cli import main
from depstat.errors import DepstatError
from depstat.groups import profile_groups, sample_counts
from depstat.io.corpus import open_corpus
from depstat.synth import arithmetic_problems, markov_text


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_a_sample_of_a_tenth_reaches_every_cluster_of_a_sorted_corpus(tmp_path):
    rows = [{"text": f"doc {c}-{i} " + "x" * (i % 7), "cluster_id": c} for c in range(4) for i in range(50)]
    corpus = open_corpus(str(_write(tmp_path / "sorted.jsonl", rows)), group_field="cluster_id")
    counts = sample_counts(corpus, 20, None, seed=0)
    assert set(counts) == {"0", "1", "2", "3"} and sum(counts.values()) == 20
    assert sample_counts(corpus, 20, None, sample="first") == {"0": 20}  # what reading order would give


@pytest.fixture(scope="module")
def mixed(tmp_path_factory) -> tuple[Path, Path]:
    """Markov text and arithmetic in one file, sorted by a ``source`` field; arithmetic also alone."""
    d = tmp_path_factory.mktemp("groups")
    arith = arithmetic_problems(80, seed=1)
    rows = ([{"text": t, "source": "markov"} for t in markov_text(80, 4096, seed=1)]
            + [{"text": t, "source": "arithmetic"} for t in arith])
    alone = _write(d / "arith.jsonl", [{"text": t} for t in arith])
    return _write(d / "mixed.jsonl", rows), alone


@pytest.mark.slow
def test_groups_are_profiled_as_their_own_corpora(mixed):
    path, alone = mixed
    options = {"granularities": ["bytes", "bpe-1k"], "max_offset": 512}
    settings = Settings(head_dim=64, train_length=512, target_length=2048)
    groups = profile_groups(open_corpus(str(path), group_field="source"), settings, **options)
    assert [g.value for g in groups.groups] == ["arithmetic", "markov"] and [g.n_docs for g in groups.groups] == [80, 80]
    by = {g.value: g for g in groups.groups}
    for g in groups.groups:  # sources of known kind: a length of their own, not self-similar, YaRN
        assert g.analysis.self_similarity.verdict == "not self-similar", g.analysis.self_similarity.reasons
        assert g.analysis.recommendation.extension.method == "yarn"
    assert by["arithmetic"].analysis.widths["bpe-1k"].kind == "characteristic"
    own = depstat.profile(str(alone), **options)  # the same documents, so the same keys and groups
    mine = by["arithmetic"].profile.table.sort("granularity", "offset")["mi_bits"].to_numpy()
    np.testing.assert_allclose(mine, own.table.sort("granularity", "offset")["mi_bits"].to_numpy(), rtol=1e-12)
    table = groups.table
    assert table["group"].to_list() == ["arithmetic", "markov"] and set(table["verdict"]) == {"not self-similar"}
    assert all(e.startswith("yarn 512 -> 2048, beta_fast ") for e in table["extension"])
    assert set(groups.profiles["group"].unique()) == {"arithmetic", "markov"}
    assert repr(groups) == "Groups('source': 2 groups, 2 analysed: arithmetic, markov)"
    page = groups._repr_html_()
    assert "<table" in page and page.count("<img") == 1 and "arithmetic" in page


@pytest.mark.slow
def test_cli_group_by_writes_every_group(mixed, tmp_path, capsys):
    path, _ = mixed
    out = tmp_path / "out"
    assert main(["profile", str(path), "--group-by", "source", "-g", "bytes", "-g", "bpe-1k", "--max-offset", "512",
                 "--train-length", "512", "--head-dim", "64", "--max-docs", "40", "--out", str(out), "--report"]) == 0
    text = capsys.readouterr().out
    assert "groups by 'source'" in text and "arithmetic" in text and "markov" in text
    summary = json.loads((out / "summary.json").read_text())
    groups = summary["groups"]
    assert groups["field"] == "source" and set(groups["groups"]) == {"arithmetic", "markov"}
    assert sum(g["n_docs"] for g in groups["groups"].values()) == 40  # the whole sample, shared out
    rows = pl.read_parquet(out / "profile.parquet")
    assert set(rows["group"].unique()) == {None, "arithmetic", "markov"} and not (out / "groups.parquet").exists()
    whole = depstat.Profile.load(out)  # the whole corpus's rows, as without --group-by
    assert whole.table.height == rows.filter(pl.col("group").is_null()).height and "group" not in whole.table.columns
    for value in ("arithmetic", "markov"):  # each group's rows are its own saved profile's
        assert rows.filter(pl.col("group") == value).drop("group").equals(
            pl.read_parquet(out / "groups" / value / "profile.parquet"))
    assert (out / "groups.png").stat().st_size > 1000
    for value in ("arithmetic", "markov"):
        assert depstat.Profile.load(out / "groups" / value).table.height > 0
    report = (out / "report.md").read_text()  # the report has the same table and figure across groups
    assert "## Groups by source" in report and "| arithmetic | " in report and "| markov | " in report
    assert "figures/groups.png" in report and (out / "figures" / "groups.png").stat().st_size > 1000
    assert "Profiles by group" in (out / "report.html").read_text()


def test_a_group_too_small_is_skipped_with_its_reason(tmp_path):
    rows = [{"text": "x" * 400, "source": "big"} for _ in range(5)] + [{"text": "tiny", "source": "small"}]
    groups = profile_groups(open_corpus(str(_write(tmp_path / "g.jsonl", rows)), group_field="source"),
                            granularities=["bytes"], max_offset=64)
    by = {g.value: g for g in groups.groups}
    assert by["big"].profile is not None and by["small"].profile is None
    assert by["small"].error.startswith("not profiled: ") and "too few token pairs" in by["small"].error
    assert groups.table.filter(pl.col("group") == "small")["note"].item() == by["small"].error


def test_a_streamed_dataset_is_read_once_and_shared_out(tmp_path):
    """A streamed dataset (as hf: gives) is copied once with its group field; the groups profile that copy."""
    import datasets

    from depstat.io.corpus import Corpus

    rows = {"text": [f"{'ab' if i < 30 else 'cd'} " * 60 + str(i) for i in range(60)],
            "cluster_id": [0] * 30 + [1] * 30}
    stream = datasets.Dataset.from_dict(rows).to_iterable_dataset(num_shards=2)
    corpus = Corpus.from_dataset(stream, "stream", group_field="cluster_id")
    assert corpus.streamed
    groups = profile_groups(corpus, granularities=["bytes"], max_offset=32, max_docs=20)
    assert sum(g.n_docs for g in groups.groups) == 20 and {g.value for g in groups.groups} == {"0", "1"}
    assert all(g.profile is not None for g in groups.groups)


def test_group_by_needs_the_field(tmp_path):
    path = _write(tmp_path / "t.jsonl", [{"text": "a b c"}])
    with pytest.raises(DepstatError, match="no group field"):
        profile_groups(open_corpus(str(path)))


@pytest.mark.slow
def test_groups_on_one_dask_cluster_equal_the_local_engine(mixed):
    pytest.importorskip("distributed")
    path, _ = mixed
    options = {"granularities": ["bytes"], "max_offset": 64, "max_docs": 60}
    local = profile_groups(open_corpus(str(path), group_field="source"), **options)
    dask = profile_groups(open_corpus(str(path), group_field="source"), workers=2, **options)
    assert [g.value for g in dask.groups] == [g.value for g in local.groups] == ["arithmetic", "markov"]
    schedulers = {g.profile.run["engine"]["scheduler"] for g in dask.groups}
    assert len(schedulers) == 1 and next(iter(schedulers)).startswith("tcp://")  # one cluster for every group
    for a, b in zip(local.groups, dask.groups):
        assert b.profile.run["engine"]["name"] == "dask" and a.profile.run["engine"]["name"] == "local"
        np.testing.assert_allclose(b.profile.table["mi_bits"].to_numpy(), a.profile.table["mi_bits"].to_numpy(),
                                   rtol=1e-9, atol=1e-12)
        assert b.analysis.self_similarity.verdict == a.analysis.self_similarity.verdict


@pytest.mark.slow
def test_clusters_of_known_kind_in_climbmix_shape_get_their_verdicts(tmp_path):
    """ClimbMix's shape (ids from a tokenizer trained here, cluster ids, two parquet parts sorted by
    cluster), decoded and profiled per cluster: arithmetic, a length fixed in characters, comes
    out not self-similar; tree text, a power law by construction, self-similar from within a few
    tokens of the ids' tokenizer, with every round-tripping granularity's tail exponent beside it."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from depstat.synth import tree_text
    from depstat.tokenize.granularity import train_bpe

    texts = {"tree": tree_text(600, seed=1), "arithmetic": arithmetic_problems(80, seed=1)}
    tok = train_bpe([t for group in texts.values() for t in group], 2048)
    tok_path = tmp_path / "tok" / "tokenizer.json"
    tok_path.parent.mkdir()
    tok.save(str(tok_path))
    rows = [(cluster, e.ids) for cluster, group in sorted(texts.items()) for e in tok.encode_batch(group)]
    half = len(rows) // 2
    for part, chunk in enumerate((rows[:half], rows[half:])):
        pq.write_table(pa.table({"tokens": [ids for _, ids in chunk], "token_count": [len(ids) for _, ids in chunk],
                                 "cluster_id": [c for c, _ in chunk]}), str(tmp_path / f"part-{part}.parquet"))
    corpus = open_corpus(str(tmp_path / "*.parquet"), ids_tokenizer=str(tok_path), group_field="cluster_id")
    groups = profile_groups(corpus, Settings(head_dim=64, train_length=1024, target_length=4096),
                            granularities=["bytes", "bpe-1k", "bpe-8k"], max_offset=1024)
    verdicts = {g.value: g.analysis.self_similarity for g in groups.groups}
    assert verdicts["tree"].verdict == "self-similar", verdicts["tree"].reasons
    assert verdicts["tree"].granularity == "tok" and verdicts["tree"].onset_tokens <= 8
    assert {e.granularity for e in verdicts["tree"].exponents} >= {"bytes", "bpe-1k", "bpe-8k", "tok"}
    assert verdicts["arithmetic"].verdict == "not self-similar", verdicts["arithmetic"].reasons
