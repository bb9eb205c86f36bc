"""The ``depstat`` command: a thin argparse shell over ``depstat.profile``."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from depstat.analysis.recommend import DEFAULT_MARGIN, PAPER_C
from depstat.analysis.result import (
    DEFAULT_HEAD_DIM,
    DEFAULT_TRAIN_LENGTH,
    Settings,
    analyze,
)
from depstat.analysis.selfsim import MARGIN as SIMILARITY_MARGIN
from depstat.count.kernels import NOTE_BLOCKS
from depstat.errors import DepstatError
from depstat.estimate.estimators import DEFAULT_ESTIMATOR, ESTIMATORS
from depstat.estimate.profile import (
    DEFAULT_BLOCKS,
    DEFAULT_MAX_OFFSET,
    DEFAULT_NULL_DRAWS,
    DEFAULT_ORDER,
    DEFAULT_POPULATION,
    ORDERS,
    POPULATIONS,
    Profile,
    log_offsets,
)
from depstat.groups import Groups, profile_groups
from depstat.io.corpus import open_corpus
from depstat.io.sampling import DEFAULT_SAMPLE, SAMPLE_RULES
from depstat.pipeline import profile
from depstat.progress import announce_compilation
from depstat.report.console import (
    render,
    render_analysis,
    render_groups,
    render_recommendation,
    render_selfsim,
)
from depstat.tokenize.cache import default_cache_dir
from depstat.tokenize.granularity import (
    DEFAULT_LADDER,
    DEFAULT_TRAIN_BYTES,
    DEFAULT_TRAIN_DOCS,
)
from depstat.version import __version__


def _int_list(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.replace(",", " ").split()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    return values


def _size_or_all(text: str) -> int | None:
    """A size as ``_size`` reads it, or None for 'all' (no limit)."""
    return None if text.lower() == "all" else _size(text)


def _size(text: str) -> int:
    """A size in bytes, with an optional K, M or G suffix (powers of 1024)."""
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:].upper(), 1)
    digits = text[:-1] if scale > 1 else text
    try:
        value = float(digits) * scale
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a size such as 512M or 2G, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive size, got {text!r}")
    return int(value)


def corpus_options() -> argparse.ArgumentParser:
    """Options shared by every command that may profile a corpus."""
    p = argparse.ArgumentParser(add_help=False)
    g = p.add_argument_group("input")
    g.add_argument("--text-field", default="text", help="JSON/parquet/dataset field holding the text (default: text)")
    g.add_argument("--ids-field", default=None, help="field holding token ids (pre-tokenized input; default input_ids when detected)")
    g.add_argument("--ids-tokenizer", default=None, metavar="PATH",
                   help="tokenizer.json that made the token ids: decode them to text, so every granularity (and "
                   "bytes per token) exists; the ids become the granularity named after it")
    g.add_argument("--eos-id", type=int, default=None, help="document separator id in .npy/.bin token streams")
    g.add_argument("--bin-dtype", choices=["uint16", "uint32"],
                   help="dtype of .bin token streams (required for .bin: the file does not say it)")
    g.add_argument("--vocab-size", type=int, default=None, help="vocabulary size of pre-tokenized input (default: largest id + 1)")
    g.add_argument("--split", default="train", help="split of a Hugging Face / saved dataset (default: train)")
    g.add_argument("--hf-config", default=None, help="configuration name of a Hugging Face dataset")
    g.add_argument("--skip-bad", action="store_true",
                   help="skip and count bad records, and a directory's or glob's files of no supported extension "
                        "(listed in summary.json), instead of stopping at the first")
    g.add_argument("--max-docs", type=int, default=None, help="profile a sample of N documents (see --sample)")
    g.add_argument("--max-tokens", type=int, default=None, help="profile a sample of about N tokens (UTF-8 bytes for text; the last document whole)")
    g.add_argument(
        "--sample", default=DEFAULT_SAMPLE, choices=SAMPLE_RULES,
        help="random: a seeded random sample of whole documents across the corpus, which reads every document once "
        "to draw it (a streamed dataset: the first of its seeded shuffle); first: the first documents in reading "
        "order, reading no further (default: random)",
    )
    t = p.add_argument_group("granularities")
    t.add_argument(
        "--granularity", "-g", action="append", default=None,
        help=f"granularity to profile; repeat for several (default: {' '.join(DEFAULT_LADDER)}); "
        "names: bytes, words, bpe-N, bpe-Nk",
    )
    t.add_argument("--tokenizer", action="append", default=[], metavar="PATH", help="add a tokenizer.json (repeatable)")
    t.add_argument(
        "--train-docs", type=int, default=DEFAULT_TRAIN_DOCS, metavar="N",
        help=f"train BPE/word vocabularies on at most N of the sample's documents, those of smallest content hash (default: {DEFAULT_TRAIN_DOCS})",
    )
    t.add_argument(
        "--train-bytes", type=_size_or_all, default=DEFAULT_TRAIN_BYTES, metavar="SIZE",
        help="and on at most SIZE of their UTF-8 text, the document that reaches it whole; e.g. 256M, "
        f"or 'all' for no limit (default: {DEFAULT_TRAIN_BYTES >> 20}M)",
    )
    c = t.add_mutually_exclusive_group()
    c.add_argument("--cache-dir", default=None, metavar="DIR", help="cache of trained vocabularies and tokenized shards (default: $DEPSTAT_CACHE, else ~/.cache/depstat)")
    c.add_argument("--no-cache", action="store_true", help="tokenize from scratch and write no cache")
    _estimation_options(p)
    return p


def _estimation_options(parser: argparse.ArgumentParser) -> None:
    """The options of counting and estimation, local or on Dask, added to ``parser``."""
    e = parser.add_argument_group("estimation")
    e.add_argument("--max-offset", type=int, default=DEFAULT_MAX_OFFSET, help=f"largest offset of the log-spaced grid (default: {DEFAULT_MAX_OFFSET})")
    e.add_argument("--offsets", type=_int_list, default=None, help="extra offsets, comma-separated (added to the grid)")
    e.add_argument("--estimator", default=DEFAULT_ESTIMATOR, choices=ESTIMATORS, help=f"MI estimator (default: {DEFAULT_ESTIMATOR})")
    e.add_argument("--confidence", type=float, default=0.95, help="interval confidence level (default: 0.95)")
    e.add_argument("--blocks", type=int, default=DEFAULT_BLOCKS, help=f"jackknife blocks, 2 to {NOTE_BLOCKS:,} (default: {DEFAULT_BLOCKS})")
    e.add_argument("--seed", type=int, default=0, help="seed of the sample, of the order documents are counted in and of the nulls (default: 0)")
    e.add_argument("--null-draws", type=int, default=DEFAULT_NULL_DRAWS, metavar="N", help=f"null draws averaged by a null-corrected estimator, their spread in the interval; one where the rotation null rotates the pair list (documents that end) (default: {DEFAULT_NULL_DRAWS})")
    e.add_argument(
        "--document-order", default=DEFAULT_ORDER, choices=ORDERS,
        help="shuffled: count documents in a seeded order, so the profile does not depend on the order they come in; "
        "reading: as they come (the rotation null and jackknife groups then follow the file's grouping) (default: shuffled)",
    )
    e.add_argument(
        "--population", default=DEFAULT_POPULATION, choices=POPULATIONS,
        help="all: every document gives the pairs it has; fixed: only documents longer than the largest offset, so "
        "every offset rests on the same documents (default: all)",
    )
    e.add_argument(
        "--pair-memory", type=_size, default=None, metavar="SIZE",
        help="cap the local counter's pair buffers (e.g. 512M) and keep token streams in memory-mapped "
        "temporary files under TMPDIR: memory then stops growing with the corpus; partitions are counted "
        "in groups, each a pass over the stream (slower; see docs/scale.md)",
    )
    d = parser.add_argument_group("distributed counting (Dask; pip install -e '.[dask]')")
    w = d.add_mutually_exclusive_group()
    w.add_argument("--workers", type=int, default=None, metavar="N", help="tokenize and count on an embedded Dask LocalCluster of N worker processes")
    w.add_argument("--scheduler", default=None, metavar="ADDRESS", help="tokenize and count on an existing Dask cluster (e.g. tcp://host:8786)")
    d.add_argument("--shared-dir", default=None, metavar="DIR", help="where workers write and read the token stream (must be shared storage with --scheduler; default: temp dir)")
    d.add_argument(
        "--shard-tokens", type=_size, default=None, metavar="N",
        help="positions each shard task counts (default: 4M to 64M, as large as leaves 4 shards a batch to each worker "
        "thread and, for vocabularies over 256, as keeps a batch's tables within a quarter of a worker thread's "
        "memory, at one entry a pair or, where that binds, at twice the entries a position of 4 shards counted "
        "first; K, M, G suffixes are powers of 1024): larger shards "
        "mean fewer tasks for the scheduler and more memory a task; if workers die on a task (out of memory), "
        "the run stops and names it: pass a smaller N (see docs/scale.md)",
    )


def analysis_options() -> argparse.ArgumentParser:
    """Options describing the model the advice is for."""
    p = argparse.ArgumentParser(add_help=False)
    a = p.add_argument_group("model and advice")
    a.add_argument("--head-dim", type=int, default=None,
                   help=f"your model's attention head dimension d (default: {DEFAULT_HEAD_DIM}, said beside the advice)")
    a.add_argument("--train-length", type=int, default=None,
                   help=f"your model's training context length L (default: {DEFAULT_TRAIN_LENGTH}, said beside the advice)")
    a.add_argument("--target-length", type=int, default=None, help="context length to extend to (adds PI / YaRN advice)")
    a.add_argument("--model-granularity", default=None, help="granularity W is read at (default: a --tokenizer one, else the largest BPE)")
    a.add_argument("--c", type=float, default=PAPER_C, help="constant of theta* = c / W (default: pi)")
    a.add_argument("--margin", type=float, default=DEFAULT_MARGIN, help=f"slowest band at theta*/margin (default: {DEFAULT_MARGIN:g})")
    a.add_argument("--similarity-margin", type=float, default=SIMILARITY_MARGIN,
                   help=f"largest change of the tail's exponent, its first cell against beyond, still called "
                        f"self-similar (default: {SIMILARITY_MARGIN:g})")
    return p


def card_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The card's own arguments (source, --out, --title, --description) on ``parser``."""
    parser.add_argument("source", help="a directory written by depstat profile --out, or a corpus to profile")
    o = parser.add_argument_group("card")
    o.add_argument("--out", required=True, help="the card's Markdown file; the figure goes beside it as <stem>.png")
    o.add_argument("--title", default=None, help="the card's title (default: 'Data card: SOURCE')")
    o.add_argument("--description", default=None,
                   help="what the corpus is (origin, licence, language or domain), Markdown, put under the title")
    return parser


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed so the docs and tests can read the help)."""
    parser = argparse.ArgumentParser(
        prog="depstat",
        description="Measure how far dependencies reach in a corpus: mutual-information profiles over token offsets, "
        "the dependency width W, self-similarity, and RoPE advice.",
    )
    parser.add_argument("--version", action="version", version=f"depstat {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    corpus, analysis = corpus_options(), analysis_options()
    source_help = "a directory written by depstat profile --out, or a corpus to profile first"

    p = sub.add_parser(
        "profile", parents=[corpus, analysis],
        help="MI profile I(r) of a corpus at several granularities, with its kernel, self-similarity and advice",
        description=(
            "Read CORPUS (.jsonl[.gz|.zst], .parquet, .csv/.tsv, text files, .npy/.bin token streams, a "
            "directory or glob of these, a saved datasets directory, hf:OWNER/NAME, or 'example' for the "
            "bundled Python documentation), tokenize "
            "it at each granularity and estimate the mutual information between tokens r apart, "
            "with a jackknife interval per offset; then each granularity's dependency kernel (local "
            "part, power-law tail, crossover), the offset from which the data are self-similar and "
            "the RoPE base and extension config derived from them."
        ),
    )
    p.add_argument("corpus", help="path, glob, saved-dataset directory, hf:OWNER/NAME or example")
    o = p.add_argument_group("output")
    o.add_argument("--out", default=None, help="directory for profile.parquet and summary.json")
    o.add_argument("--format", choices=["table", "json"], default="table", help="console output (default: table)")
    o.add_argument("--report", action="store_true", help="also write report.html and report.md into --out (with --group-by, the groups too)")
    p.add_argument("--group-by", default=None, metavar="FIELD",
                   help="also profile and analyse each value of this record field (e.g. cluster_id, source) on its "
                   "share of the sample: one table across groups; with --out, a group column in profile.parquet and "
                   "groups/VALUE/")

    s = sub.add_parser("selfsim", parents=[corpus, analysis], help="self-similarity report across granularities",
                       description=(
        "Fit each granularity's dependency kernel (a local part, a power-law tail and the crossover r_x) of a "
        "saved profile, or of a corpus profiled first with the options below, and say from which offset the data "
        "are self-similar: the model granularity's tail keeps one exponent beyond its onset (checked against the "
        "estimator's bias bound), with the other granularities' tail exponents on the common byte axis beside it. "
        "The verdict is self-similar, not self-similar or inconclusive (with what would decide it)."))
    s.add_argument("source", help=source_help)
    s.add_argument("--format", choices=["table", "json"], default="table")

    r = sub.add_parser("recommend", parents=[corpus, analysis], help="RoPE base and context-extension advice",
                       description=(
        "Turn a saved profile, or a corpus profiled first, into RoPE advice for your model (--head-dim, "
        "--train-length; depstat's defaults are said when you do not give them): the base, set by the data "
        "where the kernel has a length of its own inside L_train, else Men et al.'s bound for L_train; beside "
        "it the other rules and published configs; with --target-length, a YaRN config whose bands follow the "
        "kernel. Prints the transformers configs to paste."))
    r.add_argument("source", help=source_help)
    r.add_argument("--format", choices=["table", "json"], default="table")

    _add_synth(sub)

    crd = sub.add_parser("card", parents=[corpus, analysis], help="Markdown data card of a corpus or saved profile",
                         description=(
        "Write a Markdown data card of a saved profile, or of a corpus profiled first: the corpus and sample, "
        "each granularity's facts and kernel, the self-similarity verdict, the advice and the command that "
        "regenerates it, with the profile figure beside it."))
    card_arguments(crd)

    rep = sub.add_parser("report", parents=[analysis], help="HTML and Markdown report of a saved profile",
                         description=(
        "Write report.html (self-contained, figures inline) and report.md with figures/*.png for a saved "
        "profile: the profiles, documents and pairs per offset, the kernels, the byte-axis comparison behind "
        "the verdict, the RoPE grid with any extension, and the configs; each figure says what to read from it."))
    rep.add_argument("source", help="a directory written by depstat profile --out")
    rep.add_argument("--out", default=None, help="where to write the report (default: the profile directory)")

    _add_validate(sub)
    return parser


def _add_synth(sub: argparse._SubParsersAction) -> None:
    """``depstat synth``'s arguments."""
    syn = sub.add_parser("synth", help="write a synthetic corpus with a known dependency structure", description=(
        "Write a corpus whose dependency structure is known, to see what depstat reports on it before trusting "
        "it on yours: generated arithmetic (a length of its own, not self-similar), a character Markov chain "
        "(exponential decay), tree text (a power law, self-similar) or latent blocks (a kernel of width "
        "proportional to --block)."))
    syn.add_argument("kind", choices=["arithmetic", "markov-text", "tree-text", "blocks"], help=(
        "arithmetic: iGSM-style problems (jsonl, not self-similar); markov-text: character Markov chain "
        "(jsonl, exponential decay); tree-text: characters from a binary-tree grammar (jsonl, a power law, "
        "self-similar; --doc-len a power of two); blocks: latent blocks of length --block (.npy token stream, "
        "eos = vocab)"))
    syn.add_argument("out", help="output file (.jsonl, or .npy for blocks)")
    syn.add_argument("--docs", type=int, default=300, help="number of documents (default: 300)")
    syn.add_argument("--doc-len", type=int, default=4096, help="tokens or characters per document (default: 4096)")
    syn.add_argument("--block", type=int, default=16, help="block length B for blocks (default: 16)")
    syn.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")


