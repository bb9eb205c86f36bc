"""A corpus's files and formats: a spec resolved to supported files (``resolve_files``), and each
format opened and checked (JSON lines, parquet and table columns, token streams, datasets).

``depstat.io.corpus.Corpus`` reads documents through these; every problem is one line naming
the file (and line), raised as a :class:`DepstatError`."""

from __future__ import annotations

import codecs
import glob
import gzip
import io
import json
import os
import zlib
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any

import numpy as np
import zstandard

from depstat.errors import DepstatError

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
SAVED_DATASET_MARKERS = ("dataset_info.json", "state.json", "dataset_dict.json")
STREAM_CHUNK_TOKENS = 1 << 22
SNIFF_BYTES = 1 << 16
EXAMPLE_SPEC = "example"  # names the bundled corpus wherever no file of that name exists
EXAMPLE_CORPUS = Path(__file__).resolve().parents[1] / "data" / "python-docs.jsonl.gz"
SKIP_HINT = "fix the record or pass --skip-bad to skip bad records"


class BadRecord(Exception):
    """One unusable record: a short reason for the counters plus a message for the error."""

    def __init__(self, reason: str, message: str, hint: str = SKIP_HINT) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.hint = hint


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
        if is_saved_dataset(path):
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
    supported = [path for path in paths if format_of(path) is not None]
    others = [path for path in paths if format_of(path) is None]
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
    if format_of(path) is not None:
        return
    suffix = os.path.splitext(path)[1]
    if suffix.lower() == ".json":
        raise DepstatError(
            "'.json' files are not supported",
            path=path,
            hint="if it holds one JSON object per line, rename it to .jsonl",
        )
    head = read_bytes(path, SNIFF_BYTES)
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


def format_of(path: str) -> str | None:
    """The input format named by a path's extension, or None when unsupported."""
    lower = path.lower()
    for suffix in sorted(FORMAT_BY_SUFFIX, key=len, reverse=True):
        if lower.endswith(suffix):
            return FORMAT_BY_SUFFIX[suffix]
    return None


def is_saved_dataset(path: str) -> bool:
    """Whether a directory was written by ``datasets``' save_to_disk."""
    return os.path.isdir(path) and any(
        os.path.exists(os.path.join(path, marker)) for marker in SAVED_DATASET_MARKERS
    )


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


def numbered_lines(path: str) -> Iterator[tuple[int, bytes]]:
    """Yield (1-based line number, raw bytes) for every line, turning read failures into errors."""
    line = 0
    try:
        with _open_binary(path) as handle:
            for line, raw in enumerate(handle, start=1):
                yield line, raw
    except (OSError, EOFError, zlib.error, zstandard.ZstdError) as exc:
        raise DepstatError(
            f"cannot read: {one_line(exc)}",
            path=path,
            line=line + 1,
            hint="the file may be truncated or corrupt; re-download or re-compress it",
        ) from None


def parse_json_line(raw: bytes, line: int) -> Any:
    """Decode one line strictly as UTF-8 JSON; None for a blank line."""
    if line == 1:
        raw = raw.removeprefix(b"\xef\xbb\xbf")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadRecord(
            "non-UTF-8",
            f"not valid UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})",
            hint="convert the file to UTF-8 or pass --skip-bad to skip such lines",
        ) from None
    if not text.strip():
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadRecord(
            "invalid JSON",
            f"not valid JSON ({exc.msg}; column {exc.colno})",
            hint="fix the line or pass --skip-bad to skip bad records",
        ) from None


def first_record_keys(path: str, max_lines: int = 1000) -> list[str] | None:
    """Field names of the first well-formed JSON object in a file (None if there is none)."""
    for line, raw in numbered_lines(path):
        if line > max_lines:
            break
        try:
            record = parse_json_line(raw, line)
        except BadRecord:
            continue
        if isinstance(record, dict):
            return list(record)
    return None


