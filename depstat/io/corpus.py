"""Corpus readers: turn a path, glob, directory or ``hf:`` name into a stream of Documents.

Supported inputs (decided from the spec at construction, so bad paths fail early):

* JSON Lines ``.jsonl``, ``.jsonl.gz``, ``.jsonl.zst``: one JSON object per line, text in
  ``text_field``; pre-tokenized when ``ids_field`` is given or when the first record lacks
  ``text_field`` but has one of ``IDS_FIELDS`` (``input_ids``, ``tokens``, ``token_ids``, ``ids``:
  the first present is used, and ``describe`` names it).
* Parquet ``.parquet``: one row per document, read in batches of one column.
* CSV ``.csv`` and TSV ``.tsv`` with a header: one row per document, text in ``text_field``.
* Plain text ``.txt``, ``.md``, ``.rst``, ``.py``: one document per file; a single file without
  an extension too, if it looks like UTF-8 text. Any other extension is refused.
* Token streams ``.npy`` (1-D integer array) and nanoGPT ``.bin`` (raw ``bin_dtype``, which
  must be given); documents are the runs between ``eos_id`` tokens, or the whole stream when
  ``eos_id`` is None.
* A directory (searched recursively, hidden entries skipped) or a glob pattern of the above;
  a file of another extension in it is an error, or skipped and listed with ``skip_bad``; a
  directory written by ``datasets`` ``save_to_disk`` is loaded with ``load_from_disk``.
* ``hf:OWNER/NAME``: a Hugging Face Hub dataset, streamed (needs network access).
* ``example``: the bundled corpus (the Python documentation's topics), where no such file exists.

Every problem with the input is raised as a one-line :class:`DepstatError` naming file and line.
"""

from __future__ import annotations

import codecs
import glob
import gzip
import io
import json
import os
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import numpy as np
import zstandard

from depstat.errors import DepstatError
from depstat.io.tokenizer_file import load_tokenizer

TEXT_EXTENSIONS = (".txt", ".md", ".rst", ".py")
FORMAT_BY_SUFFIX = {
    ".jsonl": "jsonl",
    ".jsonl.gz": "jsonl.gz",
    ".jsonl.zst": "jsonl.zst",
    ".parquet": "parquet",
    ".npy": "npy",
    ".bin": "bin",
    ".csv": "csv",
    ".tsv": "tsv",
    **{suffix: "text" for suffix in TEXT_EXTENSIONS},
}
TABLE_FORMATS = ("csv", "tsv")
JSONL_FORMATS = ("jsonl", "jsonl.gz", "jsonl.zst")
STREAM_FORMATS = ("npy", "bin")
BIN_DTYPES = ("uint16", "uint32")
DEFAULT_IDS_FIELD = "input_ids"
IDS_FIELDS = (DEFAULT_IDS_FIELD, "tokens", "token_ids", "ids")  # token-id fields as datasets ship them
SAVED_DATASET_MARKERS = ("dataset_info.json", "state.json", "dataset_dict.json")
SKIP_HINT = "fix the record or pass --skip-bad to skip bad records"
STREAM_CHUNK_TOKENS = 1 << 22
DECODE_IDS = 1 << 18  # ids decoded in one batch (--ids-tokenizer): parallel, and little held at a time
PARQUET_BATCH_ROWS = 1024
SNIFF_BYTES = 1 << 16
MAX_LISTED = 20
EXAMPLE_SPEC = "example"  # names the bundled corpus wherever no file of that name exists
EXAMPLE_CORPUS = Path(__file__).resolve().parents[1] / "data" / "python-docs.jsonl.gz"


@dataclass(frozen=True)
class Document:
    """One document: where it came from and either its text or its token ids."""

    source: str
    line: int
    text: str | None = None
    ids: np.ndarray | None = None
    group: str | None = None  # the value of the corpus's group field, when it has one


@dataclass
class ReadStats:
    """Counters filled while iterating a corpus, so the summary can report what was read."""

    files: list[str] = field(default_factory=list)
    skipped_files: list[str] = field(default_factory=list)  # of a directory or glob, unreadable by extension
    documents: int = 0
    skipped: int = 0
    skipped_reasons: dict[str, int] = field(default_factory=dict)
    empty: int = 0


class _BadRecord(Exception):
    """One unusable record: a short reason for the counters plus a message for the error."""

    def __init__(self, reason: str, message: str, hint: str = SKIP_HINT) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.hint = hint