def _add_validate(sub: argparse._SubParsersAction) -> None:
    """``depstat validate``'s arguments."""
    from depstat.validate import EXPERIMENTS

    val = sub.add_parser("validate", help="train small models to check depstat's advice (needs torch)", description=(
        "Train small RoPE transformers to test depstat's advice: frequency-law (theta_eff = c/W on a window task), "
        "base-sweep (the recommended base against others on a task where the base matters), pi (PI vs YaRN, "
        "predicted by depstat, on a dilated/fixed pair, text, tree text and arithmetic), lerope (learnable frequencies on BPE "
        "tokens, the frozen-frequency ablation, YaRN at 4L). Writes DIR/result.json, figures and DIR/runs/*.json; "
        "a rerun skips finished runs."))
    val.add_argument("experiment", choices=list(EXPERIMENTS), help="which experiment")
    val.add_argument("--out", required=True, help="directory for result.json, figures and finished runs")
    val.add_argument("--quick", action="store_true", help="small setting for CI (seconds instead of minutes)")
    val.add_argument("--seeds", type=int, default=None, help="seeds per setting (default: the experiment's, 2-3)")
    val.add_argument("--scale", default="cpu", choices=["cpu", "paper"],
                     help="cpu (default): sized for 2 CPU cores; paper: larger sweeps for one large GPU (with --device cuda)")
    val.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"], help="default: CUDA when available")
    val.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: at most 2)")
    val.add_argument("--corpus", default=None, help="text corpus for base-sweep, pi and lerope (default: the bundled Python docs)")
    val.add_argument("--window-block", type=int, default=None,
                     help="pi: the window task's block B, 2 to 64 (default 16): the advice tested on another window")


