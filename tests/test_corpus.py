"""Tests for depstat.io.corpus: every input format round-trips and every bad input is one clear error."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard

from depstat.errors import DepstatError
from depstat.io.corpus import Corpus, Document, open_corpus
from depstat.io.formats import EXAMPLE_CORPUS, split_on_eos
from depstat.io.sampling import select

RECORDS = [{"text": "alpha beta", "id": 1}, {"text": "gamma", "id": 2}, {"text": "delta epsilon", "id": 3}]
TEXTS = [r["text"] for r in RECORDS]


def jsonl_bytes(records: list) -> bytes:
    """Records as JSON Lines bytes."""
    return "".join(json.dumps(r) + "\n" for r in records).encode()


def write(path: Path, data: bytes | str) -> str:
    """Write bytes or text to path and return it as a string."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    path.write_bytes(data)
    return str(path)


def texts(corpus: Corpus) -> list[str]:
    """The texts of all documents of a corpus."""
    return [doc.text for doc in corpus]


def ids(corpus: Corpus) -> list[list[int]]:
    """The token ids of all documents of a corpus, as lists."""
    docs = list(corpus)
    assert all(doc.ids.dtype == np.int64 and doc.text is None for doc in docs)
    return [doc.ids.tolist() for doc in docs]


def error_of(spec: str, **kwargs) -> str:
    """The message of the DepstatError raised while opening and reading spec."""
    with pytest.raises(DepstatError) as info:
        list(open_corpus(spec, **kwargs))
    return str(info.value)


# -- round trips --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, compress",
    [
        ("c.jsonl", lambda b: b),
        ("c.jsonl.gz", gzip.compress),
        ("c.jsonl.zst", lambda b: zstandard.ZstdCompressor().compress(b)),
    ],
)
def test_jsonl_formats_round_trip(tmp_path, name, compress):
    path = write(tmp_path / name, compress(jsonl_bytes(RECORDS)))
    corpus = open_corpus(path)
    docs = list(corpus)
    assert corpus.kind == "text"
    assert [(d.source, d.line, d.text, d.ids) for d in docs] == [(path, i + 1, t, None) for i, t in enumerate(TEXTS)]
    assert corpus.stats.documents == 3 and corpus.stats.files == [path]


def test_multi_frame_zstd_is_read_completely(tmp_path):
    cctx = zstandard.ZstdCompressor()
    data = cctx.compress(jsonl_bytes(RECORDS[:1])) + cctx.compress(jsonl_bytes(RECORDS[1:]))
    assert texts(open_corpus(write(tmp_path / "m.jsonl.zst", data))) == TEXTS


def test_blank_lines_skipped_and_line_numbers_kept(tmp_path):
    data = '\n{"text": "a"}\n   \n{"text": "b"}\n\n'
    docs = list(open_corpus(write(tmp_path / "b.jsonl", data)))
    assert [(d.line, d.text) for d in docs] == [(2, "a"), (4, "b")]


def test_custom_text_field_and_bom(tmp_path):
    path = write(tmp_path / "c.jsonl", b"\xef\xbb\xbf" + jsonl_bytes([{"body": "x"}, {"body": "y"}]))
    assert texts(open_corpus(path, text_field="body")) == ["x", "y"]


def test_empty_texts_are_counted_not_yielded(tmp_path):
    corpus = open_corpus(write(tmp_path / "e.jsonl", jsonl_bytes([{"text": ""}, {"text": "a"}])))
    assert texts(corpus) == ["a"]
    assert corpus.stats.empty == 1 and corpus.stats.documents == 1


def test_corpus_is_reiterable(tmp_path):
    corpus = open_corpus(write(tmp_path / "r.jsonl.gz", gzip.compress(jsonl_bytes(RECORDS))))
    first = [(d.line, d.text) for d in corpus]
    second = [(d.line, d.text) for d in corpus]
    assert first == second == [(1, "alpha beta"), (2, "gamma"), (3, "delta epsilon")]
    assert corpus.stats.documents == 3