class Corpus:
    """A re-iterable description of where documents come from; iterating yields Documents.

    Attributes: ``kind`` ("text" or "ids"), ``files`` (resolved inputs; empty for ``hf:``),
    ``stats`` (counters of the last, possibly partial, iteration) and ``ids_field`` (the
    effective token-id field once pre-tokenized records are detected).
    """

    def __init__(
        self,
        spec: str,
        *,
        text_field: str = "text",
        ids_field: str | None = None,
        eos_id: int | None = None,
        bin_dtype: str | None = None,
        skip_bad: bool = False,
        hf_split: str = "train",
        hf_config: str | None = None,
        ids_tokenizer: str | None = None,
        group_field: str | None = None,
    ) -> None:
        self._configure(spec, text_field, ids_field, eos_id, bin_dtype, skip_bad, hf_split, hf_config)
        self.group_field = group_field
        if spec.startswith("hf:"):
            self._attach_dataset(load_hf_dataset(_hf_name(spec), hf_config, hf_split), "hf")
        else:
            self.files, self.stats.skipped_files = resolve_files(spec, skip_bad)
            if len(self.files) == 1 and _is_saved_dataset(self.files[0]):
                self._split = _saved_dataset_split(self.files[0], hf_split)
                self._attach_dataset(load_saved_dataset(self.files[0], hf_split), "datasets")
            else:
                self._formats = sorted({_format_of(path) or "text" for path in self.files})
                self.kind = self._decide_files_kind()
        self._records = self.kind
        if ids_tokenizer is not None:
            self._decode_with(ids_tokenizer)
        if group_field is not None and set(self._formats) & {*STREAM_FORMATS, "text"}:
            raise DepstatError(f"--group-by '{group_field}' needs records with fields", path=spec,
                               hint="use jsonl, parquet or a dataset, whose records can carry a group field")

    @classmethod
    def from_dataset(
        cls,
        dataset: Iterable[Mapping[str, Any]],
        source: str = "dataset",
        *,
        text_field: str = "text",
        ids_field: str | None = None,
        skip_bad: bool = False,
        group_field: str | None = None,
    ) -> Corpus:
        """Wrap an already-loaded, re-iterable dataset of row dicts (e.g. a ``datasets.Dataset``)."""
        corpus = cls.__new__(cls)
        corpus._configure(source, text_field, ids_field, None, "uint16", skip_bad, "train", None)
        corpus.group_field = group_field
        corpus._attach_dataset(dataset, "dataset")
        corpus._records = corpus.kind
        return corpus

    def _decode_with(self, path: str) -> None:
        """Yield the ids decoded to text by the tokenizer that made them (a ``tokenizer.json``)."""
        if self.kind != "ids":
            raise DepstatError("--ids-tokenizer was given but the input is text", path=self.spec,
                               hint="drop --ids-tokenizer, or point at pre-tokenized files")
        self._decoder = load_tokenizer(path)
        self.ids_tokenizer = path
        self.kind = "text"

    def cache_decoding(self, cache: Any) -> None:
        """Keep decoded text in ``cache`` (a ``depstat.tokenize.cache.TokenCache``), so that the
        passes after the first read it instead of decoding again; nothing for a text corpus."""
        if self._decoder is not None:
            self._decode_cache, self._decoder_key = cache, cache.decoder_key(self._decoder)

    def _decoded(self, docs: Iterator[Document], keep: bool) -> Iterator[Document]:
        """Token-id documents as the text their tokenizer decodes them to, DECODE_IDS ids at a time
        (``decode_batch`` spreads a batch over the ``tokenizers`` thread pool), each batch from
        or (with ``keep``) into the cache of decoded text when there is one."""
        batch: list[Document] = []
        n_ids = 0
        for doc in docs:
            top = int(doc.ids.max()) if doc.ids.size else -1
            if top >= self._decoder.get_vocab_size():
                raise DepstatError(
                    f"token id {top} is outside the vocabulary of --ids-tokenizer ({self._decoder.get_vocab_size()} ids)",
                    path=doc.source, line=doc.line, hint="pass the tokenizer that made these ids")
            batch.append(doc)
            n_ids += doc.ids.size
            if n_ids >= DECODE_IDS:
                yield from self._decode(batch, keep)
                batch, n_ids = [], 0
        yield from self._decode(batch, keep)

    def _decode(self, batch: list[Document], keep: bool) -> Iterator[Document]:
        """One batch decoded (or read from the cache of decoded text), in order."""
        if not batch:
            return

        def decode() -> list[str]:
            return self._decoder.decode_batch([d.ids.tolist() for d in batch])

        cache = self._decode_cache if keep else None
        texts = cache.decoded(self._decoder_key, [d.ids for d in batch], decode) if cache is not None else decode()
        for doc, text in zip(batch, texts, strict=True):
            yield Document(doc.source, doc.line, text=text, group=doc.group)

    def only(self, group: str) -> Corpus:
        """The same corpus, yielding only the documents whose group field has the value ``group``."""
        if self.group_field is None:
            raise DepstatError("this corpus has no group field", hint="open it with group_field (--group-by)")
        return self._copy(group=group)

    def _copy(self, **changes: Any) -> Corpus:
        """A shallow copy with some attributes changed and fresh counters."""
        copy = object.__new__(Corpus)
        copy.__dict__.update(self.__dict__, stats=ReadStats(skipped_files=self.stats.skipped_files), **changes)
        return copy

    def _configure(
        self,
        spec: str,
        text_field: str,
        ids_field: str | None,
        eos_id: int | None,
        bin_dtype: str | None,
        skip_bad: bool,
        hf_split: str,
        hf_config: str | None,
    ) -> None:
        """Store and check the reading options shared by every kind of source."""
        if bin_dtype is not None and bin_dtype not in BIN_DTYPES:
            raise DepstatError(f"unsupported .bin dtype '{bin_dtype}'", hint="use uint16 or uint32")
        if eos_id is not None and (isinstance(eos_id, bool) or not isinstance(eos_id, (int, np.integer)) or eos_id < 0):
            raise DepstatError(f"eos id must be a non-negative integer, got {eos_id!r}")
        self.spec = spec
        self.text_field = text_field
        self.ids_field = ids_field
        self.eos_id = eos_id
        self.bin_dtype = bin_dtype
        self.skip_bad = skip_bad
        self.hf_split = hf_split
        self.hf_config = hf_config
        self.kind = "text"  # what iterating yields: text, or token ids
        self._records = "text"  # what the records hold (ids decoded to text are "ids" here, "text" above)
        self.ids_tokenizer: str | None = None
        self._decoder = None
        self._decode_cache: Any = None  # a TokenCache of decoded text (``cache_decoding``)
        self._decoder_key = ""
        self.group_field: str | None = None
        self.group: str | None = None  # set by ``only``: iterate one group's documents
        self.files: list[str] = []
        self.stats = ReadStats()
        self._dataset: Iterable[Mapping[str, Any]] | None = None
        self._split: str | None = None
        self._formats: list[str] = []
        self._field = text_field

    # -- deciding what the corpus is -------------------------------------------------------

    def _pick_field(self, names: Iterable[str] | None) -> tuple[str, str]:
        """Choose (kind, field) for records with these field names (None when unknown)."""
        if self.ids_field is not None:
            return "ids", self.ids_field
        if names is not None:
            names = set(names)
            found = [f for f in IDS_FIELDS if f in names]
            if self.text_field not in names and found:
                return "ids", found[0]
        return "text", self.text_field

    def _decide_files_kind(self) -> str:
        """Work out text vs ids for every file and insist they all agree."""
        kinds: dict[str, str] = {}
        for path in self.files:
            kind, record_field = self._file_kind(path)
            if kind is not None:
                kinds.setdefault(kind, path)
                if record_field is not None:
                    self._field = record_field
        if len(kinds) > 1:
            raise DepstatError(
                f"mixes plain-text and token-id inputs (e.g. {kinds['text']} and {kinds['ids']})",
                path=self.spec,
                hint="point at text files or at pre-tokenized files, not both",
            )
        kind = next(iter(kinds), "ids" if self.ids_field is not None else "text")
        if kind == "text" and self.ids_field is not None:
            raise DepstatError(
                f"--ids-field '{self.ids_field}' was given but the input is plain text",
                path=self.spec,
                hint="drop --ids-field or point at pre-tokenized files",
            )
        if kind == "ids" and self.ids_field is None and set(self._formats) - set(STREAM_FORMATS):
            self.ids_field = self._field
        return kind

    def _file_kind(self, path: str) -> tuple[str | None, str | None]:
        """Return (kind, record field) of one file; kind None when it cannot be told (no records)."""
        fmt = _format_of(path) or "text"
        if fmt in STREAM_FORMATS:
            self._open_stream(path)
            return "ids", None
        if fmt == "text":
            return "text", None
        if fmt in TABLE_FORMATS:
            names = _table_columns(path, fmt)
            _require_column(self.text_field, names, path, "text")
            if self.group_field is not None:
                _require_column(self.group_field, names, path, "group")
            return "text", self.text_field
        if fmt == "parquet":
            names = _parquet_columns(path)
            kind, record_field = self._pick_field(names)
            _require_column(record_field, names, path, kind)
            if self.group_field is not None:
                _require_column(self.group_field, names, path, "group")
            return kind, record_field
        keys = _first_record_keys(path)
        if keys is None and self.ids_field is None:
            return None, None
        return self._pick_field(keys)

    def _attach_dataset(self, dataset: Iterable[Mapping[str, Any]], fmt: str) -> None:
        """Use a loaded dataset of row dicts as the source, deciding kind from its columns."""
        names = getattr(dataset, "column_names", None)
        if not isinstance(names, list):
            names = None
        keys = names if names is not None else _first_row_keys(dataset, self.spec)
        self.kind, self._field = self._pick_field(keys)
        if self.kind == "ids":
            self.ids_field = self._field
        if names is not None:
            _require_column(self._field, names, self.spec, self.kind)
            if self.group_field is not None:
                _require_column(self.group_field, names, self.spec, "group")
            if hasattr(dataset, "select_columns"):
                dataset = dataset.select_columns([self._field] + ([self.group_field] if self.group_field else []))
        self._dataset = dataset
        self._formats = [fmt]

    @property
    def streamed(self) -> bool:
        """True for a streaming dataset (``hf:`` or any ``datasets.IterableDataset``): every
        pass over it reads the source again, so callers that need several passes copy it."""
        from datasets import IterableDataset

        return isinstance(self._dataset, IterableDataset)

    def shuffled(self, seed: int, buffer_size: int) -> Corpus:
        """A streamed dataset read in a seeded random order: ``datasets`` shuffles its shards and
        draws rows from a buffer of ``buffer_size``, so the first documents come from across the
        dataset, not from its first shard. Other corpora are returned as they are."""
        if not self.streamed:
            return self
        return self._copy(_dataset=self._dataset.shuffle(seed=seed, buffer_size=buffer_size))

    # -- reading -------------------------------------------------------------------------------

    def __iter__(self) -> Iterator[Document]:
        """Yield every non-empty, valid document in order, refreshing ``stats`` as it goes."""
        return self.selected(None)

    def selected(self, places: Sequence[int] | None, keep_decoded: bool = True) -> Iterator[Document]:
        """The documents at ``places`` (ascending) of the reading order, every one with None: a
        fresh pass that decodes (``--ids-tokenizer``) only those, refreshing ``stats``. Decoded
        text goes to the cache (``cache_decoding``) unless ``keep_decoded`` is False (a pass
        whose batches no later pass reads)."""
        self.stats = ReadStats(skipped_files=self.stats.skipped_files)
        docs = self._kept()
        if places is not None:
            docs = _at_places(docs, places)
        for doc in self._decoded(docs, keep_decoded) if self._decoder is not None else docs:
            self.stats.documents += 1
            yield doc

    def _kept(self) -> Iterator[Document]:
        """The documents of the group asked for (all without one), empty ones left out and counted."""
        for doc in self._documents():
            if self.group is not None and doc.group != self.group:
                continue
            if _is_empty(doc):
                self.stats.empty += 1
                continue
            yield doc

    def _documents(self) -> Iterator[Document]:
        """Yield documents from every source, empty ones included."""
        if self._dataset is not None:
            source = self.files[0] if self.files else self.spec
            self.stats.files.append(source)
            yield from self._read_rows(self._dataset, source)
            return
        for path in self.files:
            self.stats.files.append(path)
            fmt = _format_of(path) or "text"
            if fmt in JSONL_FORMATS:
                yield from self._read_jsonl(path)
            elif fmt == "parquet":
                yield from self._read_parquet(path)
            elif fmt in TABLE_FORMATS:
                yield from self._read_table(path, fmt)
            elif fmt in STREAM_FORMATS:
                yield from self._read_stream(path)
            else:
                yield from self._read_text_file(path)

    def _reject(self, bad: _BadRecord, source: str, line: int | None) -> None:
        """Raise a bad record as a DepstatError, or count it when skipping bad records."""
        if not self.skip_bad:
            raise DepstatError(bad.message, path=source, line=line, hint=bad.hint)
        self.stats.skipped += 1
        self.stats.skipped_reasons[bad.reason] = self.stats.skipped_reasons.get(bad.reason, 0) + 1

    def _value_document(self, source: str, line: int, value: Any, group: Any = None) -> Document:
        """Turn one record's field value (and group value) into a Document or raise _BadRecord."""
        if value is None:
            raise _BadRecord("null value", f"field '{self._field}' is null")
        if self.group_field is not None and (group is None or isinstance(group, (dict, list))):
            raise _BadRecord("bad group value", f"group field '{self.group_field}' is "
                             f"{'null' if group is None else _type_name(group)}, expected a string or a number")
        label = None if self.group_field is None else str(group)
        if self._records == "text":
            if not isinstance(value, str):
                raise _BadRecord(
                    "not a string", f"field '{self._field}' is {_type_name(value)}, expected a string"
                )
            return Document(source, line, text=value, group=label)
        return Document(source, line, ids=_to_ids(value, self._field), group=label)

    def _record_document(self, source: str, line: int, record: Any) -> Document:
        """Pick the configured field out of one record (a JSON object or dataset row)."""
        if not isinstance(record, Mapping):
            raise _BadRecord("not an object", f"record is {_type_name(record)}, expected a JSON object")
        if self._field not in record:
            raise _BadRecord(
                f"missing field '{self._field}'",
                f"record has no field '{self._field}' (fields: {_list_names(record)})",
                hint=f"choose the field with {'--ids-field' if self._records == 'ids' else '--text-field'}, "
                "or pass --skip-bad to skip such records",
            )
        if self.group_field is not None and self.group_field not in record:
            raise _BadRecord(f"missing field '{self.group_field}'", f"record has no group field "
                             f"'{self.group_field}' (fields: {_list_names(record)})")
        group = record[self.group_field] if self.group_field is not None else None
        return self._value_document(source, line, record[self._field], group)

    def _read_jsonl(self, path: str) -> Iterator[Document]:
        """Yield one document per non-blank JSON Lines record, streaming the (compressed) file."""
        for line, raw in _numbered_lines(path):
            try:
                record = _parse_json_line(raw, line)
                if record is None:
                    continue
                doc = self._record_document(path, line, record)
            except _BadRecord as bad:
                self._reject(bad, path, line)
                continue
            yield doc

    def _read_parquet(self, path: str) -> Iterator[Document]:
        """Yield one document per row of the chosen column, reading bounded batches."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        row = 0
        try:
            columns = self._columns()
            with pq.ParquetFile(path) as parquet:
                for batch in parquet.iter_batches(batch_size=PARQUET_BATCH_ROWS, columns=columns):
                    groups = batch.column(1).to_pylist() if len(columns) > 1 else [None] * batch.num_rows
                    yield from self._column_documents(path, batch.column(0).to_pylist(), groups, row + 1)
                    row += batch.num_rows
        except (pa.ArrowException, OSError) as exc:
            raise DepstatError(
                f"cannot read Parquet data after row {row}: {_one_line(exc)}",
                path=path,
                hint="the file may be truncated or corrupt",
            ) from None

    def _read_table(self, path: str, fmt: str) -> Iterator[Document]:
        """Yield one document per row of a CSV or TSV file's text column (its line: the row's number)."""
        import polars as pl

        columns = self._columns()
        try:
            table = pl.read_csv(path, separator="," if fmt == "csv" else "\t", columns=columns,
                                infer_schema_length=0)
        except (pl.exceptions.PolarsError, OSError) as exc:
            raise DepstatError(f"cannot read the {fmt.upper()} file: {_one_line(exc)}", path=path,
                               hint="check its quoting and separator") from None
        groups = table[columns[1]].to_list() if len(columns) > 1 else [None] * table.height
        yield from self._column_documents(path, table[columns[0]].to_list(), groups, 1)

    def _columns(self) -> list[str]:
        """The columns a row-per-document file is read by: the text or ids field, and the group field."""
        return [self._field] + ([self.group_field] if self.group_field is not None else [])

    def _column_documents(self, path: str, values: list, groups: list, first_row: int) -> Iterator[Document]:
        """One document per row of a column (and its group), numbered from ``first_row``; bad ones rejected."""
        for row, (value, group) in enumerate(zip(values, groups), start=first_row):
            try:
                doc = self._value_document(path, row, value, group)
            except _BadRecord as bad:
                self._reject(bad, path, row)
                continue
            yield doc

    def _read_text_file(self, path: str) -> Iterator[Document]:
        """Yield the whole file as one text document (strict UTF-8, a leading BOM dropped)."""
        data = _read_bytes(path)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = data.count(b"\n", 0, exc.start) + 1
            self._reject(
                _BadRecord(
                    "non-UTF-8",
                    f"not valid UTF-8 (byte 0x{data[exc.start]:02x} at byte offset {exc.start})",
                    hint="convert the file to UTF-8 or pass --skip-bad to skip it",
                ),
                path,
                line,
            )
            return
        yield Document(path, 1, text=text.removeprefix("\ufeff"))

    def _read_stream(self, path: str) -> Iterator[Document]:
        """Yield the eos-separated runs of a token-stream file as documents."""
        tokens = self._open_stream(path)
        for index, ids in enumerate(split_on_eos(tokens, self.eos_id), start=1):
            if ids.size and ids.min() < 0:
                bad = _BadRecord("bad token ids", f"document has a negative token id ({ids.min()})")
                self._reject(bad, path, index)
                continue
            yield Document(path, index, ids=ids)

    def _open_stream(self, path: str) -> np.ndarray:
        """Memory-map a .npy or .bin token stream, checking it is a 1-D integer array."""
        if path.endswith(".bin"):
            return _open_bin(path, self.bin_dtype)
        return _open_npy(path)

    def _read_rows(self, rows: Iterable[Mapping[str, Any]], source: str) -> Iterator[Document]:
        """Yield one document per dataset row (row index + 1 as its line)."""
        index = 0
        for index, row in enumerate(_guarded_rows(rows, source), start=1):
            try:
                doc = self._record_document(source, index, row)
            except _BadRecord as bad:
                self._reject(bad, source, index)
                continue
            yield doc

    # -- reporting ------------------------------------------------------------------------------

    def describe(self) -> dict[str, Any]:
        """Summarise the corpus configuration as a JSON-able dict for reports."""
        info: dict[str, Any] = {
            "spec": self.spec,
            "kind": self.kind,
            "formats": list(self._formats),
            "files": self.files[:MAX_LISTED],
            "file_count": len(self.files),
        }
        if set(self._formats) - set(STREAM_FORMATS) - {"text"}:
            info["ids_field" if self._records == "ids" else "text_field"] = self._field
        if self.ids_tokenizer is not None:
            info["ids_decoded_with"] = self.ids_tokenizer
        if self.group_field is not None:
            info["group_field"] = self.group_field
        if self.group is not None:
            info["group"] = self.group
        if set(self._formats) & set(STREAM_FORMATS):
            info["eos_id"] = self.eos_id
            info["stream_documents"] = (
                "whole stream is one document"
                if self.eos_id is None
                else f"runs between eos tokens ({self.eos_id})"
            )
            if "bin" in self._formats:
                info["bin_dtype"] = self.bin_dtype
        if self._formats == ["hf"]:
            info.update(hf_split=self.hf_split, hf_config=self.hf_config)
        elif self._split is not None:
            info["split"] = self._split
        info["skip_bad"] = self.skip_bad
        return info


def open_corpus(spec: str, **kwargs: Any) -> Corpus:
    """Open a corpus spec (see :class:`Corpus`), failing early on missing or unsupported inputs."""
    return Corpus(spec, **kwargs)


# -- resolving specs into files ----------------------------------------------------------------


def resolve_files(spec: str, skip_unknown: bool = False) -> tuple[list[str], list[str]]:
    """Expand a file, directory or glob spec into sorted input paths, and the files skipped.

    A directory's or glob's file of an unsupported extension is an error naming it, or with
    ``skip_unknown`` left out and listed; ``example`` is the bundled corpus unless a file of
    that name exists.
    """
    path = os.path.expanduser(spec)
    if spec == EXAMPLE_SPEC and not os.path.exists(path):
        return [str(EXAMPLE_CORPUS)], []
    if os.path.isdir(path):
        if _is_saved_dataset(path):
            return [path], []
        return _require_supported(_walk(path), path, "directory", skip_unknown)
    if os.path.exists(path):
        _check_single_file(path)
        return [path], []
    if any(char in path for char in "*?["):
        matches = sorted(glob.glob(path, recursive=True))
        if not matches:
            raise DepstatError("glob pattern matched nothing", path=spec, hint="check the pattern and quote it")
        found = [f for m in matches for f in (_walk(m) if os.path.isdir(m) else [m])]
        return _require_supported(sorted(found), spec, "glob pattern", skip_unknown)
    raise DepstatError("no such file or directory", path=spec, hint="check the path")


def _walk(root: str) -> list[str]:
    """All non-hidden files under root, recursively, in sorted order."""
    found = []
    for directory, subdirs, names in os.walk(root):
        subdirs[:] = [name for name in subdirs if not name.startswith(".")]
        found.extend(os.path.join(directory, name) for name in names if not name.startswith("."))
    return sorted(found)


def _require_supported(paths: list[str], spec: str, what: str, skip_unknown: bool) -> tuple[list[str], list[str]]:
    """Split the paths into those of a supported extension and the others, which are an error
    unless ``skip_unknown``; no supported file at all is always one."""
    supported = [path for path in paths if _format_of(path) is not None]
    others = [path for path in paths if _format_of(path) is None]
    if not supported:
        example = f" (found {len(paths)} other files, e.g. {os.path.basename(paths[0])})" if paths else ""
        raise DepstatError(
            f"{what} holds no supported files{example}",
            path=spec,
            hint=f"supported: {', '.join(FORMAT_BY_SUFFIX)}",
        )
    if others and not skip_unknown:
        named = ", ".join(os.path.relpath(p, spec) if what == "directory" else p for p in others[:3])
        more = f" and {len(others) - 3} more" if len(others) > 3 else ""
        raise DepstatError(
            f"{what} holds {len(others)} file{'s' if len(others) > 1 else ''} of no supported extension: {named}{more}",
            path=spec,
            hint=f"pass --skip-bad to skip them, listed in summary.json; supported: {', '.join(FORMAT_BY_SUFFIX)}",
        )
    return supported, others


def _check_single_file(path: str) -> None:
    """Accept a lone file of unknown extension (or none) only when it looks like UTF-8 text."""
    if _format_of(path) is not None:
        return
    suffix = os.path.splitext(path)[1]
    if suffix.lower() == ".json":
        raise DepstatError(
            "'.json' files are not supported",
            path=path,
            hint="if it holds one JSON object per line, rename it to .jsonl",
        )
    head = _read_bytes(path, SNIFF_BYTES)
    try:
        decoded = codecs.getincrementaldecoder("utf-8")().decode(head, final=False)
    except UnicodeDecodeError:
        decoded = "\0"
    if suffix or "\0" in decoded:
        what = f"unknown file extension '{suffix}'" if suffix else "a file without an extension"
        text = "" if "\0" in decoded else ": if it is plain text, name it .txt"
        raise DepstatError(
            f"{what}, and not UTF-8 text" if "\0" in decoded else what,
            path=path,
            hint=f"supported: {', '.join(FORMAT_BY_SUFFIX)}{text}",
        )


def _format_of(path: str) -> str | None:
    """The input format named by a path's extension, or None when unsupported."""
    lower = path.lower()
    for suffix in sorted(FORMAT_BY_SUFFIX, key=len, reverse=True):
        if lower.endswith(suffix):
            return FORMAT_BY_SUFFIX[suffix]
    return None