def run_profile(args: argparse.Namespace) -> Profile:
    """Run ``depstat profile`` from parsed arguments."""
    if is_saved_profile(Path(args.corpus)):
        raise DepstatError("is a saved profile, not a corpus", path=args.corpus,
                           hint="read it with depstat selfsim, recommend, report or card")
    return profile(args.corpus, max_docs=args.max_docs, max_tokens=args.max_tokens, seed=args.seed, sample=args.sample,
                   **profile_options(args), **reading_options(args))


def profile_options(args: argparse.Namespace) -> dict:
    """``profile()``'s options other than the corpus, its reading options and the sample."""
    return {
        "granularities": args.granularity, "tokenizers": args.tokenizer,
        "offsets": log_offsets(args.max_offset, extra=args.offsets) if args.offsets else None,
        "max_offset": args.max_offset, "estimator": args.estimator, "confidence": args.confidence,
        "n_blocks": args.blocks, "vocab_size": args.vocab_size, "train_docs": args.train_docs,
        "train_bytes": args.train_bytes,
        "cache_dir": None if args.no_cache else (args.cache_dir or default_cache_dir()),
        "workers": args.workers, "scheduler": args.scheduler, "shared_dir": args.shared_dir,
        "shard_tokens": args.shard_tokens, "pair_memory": args.pair_memory, "null_draws": args.null_draws,
        "order": args.document_order, "population": args.population,
    }


