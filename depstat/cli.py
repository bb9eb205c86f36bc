"""The ``depstat`` command: a thin argparse shell over ``depstat.profile``."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

import polars as pl

from depstat import __version__
from depstat.errors import DepstatError
from depstat.estimators import DEFAULT_ESTIMATOR, ESTIMATORS
from depstat.granularity import DEFAULT_LADDER
from depstat.profile import DEFAULT_BLOCKS, DEFAULT_MAX_OFFSET, Profile, log_offsets, profile


def _int_list(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.replace(",", " ").split()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    return values


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed so the docs and tests can read the help)."""
    parser = argparse.ArgumentParser(
        prog="depstat",
        description="Measure how far dependencies reach in a corpus: mutual-information profiles over token offsets.",
    )
    parser.add_argument("--version", action="version", version=f"depstat {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser(
        "profile",
        help="MI profile I(r) of a corpus at several granularities",
        description=(
            "Read CORPUS (.jsonl[.gz|.zst], .parquet, text files, .npy/.bin token streams, a "
            "directory or glob of these, a saved datasets directory, or hf:OWNER/NAME), tokenize "
            "it at each granularity and estimate the mutual information between tokens r apart, "
            "with a jackknife interval per offset."
        ),
    )
    p.add_argument("corpus", help="path, glob, saved-dataset directory or hf:OWNER/NAME")
    g = p.add_argument_group("input")
    g.add_argument("--text-field", default="text", help="JSON/parquet/dataset field holding the text (default: text)")
    g.add_argument("--ids-field", default=None, help="field holding token ids (pre-tokenized input; default input_ids when detected)")
    g.add_argument("--eos-id", type=int, default=None, help="document separator id in .npy/.bin token streams")
    g.add_argument("--bin-dtype", default="uint16", choices=["uint16", "uint32"], help="dtype of .bin token streams")
    g.add_argument("--vocab-size", type=int, default=None, help="vocabulary size of pre-tokenized input (default: largest id + 1)")
    g.add_argument("--split", default="train", help="split of a Hugging Face / saved dataset (default: train)")
    g.add_argument("--hf-config", default=None, help="configuration name of a Hugging Face dataset")
    g.add_argument("--skip-bad", action="store_true", help="skip and count bad records instead of stopping at the first")
    g.add_argument("--max-docs", type=int, default=None, help="profile only the first N documents")
    g.add_argument("--max-tokens", type=int, default=None, help="stop adding documents once N tokens (UTF-8 bytes for text) are read")
    t = p.add_argument_group("granularities")
    t.add_argument(
        "--granularity", "-g", action="append", default=None,
        help=f"granularity to profile; repeat for several (default: {' '.join(DEFAULT_LADDER)}); "
        "names: bytes, words, bpe-N, bpe-Nk",
    )
    t.add_argument("--tokenizer", action="append", default=[], metavar="PATH", help="add a tokenizer.json (repeatable)")
    t.add_argument("--train-docs", type=int, default=20_000, help="documents used to train BPE/word vocabularies (default: 20000)")
    e = p.add_argument_group("estimation")
    e.add_argument("--max-offset", type=int, default=DEFAULT_MAX_OFFSET, help=f"largest offset of the log-spaced grid (default: {DEFAULT_MAX_OFFSET})")
    e.add_argument("--offsets", type=_int_list, default=None, help="extra offsets, comma-separated (added to the grid)")
    e.add_argument("--estimator", default=DEFAULT_ESTIMATOR, choices=ESTIMATORS, help=f"MI estimator (default: {DEFAULT_ESTIMATOR})")
    e.add_argument("--confidence", type=float, default=0.95, help="interval confidence level (default: 0.95)")
    e.add_argument("--blocks", type=int, default=DEFAULT_BLOCKS, help=f"jackknife blocks (default: {DEFAULT_BLOCKS})")
    e.add_argument("--seed", type=int, default=0, help="seed of the i.i.d. null (shuffle estimator)")
    o = p.add_argument_group("output")
    o.add_argument("--out", default=None, help="directory for profile.parquet and summary.json")
    o.add_argument("--format", choices=["table", "json"], default="table", help="console output (default: table)")
    return parser


def run_profile(args: argparse.Namespace) -> Profile:
    """Run ``depstat profile`` from parsed arguments."""
    offsets = None
    if args.offsets:
        offsets = log_offsets(args.max_offset, extra=args.offsets)
    return profile(
        args.corpus,
        granularities=args.granularity,
        tokenizers=args.tokenizer,
        offsets=offsets,
        max_offset=args.max_offset,
        estimator=args.estimator,
        confidence=args.confidence,
        n_blocks=args.blocks,
        max_docs=args.max_docs,
        max_tokens=args.max_tokens,
        vocab_size=args.vocab_size,
        train_docs=args.train_docs,
        seed=args.seed,
        text_field=args.text_field,
        ids_field=args.ids_field,
        eos_id=args.eos_id,
        bin_dtype=args.bin_dtype,
        skip_bad=args.skip_bad,
        hf_split=args.split,
        hf_config=args.hf_config,
    )


def render(result: Profile) -> str:
    """The console report: per-granularity facts, then the profile table."""
    summary = result.summary()
    lines = [f"corpus: {summary['corpus'].get('spec')}  ({summary['sampling']['rule']})"]
    c = summary["corpus"]
    if c.get("skipped_bad_records"):
        lines.append(f"skipped bad records: {c['skipped_bad_records']} {c['skipped_reasons']}")
    lines.append(f"estimator: {result.estimator}; {int(result.confidence * 100)}% jackknife intervals")
    lines.append("")
    facts = pl.DataFrame([
        {
            "granularity": k, "vocab": g["vocab_size"], "tokens": g["n_tokens"], "docs": g["n_docs"],
            "bytes/token": round(g["bytes_per_token"], 3) if g.get("bytes_per_token") else None,
            "zero from r=": g["first_offset_indistinguishable_from_zero"],
        }
        for k, g in summary["granularities"].items()
    ])
    wide = (
        result.table.with_columns(
            pl.format("{} [{}, {}]", *(pl.col(c).round(4) for c in ("mi_bits", "ci_low", "ci_high")))
            .alias("cell")
        )
        .pivot(on="granularity", index="offset", values="cell")
        .sort("offset")
    )
    with pl.Config(tbl_rows=-1, tbl_cols=-1, tbl_hide_dataframe_shape=True, tbl_hide_column_data_types=True, fmt_str_lengths=40, tbl_width_chars=250):
        lines.append(str(facts))
        lines.append("")
        lines.append("I(r) in bits, point [interval low, high]:")
        lines.append(str(wide))
    for name, offsets in result.skipped_offsets.items():
        if offsets:
            lines.append(f"{name}: offsets {offsets} skipped (fewer than 64 pairs)")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``depstat`` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "profile":
            result = run_profile(args)
            if args.out:
                result.save(args.out)
            if args.format == "json":
                print(json.dumps(result.summary(), indent=2, default=str))
            else:
                print(render(result))
                if args.out:
                    print(f"\nwrote {args.out}/profile.parquet and {args.out}/summary.json")
    except DepstatError as err:
        print(f"depstat: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("depstat: interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