def _is_saved_dataset(path: str) -> bool:
    """Whether a directory was written by ``datasets``' save_to_disk."""
    return os.path.isdir(path) and any(
        os.path.exists(os.path.join(path, marker)) for marker in SAVED_DATASET_MARKERS
    )


# -- JSON Lines --------------------------------------------------------------------------------


def _open_binary(path: str) -> IO[bytes]:
    """Open a possibly gzip- or zstd-compressed file for reading bytes line by line."""
    if path.lower().endswith(".gz"):
        return gzip.open(path, "rb")
    if path.lower().endswith(".zst"):
        reader = zstandard.ZstdDecompressor().stream_reader(
            open(path, "rb"), read_across_frames=True, closefd=True
        )
        return io.BufferedReader(reader)
    return open(path, "rb")


def _numbered_lines(path: str) -> Iterator[tuple[int, bytes]]:
    """Yield (1-based line number, raw bytes) for every line, turning read failures into errors."""
    line = 0
    try:
        with _open_binary(path) as handle:
            for line, raw in enumerate(handle, start=1):
                yield line, raw
    except (OSError, EOFError, zlib.error, zstandard.ZstdError) as exc:
        raise DepstatError(
            f"cannot read: {_one_line(exc)}",
            path=path,
            line=line + 1,
            hint="the file may be truncated or corrupt; re-download or re-compress it",
        ) from None