def reading_options(args: argparse.Namespace) -> dict:
    """How the corpus is read (``open_corpus``'s options)."""
    return {
        "text_field": args.text_field, "ids_field": args.ids_field, "ids_tokenizer": args.ids_tokenizer,
        "eos_id": args.eos_id, "bin_dtype": args.bin_dtype, "skip_bad": args.skip_bad, "hf_split": args.split,
        "hf_config": args.hf_config,
    }


def run_groups(args: argparse.Namespace, settings: Settings) -> Groups:
    """The per-group profiles of ``depstat profile --group-by``."""
    corpus = open_corpus(args.corpus, group_field=args.group_by, **reading_options(args))
    return profile_groups(corpus, settings, max_docs=args.max_docs, max_tokens=args.max_tokens, seed=args.seed,
                          sample=args.sample, **profile_options(args))


def settings_from(args: argparse.Namespace) -> Settings:
    """Analysis settings from the command line."""
    model = {"head_dim": (args.head_dim, DEFAULT_HEAD_DIM), "train_length": (args.train_length, DEFAULT_TRAIN_LENGTH)}
    return Settings(
        **{name: default if given is None else given for name, (given, default) in model.items()},
        target_length=args.target_length, granularity=args.model_granularity, c=args.c, margin=args.margin,
        similarity_margin=args.similarity_margin, defaults=tuple(name for name, (given, _) in model.items() if given is None),
    )