def test_stats_cover_partial_iteration(tmp_path):
    corpus = open_corpus(write(tmp_path / "p.jsonl", jsonl_bytes(RECORDS)))
    iterator = iter(corpus)
    next(iterator)
    assert corpus.stats.documents == 1


def test_ids_jsonl_detected_from_first_record(tmp_path):
    path = write(tmp_path / "t.jsonl", jsonl_bytes([{"input_ids": [5, 6, 7]}, {"input_ids": [8]}]))
    corpus = open_corpus(path)
    assert corpus.kind == "ids"
    assert ids(corpus) == [[5, 6, 7], [8]]
    assert corpus.describe()["ids_field"] == "input_ids"


def test_ids_fields_as_datasets_ship_them_are_detected(tmp_path):
    """ClimbMix's shape: GPT-2 ids under 'tokens', beside a count and a cluster id (parquet and jsonl)."""
    rows = {"tokens": [[1, 2, 3], [4]], "token_count": [3, 1], "cluster_id": [0, 7]}
    pq.write_table(pa.table(rows), str(tmp_path / "c.parquet"))
    corpus = open_corpus(str(tmp_path / "c.parquet"))
    assert corpus.kind == "ids" and ids(corpus) == [[1, 2, 3], [4]] and corpus.describe()["ids_field"] == "tokens"
    path = write(tmp_path / "c.jsonl", jsonl_bytes([{"token_ids": [9, 8], "ids": [0]}]))
    corpus = open_corpus(path)
    assert ids(corpus) == [[9, 8]] and corpus.describe()["ids_field"] == "token_ids"  # the first known name wins


def test_ids_jsonl_with_explicit_field(tmp_path):
    path = write(tmp_path / "t.jsonl", jsonl_bytes([{"text": "t", "toks": [1, 2]}, {"toks": []}, {"toks": [3]}]))
    corpus = open_corpus(path, ids_field="toks")
    assert ids(corpus) == [[1, 2], [3]]
    assert [d.line for d in corpus] == [1, 3]
    assert corpus.stats.empty == 1


def test_parquet_text_and_ids(tmp_path):
    text_path = str(tmp_path / "t.parquet")
    pq.write_table(pa.table({"text": TEXTS, "n": [1, 2, 3]}), text_path, row_group_size=2)
    corpus = open_corpus(text_path)
    assert [(d.line, d.text) for d in corpus] == [(1, "alpha beta"), (2, "gamma"), (3, "delta epsilon")]

    ids_path = str(tmp_path / "i.parquet")
    pq.write_table(pa.table({"input_ids": [[1, 2], [3, 4, 5]]}), ids_path)
    assert ids(open_corpus(ids_path)) == [[1, 2], [3, 4, 5]]


def test_text_directory_recursive_sorted(tmp_path):
    write(tmp_path / "d" / "b.md", "# bee")
    write(tmp_path / "d" / "a.txt", "ay")
    write(tmp_path / "d" / "sub" / "c.py", "print(1)\n")
    write(tmp_path / "d" / "sub" / "d.rst", "dee")
    write(tmp_path / "d" / ".hidden" / "x.txt", "hidden")
    corpus = open_corpus(str(tmp_path / "d"))
    docs = list(corpus)
    assert [Path(d.source).name for d in docs] == ["a.txt", "b.md", "c.py", "d.rst"]
    assert [d.text for d in docs] == ["ay", "# bee", "print(1)\n", "dee"]
    assert all(d.line == 1 for d in docs)
    assert corpus.describe()["file_count"] == 4


def test_single_file_without_extension_read_as_text_other_extensions_refused(tmp_path):
    path = write(tmp_path / "fortunes", "some text")
    assert texts(open_corpus(path)) == ["some text"]
    path = write(tmp_path / "notes.log", "some log text")
    assert error_of(path) == (f"{path}: unknown file extension '.log' (supported: .jsonl, .jsonl.gz, .jsonl.zst, "
                              ".parquet, .npy, .bin, .csv, .tsv, .txt, .md, .rst, .py: if it is plain text, name it .txt)")