def _parse_json_line(raw: bytes, line: int) -> Any:
    """Decode one line strictly as UTF-8 JSON; None for a blank line."""
    if line == 1:
        raw = raw.removeprefix(b"\xef\xbb\xbf")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _BadRecord(
            "non-UTF-8",
            f"not valid UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})",
            hint="convert the file to UTF-8 or pass --skip-bad to skip such lines",
        ) from None
    if not text.strip():
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise _BadRecord(
            "invalid JSON",
            f"not valid JSON ({exc.msg}; column {exc.colno})",
            hint="fix the line or pass --skip-bad to skip bad records",
        ) from None


def _first_record_keys(path: str, max_lines: int = 1000) -> list[str] | None:
    """Field names of the first well-formed JSON object in a file (None if there is none)."""
    for line, raw in _numbered_lines(path):
        if line > max_lines:
            break
        try:
            record = _parse_json_line(raw, line)
        except _BadRecord:
            continue
        if isinstance(record, dict):
            return list(record)
    return None


# -- Parquet, token streams, datasets -----------------------------------------------------------


def _parquet_columns(path: str) -> list[str]:
    """Column names of a Parquet file, read from its footer only."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return list(pq.read_schema(path).names)
    except (pa.ArrowException, OSError) as exc:
        raise DepstatError(
            f"not a readable Parquet file: {_one_line(exc)}", path=path, hint="check the file is intact"
        ) from None


def _table_columns(path: str, fmt: str) -> list[str]:
    """The header of a CSV or TSV file."""
    import polars as pl

    try:
        return pl.read_csv(path, separator="," if fmt == "csv" else "\t", n_rows=0).columns
    except (pl.exceptions.PolarsError, OSError) as exc:
        raise DepstatError(f"cannot read the {fmt.upper()} header: {_one_line(exc)}", path=path,
                           hint="a CSV or TSV file needs a header row naming its columns") from None


def _require_column(name: str, columns: list[str], source: str, kind: str) -> None:
    """Raise a DepstatError naming the available columns when the wanted one is absent."""
    if name not in columns:
        option = {"ids": "--ids-field", "group": "--group-by"}.get(kind, "--text-field")
        raise DepstatError(
            f"no column '{name}' (columns: {_list_names(columns)})",
            path=source,
            hint=f"choose the column with {option}",
        )


def _open_npy(path: str) -> np.ndarray:
    """Memory-map a .npy file and check it holds a 1-D integer array."""
    try:
        tokens = np.load(path, mmap_mode="r", allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise DepstatError(f"not a readable .npy file: {_one_line(exc)}", path=path) from None
    if tokens.ndim != 1:
        raise DepstatError(
            f"is a {tokens.ndim}-D array of shape {tokens.shape}; expected a 1-D array of token ids",
            path=path,
            hint="flatten it and mark document ends with --eos-id",
        )
    if tokens.dtype.kind not in "iu":
        raise DepstatError(
            f"has dtype {tokens.dtype}; expected integer token ids",
            path=path,
            hint="save the token ids as an integer array",
        )
    return tokens


def _open_bin(path: str, dtype: str | None) -> np.ndarray:
    """Memory-map a raw nanoGPT-style .bin token file of the given dtype (None: refused, a raw file does not say)."""
    if dtype is None:
        raise DepstatError("a raw .bin token file does not say the type of its ids", path=path,
                           hint="pass --bin-dtype uint16 (nanoGPT's, vocabularies up to 65,536) or uint32")
    size = os.path.getsize(path)
    itemsize = np.dtype(dtype).itemsize
    if size % itemsize:
        raise DepstatError(
            f"size {size} bytes is not a multiple of {itemsize} ({dtype})",
            path=path,
            hint="check --bin-dtype (uint16 or uint32)",
        )
    if size == 0:
        return np.empty(0, dtype=dtype)
    try:
        return np.memmap(path, dtype=dtype, mode="r")
    except (ValueError, OSError) as exc:
        raise DepstatError(f"cannot map the file: {_one_line(exc)}", path=path) from None


def split_on_eos(
    tokens: np.ndarray, eos_id: int | None, chunk_tokens: int = STREAM_CHUNK_TOKENS
) -> Iterator[np.ndarray]:
    """Yield the non-empty int64 runs between eos tokens, scanning in bounded chunks.

    With ``eos_id`` None the whole stream is one document.
    """
    if eos_id is None:
        yield np.asarray(tokens, dtype=np.int64)
        return
    pending: list[np.ndarray] = []
    for start in range(0, len(tokens), chunk_tokens):
        block = np.asarray(tokens[start : start + chunk_tokens], dtype=np.int64)
        begin = 0
        for cut in np.flatnonzero(block == eos_id):
            pending.append(block[begin:cut])
            run = np.concatenate(pending)
            pending = []
            begin = cut + 1
            if run.size:
                yield run
        pending.append(block[begin:])
    if pending:
        run = np.concatenate(pending)
        if run.size:
            yield run


def load_hf_dataset(name: str, config: str | None, split: str) -> Iterable[Mapping[str, Any]]:
    """Open a Hugging Face Hub dataset split as a stream; failures become one DepstatError."""
    try:
        import datasets

        return datasets.load_dataset(name, config, split=split, streaming=True)
    except Exception as exc:  # the hub raises many types (connection, auth, missing split...)
        raise DepstatError(
            f"could not load the dataset: {_one_line(exc)}",
            path=f"hf:{name}",
            hint="for offline use, save a local copy with Dataset.save_to_disk and pass that directory",
        ) from None


def load_saved_dataset(path: str, split: str) -> Iterable[Mapping[str, Any]]:
    """Load a ``save_to_disk`` directory, picking ``split`` from a DatasetDict."""
    import datasets

    try:
        loaded = datasets.load_from_disk(path)
    except Exception as exc:  # corrupt or partial directories fail in many ways
        raise DepstatError(
            f"could not load the saved dataset: {_one_line(exc)}",
            path=path,
            hint="re-create it with save_to_disk",
        ) from None
    if isinstance(loaded, datasets.DatasetDict):
        if split not in loaded:
            raise DepstatError(
                f"no split '{split}' (splits: {_list_names(loaded)})",
                path=path,
                hint="choose one with --hf-split",
            )
        return loaded[split]
    return loaded


def _saved_dataset_split(path: str, split: str) -> str | None:
    """The split read from a saved DatasetDict directory, None for a plain Dataset."""
    return split if os.path.exists(os.path.join(path, "dataset_dict.json")) else None


def _hf_name(spec: str) -> str:
    """The dataset name of an ``hf:OWNER/NAME`` spec."""
    name = spec[3:].strip()
    if not name:
        raise DepstatError("missing dataset name after 'hf:'", path=spec, hint="write hf:OWNER/NAME")
    return name


def _first_row_keys(dataset: Iterable[Mapping[str, Any]], source: str) -> list[str] | None:
    """Field names of a dataset's first row, for datasets whose columns are not declared."""
    for row in _guarded_rows(dataset, source):
        return list(row) if isinstance(row, Mapping) else None
    return None