def load_or_profile(args: argparse.Namespace) -> Profile:
    """A saved profile directory, or a corpus profiled now with the given options."""
    src = Path(args.source)
    if is_saved_profile(src):
        given = [action.option_strings[0] for action in corpus_options()._actions
                 if action.option_strings and getattr(args, action.dest) != action.default]
        if given:
            raise DepstatError(f"{', '.join(given)} {'do' if len(given) > 1 else 'does'} not apply to a saved profile, "
                               "which is analysed as it was profiled", path=str(src),
                               hint="drop them, or profile the corpus again with them")
        return Profile.load(src)
    args.corpus = args.source
    return run_profile(args)


def is_saved_profile(path: Path) -> bool:
    """Whether ``path`` is a directory written by ``depstat profile --out``."""
    return path.is_dir() and (path / "summary.json").is_file() and (path / "profile.parquet").is_file()


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``depstat`` console script."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    args.argv = argv
    announce_compilation()
    try:
        return COMMANDS[args.command](args)
    except DepstatError as err:
        print(f"depstat: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("depstat: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (``depstat ... | head``): nothing left to say
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except OSError as err:  # a file that cannot be read or written, found only while working
        print(f"depstat: error: {err.strerror or err}{f': {err.filename}' if err.filename else ''}", file=sys.stderr)
        return 2


def writable(directory: str | os.PathLike, what: str = "--out") -> None:
    """Fail before any work when ``directory`` cannot be created or written to."""
    path = Path(directory)
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path, prefix=".depstat-check-"):
            pass
    except OSError as err:
        raise DepstatError(f"cannot write to {what} {directory} ({err.strerror or err})",
                           hint="choose a directory you can write to") from None


