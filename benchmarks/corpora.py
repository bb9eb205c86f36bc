"""Natural text that Debian packages ship, as jsonl corpora for the benchmarks: each builder
returns the corpus's path, or None (or nothing) when its package is not installed."""

from __future__ import annotations

import gzip
import json
import re
import shutil
import subprocess
from collections.abc import Callable
from html.parser import HTMLParser
from pathlib import Path

from bench_end_to_end import gcide_docs

from depstat.synth import write_jsonl

FORTUNES = Path("/usr/share/games/fortunes")
HANDBOOK = Path("/usr/share/doc/debian-handbook/html")
DEVIL = Path("/usr/share/dictd/devil.dict.dz")
LINUX_DOCS = Path("/usr/share/doc/linux-doc-6.1/Documentation")
PYTHON_DOC_SOURCES = Path("/usr/share/doc/python3.11/html/_sources")
PERL_POD = Path("/usr/share/perl/5.36/pod")
DEBIAN_REFERENCE = Path("/usr/share/debian-reference")
GCIDE_BYTES = 20_000_000
DEBIAN_TEXTS = ("bible-kjv", "fortunes", "fortunes-min", "debian-handbook", "linux-doc-6.1", "python3.11-doc",
                "perl-doc", "debian-reference-en", "dict-gcide", "dict-devil")  # where the natural text comes from


def debian_versions() -> str:
    """The installed version of each of DEBIAN_TEXTS (their content, and so a page's numbers, change with it)."""
    try:
        out = subprocess.run(["dpkg-query", "-W", "-f", "${Package} ${Version} ${db:Status-Abbrev}\\n", *DEBIAN_TEXTS],
                             capture_output=True, text=True).stdout
    except FileNotFoundError:
        return "dpkg-query not found"
    found = [line.split()[:2] for line in out.splitlines() if line.split()[2:3] == ["ii"]]
    return ", ".join(f"{name} {version}" for name, version in found) or "none installed"


def bible(tmp: Path) -> dict[str, Path]:
    """The KJV as books and as chapters (jsonl), from Debian's bible-kjv, or nothing."""
    if not shutil.which("bible"):
        return {}
    text = subprocess.run(["bible", "-f", "Gen1:1-Rev22:21"], capture_output=True, text=True, check=True).stdout
    books: dict[str, list[str]] = {}
    chapters: dict[tuple[str, str], list[str]] = {}
    for line in text.splitlines():
        m = re.match(r"^(\d?[A-Za-z]+)(\d+):(\d+)\s+(.*)$", line.strip())
        if m:
            book, chapter, _, verse = m.groups()
            books.setdefault(book, []).append(verse)
            chapters.setdefault((book, chapter), []).append(verse)
    return {"books": write_jsonl(tmp / "bible-books.jsonl", [" ".join(v) for v in books.values()]),
            "chapters": write_jsonl(tmp / "bible-chapters.jsonl", [" ".join(v) for v in chapters.values()])}


def fortunes(tmp: Path) -> Path | None:
    """Debian's fortunes, one per document (jsonl), or None."""
    if not FORTUNES.is_dir():
        return None
    texts = []
    for p in sorted(FORTUNES.iterdir()):
        if p.is_file() and not p.suffix:
            texts += [x.strip() for x in p.read_text(errors="replace").split("\n%\n") if x.strip()]
    return write_jsonl(tmp / "fortunes.jsonl", texts)


class Visible(HTMLParser):
    """The prose of an HTML page: its text outside scripts, styles and code blocks."""

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self.hidden = 0

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.hidden += tag in ("script", "style", "pre", "code")
        if tag in ("p", "div", "li", "h1", "h2", "h3", "br", "tr"):
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        self.hidden -= tag in ("script", "style", "pre", "code")

    def handle_data(self, data: str) -> None:
        if not self.hidden:
            self.parts.append(data)


def handbook(tmp: Path, lang: str) -> Path | None:
    """The Debian Administrator's Handbook in one language (Debian's debian-handbook), one page a
    document, as prose."""
    pages = sorted((HANDBOOK / lang).glob("*.html")) if (HANDBOOK / lang).is_dir() else []
    texts = []
    for page in pages:
        parser = Visible()
        parser.feed(page.read_text(encoding="utf-8", errors="replace"))
        text = re.sub(r"\n\s*\n+", "\n\n", re.sub(r"[ \t]+", " ", "".join(parser.parts))).strip()
        if len(text) > 500:
            texts.append(text)
    return write_jsonl(tmp / f"handbook-{lang}.jsonl", texts) if texts else None