def _guarded_rows(rows: Iterable[Mapping[str, Any]], source: str) -> Iterator[Mapping[str, Any]]:
    """Iterate dataset rows, turning failures of the underlying loader into a DepstatError."""
    index = 0
    try:
        for index, row in enumerate(rows, start=1):
            yield row
    except Exception as exc:  # streaming datasets fail with network and format errors alike
        raise DepstatError(
            f"could not read row {index + 1}: {_one_line(exc)}",
            path=source,
            hint="check the dataset; for offline use pass a directory made with save_to_disk",
        ) from None


# -- small helpers --------------------------------------------------------------------------------


def _to_ids(value: Any, name: str) -> np.ndarray:
    """Convert a record's token-id list to an int64 array or raise _BadRecord."""
    if not isinstance(value, (list, tuple, np.ndarray)):
        raise _BadRecord(
            "bad token ids", f"field '{name}' is {_type_name(value)}, expected a list of token ids"
        )
    try:
        ids = np.asarray(value)
    except (ValueError, OverflowError):
        ids = np.asarray([None])
    if ids.size == 0:
        return np.empty(0, dtype=np.int64)
    if ids.ndim != 1 or ids.dtype.kind not in "iu":
        raise _BadRecord("bad token ids", f"field '{name}' is not a flat list of integers")
    if ids.min() < 0:
        raise _BadRecord("bad token ids", f"field '{name}' has a negative token id ({ids.min()})")
    if ids.dtype.kind == "u" and ids.max() > np.iinfo(np.int64).max:
        raise _BadRecord("bad token ids", f"field '{name}' has a token id too large for int64")
    return ids.astype(np.int64, copy=False)