def test_directory_files_of_other_extensions_are_an_error_or_skipped_and_listed(tmp_path):
    write(tmp_path / "d" / "a.md", "# ay")
    write(tmp_path / "d" / "b.png", b"\x89PNG")
    write(tmp_path / "d" / "sub" / "c.log", "log")
    message = error_of(str(tmp_path / "d"))
    assert message.startswith(f"{tmp_path / 'd'}: directory holds 2 files of no supported extension: b.png, sub/c.log")
    assert "--skip-bad" in message
    corpus = open_corpus(str(tmp_path / "d"), skip_bad=True)
    assert texts(corpus) == ["# ay"]
    assert [Path(p).name for p in corpus.stats.skipped_files] == ["b.png", "c.log"]


def test_csv_and_tsv_read_by_their_text_column(tmp_path):
    path = write(tmp_path / "kjv.csv", 'book,text\nGen,"In the beginning, God"\nExod,"Now these\nare the names"\n')
    assert texts(open_corpus(path)) == ["In the beginning, God", "Now these\nare the names"]
    assert [d.line for d in open_corpus(path)] == [1, 2]
    assert texts(open_corpus(path, text_field="book", group_field="text")) == ["Gen", "Exod"]
    tsv = write(tmp_path / "t.tsv", "id\tbody\n1\thello\n")
    assert texts(open_corpus(tsv, text_field="body")) == ["hello"]
    assert error_of(tsv) == f"{tsv}: no column 'text' (columns: id, body) (choose the column with --text-field)"


def test_glob_sorted(tmp_path):
    write(tmp_path / "g" / "b.jsonl", jsonl_bytes([{"text": "b"}]))
    write(tmp_path / "g" / "a.jsonl", jsonl_bytes([{"text": "a"}]))
    write(tmp_path / "g" / "c.txt", "not matched")
    corpus = open_corpus(str(tmp_path / "g" / "*.jsonl"))
    assert texts(corpus) == ["a", "b"]
    assert [Path(f).name for f in corpus.files] == ["a.jsonl", "b.jsonl"]


def test_npy_with_eos(tmp_path):
    path = str(tmp_path / "s.npy")
    np.save(path, np.array([0, 1, 2, 0, 0, 3, 4, 0, 5], dtype=np.int32))
    corpus = open_corpus(path, eos_id=0)
    docs = list(corpus)
    assert corpus.kind == "ids"
    assert [(d.line, d.ids.tolist()) for d in docs] == [(1, [1, 2]), (2, [3, 4]), (3, [5])]
    assert corpus.describe()["stream_documents"].startswith("runs between eos")


def test_npy_without_eos_is_one_document(tmp_path):
    path = str(tmp_path / "s.npy")
    np.save(path, np.array([3, 1, 2], dtype=np.uint16))
    corpus = open_corpus(path)
    assert ids(corpus) == [[3, 1, 2]]
    assert corpus.describe()["stream_documents"] == "whole stream is one document"
    assert ids(open_corpus(path, eos_id=99)) == [[3, 1, 2]]


@pytest.mark.parametrize("dtype", ["uint16", "uint32"])
def test_bin_with_eos(tmp_path, dtype):
    path = str(tmp_path / "train.bin")
    np.array([7, 8, 50256, 9, 70000 % np.iinfo(dtype).max, 50256], dtype=dtype).tofile(path)
    assert ids(open_corpus(path, eos_id=50256, bin_dtype=dtype)) == [[7, 8], [9, 70000 % np.iinfo(dtype).max]]


def test_split_on_eos_across_chunks():
    tokens = np.array([1, 2, 3, 9, 4, 5, 6, 7, 8, 9, 9, 10])
    runs = [run.tolist() for run in split_on_eos(tokens, 9, chunk_tokens=3)]
    assert runs == [[1, 2, 3], [4, 5, 6, 7, 8], [10]]