def cmd_profile(args: argparse.Namespace) -> int:
    """depstat profile: profile, analyse, save, print."""
    if args.report and not args.out:
        raise DepstatError("--report needs --out DIR")
    if args.out:
        writable(args.out)
    settings = settings_from(args)
    check_settings(settings)
    result = run_profile(args)
    analysis = analyze(result, settings)
    groups = run_groups(args, settings) if args.group_by else None
    if args.out:
        result.save(args.out, analysis, groups)
        if args.report:
            from depstat.report.document import build_report

            build_report(result, analysis, args.out, groups)
    if args.format == "json":
        extra = {"groups": groups.to_dict()} if groups else {}
        print(json.dumps({**result.summary(), **analysis.to_dict(), **extra}, indent=2, default=str))
        return 0
    print(render(result))
    print()
    print(render_analysis(analysis))
    if groups is not None:
        print()
        print(render_groups(groups))
    if args.out:
        print(f"\nwrote {args.out}/profile.parquet and {args.out}/summary.json" + (" and report.html/.md" if args.report else ""))
    return 0


def check_settings(settings: Settings) -> None:
    """Reject analysis settings before any work is done."""
    from depstat.analysis.recommend import check_settings as check

    check(settings.head_dim, settings.train_length, settings.target_length, settings.c, settings.margin)
    if not settings.similarity_margin > 0:
        raise DepstatError(f"--similarity-margin must be positive, got {settings.similarity_margin:g}")


