"""Data cards: what write_card writes, card_numbers reads back, and the committed cards regenerate."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

import depstat
from depstat.cli import main
from depstat.errors import DepstatError
from depstat.report.card import (
    FENCE,
    _fmt,
    _ival,
    card_data,
    card_numbers,
    software,
    write_card,
)
from tests.conftest import Analysed

ROOT = Path(__file__).resolve().parents[1]
CARDS = ROOT / "data_cards"
# A card's section in data_cards/README.md: "### NAME.md", text, then the one ```bash block.
SECTION = re.compile(r"^### (\S+\.md)\n(?:(?!^### ).)*?^```bash\n(.*?)\n```", re.S | re.M)


def readme_commands() -> dict[str, str]:
    """Card file name -> its regeneration command, as data_cards/README.md gives them."""
    return dict(SECTION.findall((CARDS / "README.md").read_text(encoding="utf-8")))


@pytest.fixture(scope="module")
def card(analysed: Analysed, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("card") / "small.md"
    return write_card(*analysed, out, "depstat card docs.jsonl --out small.md", title="Small card",
                      description="Twenty topics of the *bundled* example.")


def test_write_card_writes_markdown_and_the_figure_beside_it(card: Path) -> None:
    text = card.read_text(encoding="utf-8")
    assert card.with_suffix(".png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "](small.png)" in text
    assert text.startswith("# Small card\n\nTwenty topics of the *bundled* example.\n")
    for heading in ("Corpus", "Sampling and tokenization", "MI profile", "Dependency kernels",
                    "Self-similarity", "Recommendation", "Provenance", "Numbers"):
        assert f"\n## {heading}\n" in text
    assert "depstat card docs.jsonl --out small.md" in text and depstat.__version__ in text
    assert '"rope_theta":' in text and "transformers ≥ 5 config" in text and '"rope_parameters"' in text


def test_card_numbers_round_trip_and_agree_with_the_analysis(analysed: Analysed, card: Path) -> None:
    numbers = card_numbers(card.read_text(encoding="utf-8"))
    assert numbers == card_data(*analysed)
    a = analysed.analysis
    assert numbers["verdict"] == a.self_similarity.verdict
    onset = a.self_similarity.onset_tokens
    assert numbers["onset_tokens"] == (pytest.approx(onset, rel=1e-5) if onset is not None else None)
    assert numbers["rope_theta"] == pytest.approx(a.recommendation.rope_theta, rel=1e-5)
    assert numbers["settings"]["train_length"] == 256 and numbers["software"] == software()
    for name, g in numbers["granularities"].items():
        assert g["n_tokens"] == analysed.profile.granularities[name].n_tokens
        assert g["kind"] == a.widths[name].kind
        assert g["chi2_dof"] == pytest.approx(a.widths[name].chi2_dof, rel=1e-5)
        if g["W"] is not None:
            assert g["W"] == pytest.approx(a.widths[name].W, rel=1e-5)
            lo, hi = g["W_interval"]
            assert lo <= g["W"] <= hi


def test_human_tables_show_the_machine_readable_numbers(card: Path) -> None:
    text = card.read_text(encoding="utf-8")
    numbers = card_numbers(text)
    for name, g in numbers["granularities"].items():
        assert f"| {g['kind']} | {_ival(g['W'], g['W_interval'])} |" in text, name
        assert f"| {_fmt(g['n_tokens'])} |" in text, name
    assert f"rope_theta = **{_fmt(numbers['rope_theta'])}**" in text
    assert f"Verdict: **{numbers['verdict']}**" in text
    if numbers["verdict"] == "self-similar":
        assert f"**self-similar** from r = {_fmt(numbers['onset_tokens'])} tokens" in text


def test_card_numbers_needs_exactly_one_block() -> None:
    with pytest.raises(DepstatError):
        card_numbers("# a card\n\nno numbers here\n")
    block = f"```{FENCE}\n{{\"verdict\": \"x\"}}\n```\n"
    assert card_numbers("text\n\n" + block) == {"verdict": "x"}
    with pytest.raises(DepstatError):
        card_numbers(block + "\n" + block)


def test_command_line_from_a_saved_profile(analysed: Analysed, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    analysed.profile.save(tmp_path / "saved")
    argv = ["card", str(tmp_path / "saved"), "--out", str(tmp_path / "cards" / "saved.md"),
            "--head-dim", "64", "--train-length", "256", "--target-length", "1024"]
    assert main(argv) == 0
    text = (tmp_path / "cards" / "saved.md").read_text(encoding="utf-8")
    assert card_numbers(text) == card_data(*analysed)  # the saved replicates give the same analysis
    assert "depstat card " + str(tmp_path / "saved") in text
    assert (tmp_path / "cards" / "saved.png").is_file()
    assert main(["card", str(tmp_path / "saved"), "--out", str(tmp_path / "y.md"), "--head-dim", "63"]) == 2
    assert "depstat: error: the head dimension must be even" in capsys.readouterr().err


def test_every_committed_card_has_one_documented_command() -> None:
    readme = (CARDS / "README.md").read_text(encoding="utf-8")
    commands = readme_commands()
    committed = sorted(p.name for p in CARDS.glob("*.md") if p.name != "README.md")
    assert sorted(commands) == committed and committed
    for name, command in commands.items():
        assert f"--out data_cards/{name}" in command
        assert (CARDS / name).with_suffix(".png").is_file()
        verdict = card_numbers((CARDS / name).read_text(encoding="utf-8"))["verdict"]
        row = next(line for line in readme.splitlines() if line.startswith(f"| [{name}]({name}) |"))
        assert row.endswith(f"| {verdict} |"), row  # the README's list states each card's verdict


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(readme_commands()))
def test_committed_card_regenerates_from_its_command(name: str, tmp_path: Path) -> None:
    """Run the README's command in a scratch directory and compare its numbers with the committed card.

    The pipeline is deterministic, so the numbers must be equal, not just inside the
    committed intervals (the weaker property is asserted first, for a readable failure):
    equal to 1e-4 relative, since another CPU rounds the last printed digit of a few fitted
    values differently (seen on AMD EPYC against the Intel machine that wrote the cards).
    """
    committed = card_numbers((CARDS / name).read_text(encoding="utf-8"))
    if "stdlib" in name and (committed["software"]["python"] != software()["python"]
                             or not committed["corpus"].startswith(sysconfig.get_path("stdlib") + "/")):
        pytest.skip(f"the card profiles the stdlib at {committed['corpus']} (Python "
                    f"{committed['software']['python']}); this Python has another")
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    (tmp_path / "data_cards").mkdir()
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    run = subprocess.run(["bash", "-c", readme_commands()[name]], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    fresh = card_numbers((tmp_path / "data_cards" / name).read_text(encoding="utf-8"))

    assert fresh["verdict"] == committed["verdict"]
    assert fresh["rope_theta"] == pytest.approx(committed["rope_theta"], rel=1e-5)
    for g, old in committed["granularities"].items():
        new = fresh["granularities"][g]
        assert new["n_tokens"] == old["n_tokens"], g
        if old["W"] is not None:
            assert old["W_interval"][0] <= new["W"] <= old["W_interval"][1], g
    fresh.pop("software"), committed.pop("software")
    assert fresh == _approx(committed)


def _approx(value: object) -> object:
    """``value`` with every float compared to 1e-4 relative (1e-9 absolute), everything else exactly."""
    if isinstance(value, dict):
        return {k: _approx(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_approx(v) for v in value]
    if isinstance(value, float):
        return pytest.approx(value, rel=1e-4, abs=1e-9)
    return value