def test_saved_dataset_and_datasetdict(tmp_path):
    datasets = pytest.importorskip("datasets")
    ds = datasets.Dataset.from_dict({"text": ["one", "", "three"], "meta": [1, 2, 3]})
    ds.save_to_disk(str(tmp_path / "ds"))
    corpus = open_corpus(str(tmp_path / "ds"))
    assert [(d.line, d.text) for d in corpus] == [(1, "one"), (3, "three")]
    assert corpus.stats.empty == 1 and corpus.describe()["formats"] == ["datasets"]

    dd = datasets.DatasetDict(
        train=datasets.Dataset.from_dict({"input_ids": [[1, 2], [3]]}),
        validation=datasets.Dataset.from_dict({"input_ids": [[4]]}),
    )
    dd.save_to_disk(str(tmp_path / "dd"))
    assert ids(open_corpus(str(tmp_path / "dd"))) == [[1, 2], [3]]
    assert ids(open_corpus(str(tmp_path / "dd"), hf_split="validation")) == [[4]]
    assert "no split 'test' (splits: train, validation)" in error_of(str(tmp_path / "dd"), hf_split="test")


def test_hf_row_iteration_with_dataset_and_iterable_dataset():
    datasets = pytest.importorskip("datasets")
    ds = datasets.Dataset.from_dict({"text": ["a", "b", None], "x": [1, 2, 3]})
    for source in (ds, ds.to_iterable_dataset()):
        corpus = Corpus.from_dataset(source, "hf:me/data", skip_bad=True)
        docs = list(corpus)
        assert [(d.source, d.line, d.text) for d in docs] == [("hf:me/data", 1, "a"), ("hf:me/data", 2, "b")]
        assert corpus.stats.skipped_reasons == {"null value": 1}
        assert [d.text for d in corpus] == ["a", "b"]
    with pytest.raises(DepstatError, match=r"^hf:me/data:3: field 'text' is null"):
        list(Corpus.from_dataset(ds, "hf:me/data"))


def test_plain_list_of_rows_and_ids_detection():
    corpus = Corpus.from_dataset([{"input_ids": [1, 2]}, {"input_ids": [3]}], "rows")
    assert corpus.kind == "ids" and ids(corpus) == [[1, 2], [3]]


def test_hf_load_failure_is_one_line(monkeypatch):
    datasets = pytest.importorskip("datasets")
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    message = error_of("hf:nobody/no-such-dataset")
    assert message.startswith("hf:nobody/no-such-dataset: could not load the dataset:")
    assert "save_to_disk" in message and "\n" not in message


# -- bad input ----------------------------------------------------------------------------------


def test_malformed_json_names_file_and_line(tmp_path):
    path = write(tmp_path / "bad.jsonl", '{"text": "a"}\n{"text": "b"}\n{"text": "c" "d"}\n')
    message = error_of(path)
    assert message.startswith(f"{path}:3: not valid JSON (Expecting ',' delimiter")
    assert "--skip-bad" in message


def test_malformed_json_in_compressed_file(tmp_path):
    path = write(tmp_path / "bad.jsonl.gz", gzip.compress(b'{"text": "a"}\n{oops\n'))
    assert error_of(path).startswith(f"{path}:2: not valid JSON")


def test_missing_field_lists_keys(tmp_path):
    path = write(tmp_path / "m.jsonl", jsonl_bytes([{"text": "a"}, {"body": "b", "id": 2}]))
    message = error_of(path)
    assert message.startswith(f"{path}:2: record has no field 'text' (fields: body, id)")
    assert "--text-field" in message


def test_record_not_object_and_field_not_string(tmp_path):
    path = write(tmp_path / "o.jsonl", '{"text": "a"}\n[1, 2]\n')
    assert error_of(path) .startswith(f"{path}:2: record is an array, expected a JSON object")
    path = write(tmp_path / "s.jsonl", '{"text": 5}\n')
    assert error_of(path).startswith(f"{path}:1: field 'text' is a number, expected a string")