def cmd_selfsim(args: argparse.Namespace) -> int:
    """depstat selfsim: widths and the self-similarity verdict."""
    settings = settings_from(args)
    check_settings(settings)
    analysis = analyze(load_or_profile(args), settings)
    if args.format == "json":
        d = analysis.to_dict()
        print(json.dumps({k: d[k] for k in ("W", "self_similarity")}, indent=2, default=str))
    else:
        print(render_selfsim(analysis))
    return 0


def cmd_recommend(args: argparse.Namespace) -> int:
    """depstat recommend: RoPE base and extension advice."""
    settings = settings_from(args)
    check_settings(settings)
    analysis = analyze(load_or_profile(args), settings)
    if args.format == "json":
        print(json.dumps(analysis.recommendation.to_dict(), indent=2, default=str))
    else:
        print(render_recommendation(analysis))
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    """depstat report: HTML and Markdown report of a saved profile."""
    from depstat.report.document import build_report

    settings = settings_from(args)
    check_settings(settings)
    result = Profile.load(args.source)
    writable(args.out or args.source)
    paths = build_report(result, analyze(result, settings), args.out or args.source)
    print("wrote " + ", ".join(str(p) for p in paths.values()))
    return 0


def cmd_synth(args: argparse.Namespace) -> int:
    """depstat synth: write a synthetic corpus."""
    from depstat import synth

    if args.docs < 1 or args.doc_len < 2:
        raise DepstatError("--docs must be at least 1 and --doc-len at least 2")
    if args.kind == "arithmetic":
        synth.arithmetic_jsonl(args.out, args.docs, seed=args.seed, doc_chars=args.doc_len)
    elif args.kind == "markov-text":
        synth.write_jsonl(args.out, synth.markov_text(args.docs, args.doc_len, seed=args.seed))
    elif args.kind == "tree-text":
        if args.doc_len & (args.doc_len - 1):
            raise DepstatError(f"tree-text needs --doc-len a power of two (a tree's leaves), got {args.doc_len}",
                               hint="for example --doc-len 4096")
        depth = args.doc_len.bit_length() - 1
        synth.write_jsonl(args.out, synth.tree_text(args.docs, depth=depth, seed=args.seed))
    else:
        stream = synth.block_sequences(args.docs, args.doc_len, args.block, seed=args.seed)
        eos = stream.vocab_size
        docs = np.split(stream.tokens.astype(np.int64), np.cumsum(stream.doc_lengths)[:-1])
        np.save(args.out, np.concatenate([np.r_[d, eos] for d in docs]))
        print(f"eos id {eos}: profile with --eos-id {eos}")
    print(f"wrote {args.out}")
    return 0


def cmd_card(args: argparse.Namespace) -> int:
    """depstat card: a Markdown data card with its figure."""
    from depstat.report import card

    settings = settings_from(args)
    check_settings(settings)
    result = load_or_profile(args)
    path = card.write_card(result, analyze(result, settings), args.out, card.command_line("depstat", args.argv),
                           args.title, args.description)
    print(f"wrote {path} and {path.with_suffix('.png')}")
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    """depstat validate: one validation experiment, resumed from its finished runs."""
    from depstat import validate

    writable(args.out)
    result = validate.run(args.experiment, args.out, quick=args.quick, seeds=args.seeds, device=args.device,
                          threads=args.threads, corpus=args.corpus, scale=args.scale,
                          window_block=args.window_block)
    print(result.summary())
    print(f"wrote {args.out}/result.json and " + ", ".join(result.figures))
    return 0


COMMANDS = {"card": cmd_card, "synth": cmd_synth, "profile": cmd_profile, "selfsim": cmd_selfsim, "recommend": cmd_recommend, "report": cmd_report, "validate": cmd_validate}


if __name__ == "__main__":
    sys.exit(main())