def parquet_columns(path: str) -> list[str]:
    """Column names of a Parquet file, read from its footer only."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return list(pq.read_schema(path).names)
    except (pa.ArrowException, OSError) as exc:
        raise DepstatError(
            f"not a readable Parquet file: {one_line(exc)}", path=path, hint="check the file is intact"
        ) from None


def table_columns(path: str, fmt: str) -> list[str]:
    """The header of a CSV or TSV file."""
    import polars as pl

    try:
        return pl.read_csv(path, separator="," if fmt == "csv" else "\t", n_rows=0).columns
    except (pl.exceptions.PolarsError, OSError) as exc:
        raise DepstatError(f"cannot read the {fmt.upper()} header: {one_line(exc)}", path=path,
                           hint="a CSV or TSV file needs a header row naming its columns") from None


def require_column(name: str, columns: list[str], source: str, kind: str) -> None:
    """Raise a DepstatError naming the available columns when the wanted one is absent."""
    if name not in columns:
        option = {"ids": "--ids-field", "group": "--group-by"}.get(kind, "--text-field")
        raise DepstatError(
            f"no column '{name}' (columns: {list_names(columns)})",
            path=source,
            hint=f"choose the column with {option}",
        )


def open_npy(path: str) -> np.ndarray:
    """Memory-map a .npy file and check it holds a 1-D integer array."""
    try:
        tokens = np.load(path, mmap_mode="r", allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise DepstatError(f"not a readable .npy file: {one_line(exc)}", path=path) from None
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


def open_bin(path: str, dtype: str | None) -> np.ndarray:
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
        raise DepstatError(f"cannot map the file: {one_line(exc)}", path=path) from None


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
            f"could not load the dataset: {one_line(exc)}",
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
            f"could not load the saved dataset: {one_line(exc)}",
            path=path,
            hint="re-create it with save_to_disk",
        ) from None
    if isinstance(loaded, datasets.DatasetDict):
        if split not in loaded:
            raise DepstatError(
                f"no split '{split}' (splits: {list_names(loaded)})",
                path=path,
                hint="choose one with --hf-split",
            )
        return loaded[split]
    return loaded


def saved_dataset_split(path: str, split: str) -> str | None:
    """The split read from a saved DatasetDict directory, None for a plain Dataset."""
    return split if os.path.exists(os.path.join(path, "dataset_dict.json")) else None


def hf_name(spec: str) -> str:
    """The dataset name of an ``hf:OWNER/NAME`` spec."""
    name = spec[3:].strip()
    if not name:
        raise DepstatError("missing dataset name after 'hf:'", path=spec, hint="write hf:OWNER/NAME")
    return name


def first_row_keys(dataset: Iterable[Mapping[str, Any]], source: str) -> list[str] | None:
    """Field names of a dataset's first row, for datasets whose columns are not declared."""
    for row in guarded_rows(dataset, source):
        return list(row) if isinstance(row, Mapping) else None
    return None


def guarded_rows(rows: Iterable[Mapping[str, Any]], source: str) -> Iterator[Mapping[str, Any]]:
    """Iterate dataset rows, turning failures of the underlying loader into a DepstatError."""
    index = 0
    try:
        for index, row in enumerate(rows, start=1):
            yield row
    except Exception as exc:  # streaming datasets fail with network and format errors alike
        raise DepstatError(
            f"could not read row {index + 1}: {one_line(exc)}",
            path=source,
            hint="check the dataset; for offline use pass a directory made with save_to_disk",
        ) from None


def to_ids(value: Any, name: str) -> np.ndarray:
    """Convert a record's token-id list to an int64 array or raise BadRecord."""
    if not isinstance(value, (list, tuple, np.ndarray)):
        raise BadRecord(
            "bad token ids", f"field '{name}' is {type_name(value)}, expected a list of token ids"
        )
    try:
        ids = np.asarray(value)
    except (ValueError, OverflowError):
        ids = np.asarray([None])
    if ids.size == 0:
        return np.empty(0, dtype=np.int64)
    if ids.ndim != 1 or ids.dtype.kind not in "iu":
        raise BadRecord("bad token ids", f"field '{name}' is not a flat list of integers")
    if ids.min() < 0:
        raise BadRecord("bad token ids", f"field '{name}' has a negative token id ({ids.min()})")
    if ids.dtype.kind == "u" and ids.max() > np.iinfo(np.int64).max:
        raise BadRecord("bad token ids", f"field '{name}' has a token id too large for int64")
    return ids.astype(np.int64, copy=False)


def read_bytes(path: str, limit: int = -1) -> bytes:
    """Read a file's bytes (up to limit), reporting OS failures as a DepstatError."""
    try:
        with open(path, "rb") as handle:
            return handle.read(limit)
    except OSError as exc:
        raise DepstatError(f"cannot read: {exc.strerror or exc}", path=path) from None


def type_name(value: Any) -> str:
    """A JSON-flavoured name for a value's type, for error messages."""
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", int: "a number"}
    return names.get(type(value), "a number" if isinstance(value, float) else type(value).__name__)


def list_names(names: Iterable[Any], limit: int = 12) -> str:
    """Comma-separated names, shortened after ``limit`` entries."""
    names = [str(name) for name in names]
    shown = ", ".join(names[:limit]) or "none"
    return shown + (f", ... ({len(names)} in all)" if len(names) > limit else "")


def one_line(exc: BaseException) -> str:
    """The first line of an exception's message, short enough for a one-line error."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text[:200]