def _at_places(docs: Iterator[Document], places: Sequence[int]) -> Iterator[Document]:
    """The documents of ``docs`` at ``places`` (ascending), reading no further than the last."""
    wanted = iter(places)
    nxt = next(wanted, None)
    for i, doc in enumerate(docs):
        if nxt is None:
            return
        if i == nxt:
            yield doc
            nxt = next(wanted, None)


def _is_empty(doc: Document) -> bool:
    """Whether a document has no text or no token ids."""
    return doc.text == "" if doc.ids is None else doc.ids.size == 0


def _read_bytes(path: str, limit: int = -1) -> bytes:
    """Read a file's bytes (up to limit), reporting OS failures as a DepstatError."""
    try:
        with open(path, "rb") as handle:
            return handle.read(limit)
    except OSError as exc:
        raise DepstatError(f"cannot read: {exc.strerror or exc}", path=path) from None


def _type_name(value: Any) -> str:
    """A JSON-flavoured name for a value's type, for error messages."""
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", int: "a number"}
    return names.get(type(value), "a number" if isinstance(value, float) else type(value).__name__)


def _list_names(names: Iterable[Any], limit: int = 12) -> str:
    """Comma-separated names, shortened after ``limit`` entries."""
    names = [str(name) for name in names]
    shown = ", ".join(names[:limit]) or "none"
    return shown + (f", ... ({len(names)} in all)" if len(names) > limit else "")


def _one_line(exc: BaseException) -> str:
    """The first line of an exception's message, short enough for a one-line error."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text[:200]