def devil(tmp: Path) -> Path | None:
    """Bierce's Devil's Dictionary (Debian's dict-devil), one letter's entries a document."""
    if not DEVIL.is_file():
        return None
    text = gzip.open(DEVIL).read().decode("utf-8", errors="replace")
    letters: dict[str, list[str]] = {}
    for entry in re.split(r"\n(?=[A-Z][A-Z' -]+, [a-z]+\.)", text[text.find("ABASEMENT"):]):
        letters.setdefault(entry[:1], []).append(entry.strip())
    return write_jsonl(tmp / "devil.jsonl", ["\n\n".join(v) for _, v in sorted(letters.items())])


def prose(text: str, dropped: Callable[[str], bool], unwrap: bool) -> str:
    """A source's prose: its non-blank lines that ``dropped`` keeps, as wrapped in the source (about
    72 bytes a line), or with ``unwrap`` each paragraph (a run of lines between blank ones) on one line."""
    if not unwrap:
        return "\n".join(x for x in text.splitlines() if x.strip() and not dropped(x))
    paragraphs = (" ".join(x.strip() for x in block.splitlines() if x.strip() and not dropped(x))
                  for block in re.split(r"\n\s*\n", text))
    return "\n".join(x for x in paragraphs if x)


def rst_prose(text: str, unwrap: bool = False) -> str:
    """reStructuredText as prose: without its indented literal blocks, directives and rules."""
    return prose(text, lambda x: x.startswith((" ", "\t", "..")) or bool(re.fullmatch(r"[=\-~^*#+`:]{3,}", x.strip())),
                 unwrap)


def linux_docs(tmp: Path, unwrap: bool = False) -> Path | None:
    """The Linux kernel's English documentation (Debian's linux-doc-6.1), one file a document, as
    prose (``prose``)."""
    if not LINUX_DOCS.is_dir():
        return None
    texts = []
    for path in sorted(LINUX_DOCS.rglob("*.rst.gz")):
        if "translations" in path.parts:
            continue
        text = rst_prose(gzip.open(path, "rt", encoding="utf-8", errors="replace").read(), unwrap)
        if len(text) > 500:
            texts.append(text)
    return write_jsonl(tmp / f"linux-doc{'-unwrapped' if unwrap else ''}.jsonl", texts)


def python_docs_sources(tmp: Path) -> Path | None:
    """Python 3.11's documentation (Debian's python3.11-doc), one source file a document, as prose.
   """
    if not PYTHON_DOC_SOURCES.is_dir():
        return None
    texts = [t for p in sorted(PYTHON_DOC_SOURCES.rglob("*.rst.txt"))
             if len(t := rst_prose(p.read_text(encoding="utf-8", errors="replace"))) > 500]
    return write_jsonl(tmp / "python-doc-sources.jsonl", texts)


def perl_pod(tmp: Path, unwrap: bool = False) -> Path | None:
    """Perl's documentation (Debian's perl-doc), one POD file a document, as prose (``prose``):
    without its indented verbatim blocks and its ``=`` commands."""
    if not PERL_POD.is_dir():
        return None
    texts = []
    for path in sorted(PERL_POD.glob("*.pod")):
        text = prose(path.read_text(encoding="utf-8", errors="replace"), lambda x: x.startswith((" ", "\t", "=")),
                      unwrap)
        if len(text) > 500:
            texts.append(text)
    return write_jsonl(tmp / f"perl-pod{'-unwrapped' if unwrap else ''}.jsonl", texts) if texts else None


def debian_reference(tmp: Path) -> Path | None:
    """The Debian Reference (Debian's debian-reference-en), its prose in documents of about 8 KB
    (runs of whole paragraphs; the chapters are few and long; each chapter's last run, if
    shorter, is a document of its own)."""
    texts = []
    for page in sorted(DEBIAN_REFERENCE.glob("*.en.html")) if DEBIAN_REFERENCE.is_dir() else []:
        parser = Visible()
        parser.feed(page.read_text(encoding="utf-8", errors="replace"))
        text = re.sub(r"\n\s*\n+", "\n\n", re.sub(r"[ \t]+", " ", "".join(parser.parts))).strip()
        piece: list[str] = []
        for para in text.split("\n\n"):
            piece.append(para)
            if sum(map(len, piece)) >= 8192:
                texts.append("\n\n".join(piece))
                piece = []
        if piece:
            texts.append("\n\n".join(piece))
    return write_jsonl(tmp / "debian-reference.jsonl", texts) if texts else None


def size(path: Path) -> str:
    """A jsonl corpus's size: its documents and megabytes of text."""
    texts = [json.loads(line)["text"] for line in path.read_text(encoding="utf-8").splitlines()]
    return f"{len(texts)} documents, {sum(len(t.encode()) for t in texts) / 1e6:.1f} MB"


def gcide(tmp: Path) -> Path | None:
    """GCIDE (Debian's dict-gcide) in documents of about 64 KB, its first GCIDE_BYTES."""
    texts, size = [], 0
    for _, text in gcide_docs():
        texts.append(text)
        size += len(text)
        if size >= GCIDE_BYTES:
            break
    return write_jsonl(tmp / "gcide.jsonl", texts) if texts else None