def test_non_utf8_jsonl_line(tmp_path):
    path = write(tmp_path / "u.jsonl", b'{"text": "a"}\n{"text": "caf\xe9"}\n')
    message = error_of(path)
    assert message.startswith(f"{path}:2: not valid UTF-8 (byte 0xe9")
    assert "--skip-bad" in message


def test_non_utf8_text_file_names_offset(tmp_path):
    path = write(tmp_path / "t.txt", b"line one\nline \xff two\n")
    assert error_of(path).startswith(f"{path}:2: not valid UTF-8 (byte 0xff at byte offset 14)")
    corpus = open_corpus(path, skip_bad=True)
    assert list(corpus) == [] and corpus.stats.skipped_reasons == {"non-UTF-8": 1}


@pytest.mark.parametrize(
    "value, expected",
    [
        ('"1 2 3"', "field 'input_ids' is a string, expected a list of token ids"),
        ("[1, 2.5]", "field 'input_ids' is not a flat list of integers"),
        ('[1, "a"]', "field 'input_ids' is not a flat list of integers"),
        ("[1, -4]", "field 'input_ids' has a negative token id (-4)"),
    ],
)
def test_bad_token_ids(tmp_path, value, expected):
    path = write(tmp_path / "i.jsonl", '{"input_ids": [1]}\n{"input_ids": ' + value + "}\n")
    assert error_of(path).startswith(f"{path}:2: {expected}")


def test_parquet_missing_column_and_null(tmp_path):
    path = str(tmp_path / "t.parquet")
    pq.write_table(pa.table({"body": ["a", None, "c"], "id": [1, 2, 3]}), path)
    message = error_of(path)
    assert message.startswith(f"{path}: no column 'text' (columns: body, id)") and "--text-field" in message
    assert error_of(path, text_field="body").startswith(f"{path}:2: field 'body' is null")
    corpus = open_corpus(path, text_field="body", skip_bad=True)
    assert [(d.line, d.text) for d in corpus] == [(1, "a"), (3, "c")]
    assert corpus.stats.skipped_reasons == {"null value": 1}


def test_corrupt_parquet(tmp_path):
    path = write(tmp_path / "x.parquet", b"not parquet at all")
    assert error_of(path).startswith(f"{path}: not a readable Parquet file")


