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
Files are found and each format opened in ``depstat.io.formats``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from depstat.errors import DepstatError
from depstat.io.formats import (
    BadRecord,
    first_record_keys,
    first_row_keys,
    format_of,
    guarded_rows,
    hf_name,
    is_saved_dataset,
    list_names,
    load_hf_dataset,
    load_saved_dataset,
    numbered_lines,
    one_line,
    open_bin,
    open_npy,
    parquet_columns,
    parse_json_line,
    read_bytes,
    require_column,
    resolve_files,
    saved_dataset_split,
    split_on_eos,
    table_columns,
    to_ids,
    type_name,
)
from depstat.io.tokenizer_file import load_tokenizer

TABLE_FORMATS = ("csv", "tsv")
JSONL_FORMATS = ("jsonl", "jsonl.gz", "jsonl.zst")
STREAM_FORMATS = ("npy", "bin")
BIN_DTYPES = ("uint16", "uint32")
DEFAULT_IDS_FIELD = "input_ids"
IDS_FIELDS = (DEFAULT_IDS_FIELD, "tokens", "token_ids", "ids")  # token-id fields as datasets ship them
DECODE_IDS = 1 << 18  # ids decoded in one batch (--ids-tokenizer): parallel, and little held at a time
PARQUET_BATCH_ROWS = 1024
MAX_LISTED = 20


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
            self._attach_dataset(load_hf_dataset(hf_name(spec), hf_config, hf_split), "hf")
        else:
            self.files, self.stats.skipped_files = resolve_files(spec, skip_bad)
            if len(self.files) == 1 and is_saved_dataset(self.files[0]):
                self._split = saved_dataset_split(self.files[0], hf_split)
                self._attach_dataset(load_saved_dataset(self.files[0], hf_split), "datasets")
            else:
                self._formats = sorted({format_of(path) or "text" for path in self.files})
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
        fmt = format_of(path) or "text"
        if fmt in STREAM_FORMATS:
            self._open_stream(path)
            return "ids", None
        if fmt == "text":
            return "text", None
        if fmt in TABLE_FORMATS:
            names = table_columns(path, fmt)
            require_column(self.text_field, names, path, "text")
            if self.group_field is not None:
                require_column(self.group_field, names, path, "group")
            return "text", self.text_field
        if fmt == "parquet":
            names = parquet_columns(path)
            kind, record_field = self._pick_field(names)
            require_column(record_field, names, path, kind)
            if self.group_field is not None:
                require_column(self.group_field, names, path, "group")
            return kind, record_field
        keys = first_record_keys(path)
        if keys is None and self.ids_field is None:
            return None, None
        return self._pick_field(keys)

    def _attach_dataset(self, dataset: Iterable[Mapping[str, Any]], fmt: str) -> None:
        """Use a loaded dataset of row dicts as the source, deciding kind from its columns."""
        names = getattr(dataset, "column_names", None)
        if not isinstance(names, list):
            names = None
        keys = names if names is not None else first_row_keys(dataset, self.spec)
        self.kind, self._field = self._pick_field(keys)
        if self.kind == "ids":
            self.ids_field = self._field
        if names is not None:
            require_column(self._field, names, self.spec, self.kind)
            if self.group_field is not None:
                require_column(self.group_field, names, self.spec, "group")
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
            fmt = format_of(path) or "text"
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

    def _reject(self, bad: BadRecord, source: str, line: int | None) -> None:
        """Raise a bad record as a DepstatError, or count it when skipping bad records."""
        if not self.skip_bad:
            raise DepstatError(bad.message, path=source, line=line, hint=bad.hint)
        self.stats.skipped += 1
        self.stats.skipped_reasons[bad.reason] = self.stats.skipped_reasons.get(bad.reason, 0) + 1

    def _value_document(self, source: str, line: int, value: Any, group: Any = None) -> Document:
        """Turn one record's field value (and group value) into a Document or raise BadRecord."""
        if value is None:
            raise BadRecord("null value", f"field '{self._field}' is null")
        if self.group_field is not None and (group is None or isinstance(group, (dict, list))):
            raise BadRecord("bad group value", f"group field '{self.group_field}' is "
                             f"{'null' if group is None else type_name(group)}, expected a string or a number")
        label = None if self.group_field is None else str(group)
        if self._records == "text":
            if not isinstance(value, str):
                raise BadRecord(
                    "not a string", f"field '{self._field}' is {type_name(value)}, expected a string"
                )
            return Document(source, line, text=value, group=label)
        return Document(source, line, ids=to_ids(value, self._field), group=label)

    def _record_document(self, source: str, line: int, record: Any) -> Document:
        """Pick the configured field out of one record (a JSON object or dataset row)."""
        if not isinstance(record, Mapping):
            raise BadRecord("not an object", f"record is {type_name(record)}, expected a JSON object")
        if self._field not in record:
            raise BadRecord(
                f"missing field '{self._field}'",
                f"record has no field '{self._field}' (fields: {list_names(record)})",
                hint=f"choose the field with {'--ids-field' if self._records == 'ids' else '--text-field'}, "
                "or pass --skip-bad to skip such records",
            )
        if self.group_field is not None and self.group_field not in record:
            raise BadRecord(f"missing field '{self.group_field}'", f"record has no group field "
                             f"'{self.group_field}' (fields: {list_names(record)})")
        group = record[self.group_field] if self.group_field is not None else None
        return self._value_document(source, line, record[self._field], group)

    def _read_jsonl(self, path: str) -> Iterator[Document]:
        """Yield one document per non-blank JSON Lines record, streaming the (compressed) file."""
        for line, raw in numbered_lines(path):
            try:
                record = parse_json_line(raw, line)
                if record is None:
                    continue
                doc = self._record_document(path, line, record)
            except BadRecord as bad:
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
                f"cannot read Parquet data after row {row}: {one_line(exc)}",
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
            raise DepstatError(f"cannot read the {fmt.upper()} file: {one_line(exc)}", path=path,
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
            except BadRecord as bad:
                self._reject(bad, path, row)
                continue
            yield doc

    def _read_text_file(self, path: str) -> Iterator[Document]:
        """Yield the whole file as one text document (strict UTF-8, a leading BOM dropped)."""
        data = read_bytes(path)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = data.count(b"\n", 0, exc.start) + 1
            self._reject(
                BadRecord(
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
                bad = BadRecord("bad token ids", f"document has a negative token id ({ids.min()})")
                self._reject(bad, path, index)
                continue
            yield Document(path, index, ids=ids)

    def _open_stream(self, path: str) -> np.ndarray:
        """Memory-map a .npy or .bin token stream, checking it is a 1-D integer array."""
        if path.endswith(".bin"):
            return open_bin(path, self.bin_dtype)
        return open_npy(path)

    def _read_rows(self, rows: Iterable[Mapping[str, Any]], source: str) -> Iterator[Document]:
        """Yield one document per dataset row (row index + 1 as its line)."""
        index = 0
        for index, row in enumerate(guarded_rows(rows, source), start=1):
            try:
                doc = self._record_document(source, index, row)
            except BadRecord as bad:
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