def test_truncated_gzip(tmp_path):
    data = gzip.compress(jsonl_bytes(RECORDS * 50))
    path = write(tmp_path / "t.jsonl.gz", data[: len(data) // 2])
    message = error_of(path)
    assert message.startswith(f"{path}:") and "truncated or corrupt" in message


def test_skip_bad_counts_reasons(tmp_path):
    lines = [
        '{"text": "good"}',
        "{broken",
        "[1]",
        '{"other": 1}',
        '{"text": null}',
        '{"text": 3}',
        '{"text": ""}',
        '{"text": "also good"}',
    ]
    data = "\n".join(lines).encode() + b'\n{"text": "\xff"}\n'
    corpus = open_corpus(write(tmp_path / "s.jsonl", data), skip_bad=True)
    assert [(d.line, d.text) for d in corpus] == [(1, "good"), (8, "also good")]
    assert corpus.stats.skipped == 6 and corpus.stats.empty == 1 and corpus.stats.documents == 2
    assert corpus.stats.skipped_reasons == {
        "invalid JSON": 1,
        "not an object": 1,
        "missing field 'text'": 1,
        "null value": 1,
        "not a string": 1,
        "non-UTF-8": 1,
    }


def test_mixed_kinds_rejected(tmp_path):
    write(tmp_path / "m" / "a.txt", "text")
    np.save(tmp_path / "m" / "b.npy", np.array([1, 2]))
    message = error_of(str(tmp_path / "m"))
    assert "mixes plain-text and token-id inputs" in message and "a.txt" in message and "b.npy" in message


def test_mixed_jsonl_kinds_rejected(tmp_path):
    write(tmp_path / "m" / "a.jsonl", jsonl_bytes([{"text": "x"}]))
    write(tmp_path / "m" / "b.jsonl", jsonl_bytes([{"input_ids": [1]}]))
    assert "mixes plain-text and token-id inputs" in error_of(str(tmp_path / "m"))


def test_ids_field_on_plain_text_rejected(tmp_path):
    path = write(tmp_path / "a.txt", "text")
    assert "--ids-field 'toks' was given but the input is plain text" in error_of(path, ids_field="toks")


def test_missing_path_and_empty_glob(tmp_path):
    missing = str(tmp_path / "nope.jsonl")
    assert error_of(missing) == f"{missing}: no such file or directory (check the path)"
    pattern = str(tmp_path / "*.jsonl")
    assert error_of(pattern).startswith(f"{pattern}: glob pattern matched nothing")


def test_glob_and_directory_without_supported_files(tmp_path):
    write(tmp_path / "d" / "a.log", "x")
    assert "holds no supported files (found 1 other files, e.g. a.log)" in error_of(str(tmp_path / "d" / "*"))
    assert "directory holds no supported files" in error_of(str(tmp_path / "d"))


def test_unknown_binary_file_and_json_rejected(tmp_path):
    path = write(tmp_path / "blob.dat", b"\x00\x01\xff\xfe")
    assert error_of(path).startswith(f"{path}: unknown file extension '.dat', and not UTF-8 text")
    path = write(tmp_path / "data.json", "[]")
    assert "rename it to .jsonl" in error_of(path)


def test_bad_token_streams(tmp_path):
    two_d = str(tmp_path / "m.npy")
    np.save(two_d, np.zeros((3, 4), dtype=np.int64))
    assert error_of(two_d).startswith(f"{two_d}: is a 2-D array of shape (3, 4)")
    floats = str(tmp_path / "f.npy")
    np.save(floats, np.zeros(4, dtype=np.float32))
    assert error_of(floats).startswith(f"{floats}: has dtype float32; expected integer token ids")
    odd = write(tmp_path / "odd.bin", b"\x01\x02\x03")
    assert error_of(odd) == (f"{odd}: a raw .bin token file does not say the type of its ids (pass --bin-dtype "
                             "uint16 (nanoGPT's, vocabularies up to 65,536) or uint32)")
    assert error_of(odd, bin_dtype="uint16").startswith(f"{odd}: size 3 bytes is not a multiple of 2 (uint16)")
    negative = str(tmp_path / "n.npy")
    np.save(negative, np.array([1, 0, -3, 2]))
    assert error_of(negative, eos_id=0).startswith(f"{negative}:2: document has a negative token id (-3)")
    assert error_of(negative, bin_dtype="int8").startswith("unsupported .bin dtype 'int8'")


def test_documents_keep_source_and_line_fields():
    doc = Document("f.jsonl", 4, text="x")
    assert (doc.source, doc.line, doc.text, doc.ids) == ("f.jsonl", 4, "x", None)


def climbmix_fixture(tmp_path, n_docs: int = 60):
    """ClimbMix's shape: ids from a tokenizer trained here, cluster ids, two parquet parts, sorted by cluster."""
    from depstat.tokenize.granularity import train_bpe

    texts = [f"document {i} about topic {i % 3}: " + " ".join(f"word{(i * j) % 17}" for j in range(40))
             for i in range(n_docs)]
    tok = train_bpe(texts, 300)
    tok_path = tmp_path / "tok" / "tokenizer.json"
    tok_path.parent.mkdir()
    tok.save(str(tok_path))
    ids = [e.ids for e in tok.encode_batch(texts)]
    order = sorted(range(n_docs), key=lambda i: i % 3)  # sorted by cluster, as ClimbMix ships
    half = n_docs // 2
    for part, rows in enumerate((order[:half], order[half:])):
        pq.write_table(pa.table({"tokens": [ids[i] for i in rows], "token_count": [len(ids[i]) for i in rows],
                                 "cluster_id": [i % 3 for i in rows]}), str(tmp_path / f"part-{part}.parquet"))
    return tmp_path, tok_path, texts, ids


def test_ids_decoded_with_their_tokenizer(tmp_path):
    root, tok_path, texts, ids_ = climbmix_fixture(tmp_path)
    corpus = open_corpus(str(root / "*.parquet"), ids_tokenizer=str(tok_path))
    docs = list(corpus)
    assert corpus.kind == "text" and sorted(d.text for d in docs) == sorted(texts)
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(tok_path))
    assert sorted(e.ids for e in tok.encode_batch([d.text for d in docs])) == sorted(ids_)  # a lossless round trip
    assert corpus.describe()["ids_field"] == "tokens" and corpus.describe()["ids_decoded_with"] == str(tok_path)
    big = write(tmp_path / "big.jsonl", jsonl_bytes([{"input_ids": [1, 2]}, {"input_ids": [3, 99999]}]))
    with pytest.raises(DepstatError, match=r"big.jsonl:2: token id 99999 is outside the vocabulary"):
        list(open_corpus(big, ids_tokenizer=str(tok_path)))
    with pytest.raises(DepstatError, match="--ids-tokenizer was given but the input is text"):
        open_corpus(write(tmp_path / "t.jsonl", jsonl_bytes(RECORDS)), ids_tokenizer=str(tok_path))


class _CountingDecoder:
    """The real tokenizer, counting the documents it is asked to decode."""

    def __init__(self, tokenizer):
        self.tokenizer, self.decoded = tokenizer, 0

    def get_vocab_size(self) -> int:
        return self.tokenizer.get_vocab_size()

    def decode_batch(self, batch):
        self.decoded += len(batch)
        return self.tokenizer.decode_batch(batch)


def test_a_pass_over_a_sample_decodes_only_the_sample(tmp_path):
    root, tok_path, _, _ = climbmix_fixture(tmp_path)
    corpus = open_corpus(str(root / "*.parquet"), ids_tokenizer=str(tok_path))
    every = list(corpus)
    spy = corpus._decoder = _CountingDecoder(corpus._decoder)
    picked = list(corpus.selected([3, 17, 40]))
    assert [d.text for d in picked] == [every[i].text for i in (3, 17, 40)]
    assert spy.decoded == 3 and corpus.stats.documents == 3
    sample = select(corpus, max_docs=6, max_tokens=None, seed=2)
    spy.decoded = 0
    assert [d.text for d in sample.documents(corpus)] == [every[i].text for i in sample.index]
    assert spy.decoded == 6


def test_group_field_is_read_and_filters(tmp_path):
    root, _, _, _ = climbmix_fixture(tmp_path)
    corpus = open_corpus(str(root / "*.parquet"), group_field="cluster_id")
    docs = list(corpus)
    assert {d.group for d in docs} == {"0", "1", "2"} and len(docs) == 60
    one = corpus.only("1")
    assert [d.group for d in one] == ["1"] * 20 and one.describe()["group"] == "1"
    assert len(list(corpus)) == 60  # the original is unchanged
    path = write(tmp_path / "g.jsonl", jsonl_bytes([{"text": "a", "source": "web"}, {"text": "b"}]))
    with pytest.raises(DepstatError, match="record has no group field 'source'"):
        list(open_corpus(path, group_field="source"))
    listed = write(tmp_path / "l.jsonl", jsonl_bytes([{"text": "a", "source": ["web", "news"]}]))
    with pytest.raises(DepstatError, match=r"l.jsonl:1: group field 'source' is an array, expected a string or a number"):
        list(open_corpus(listed, group_field="source"))
    with pytest.raises(DepstatError, match="no column 'domain'.*--group-by"):
        open_corpus(str(root / "part-0.parquet"), group_field="domain")
    with pytest.raises(DepstatError, match="needs records with fields"):
        open_corpus(write(tmp_path / "a.txt", "plain"), group_field="source")


def test_example_names_the_bundled_corpus_unless_a_file_has_that_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    corpus = open_corpus("example")
    assert corpus.files == [str(EXAMPLE_CORPUS)] and EXAMPLE_CORPUS.is_file()
    assert next(iter(corpus)).text
    write(tmp_path / "example", "my own file")
    assert texts(open_corpus("example")) == ["my own file"]
