"""The documentation holds together: a short front page, links that lead somewhere, the
pictures the console draws for it, the README's test command as CI runs it, and the
bench-verdict page's table written from a saved run."""

from __future__ import annotations

import html
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = [README, *sorted(DOCS.glob("*.md"))]
MAX_README_LINES = 200

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^\s*(```|~~~)")


def _script(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _prose(text: str) -> str:
    """The page without its fenced code blocks, where a `[x](y)` is code, not a link."""
    out, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            out.append(line)
    return "\n".join(out)


def _links(page: Path) -> list[str]:
    return LINK.findall(_prose(page.read_text()))


def _slug(heading: str) -> str:
    """A heading's anchor as GitHub and GitLab make it."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    return {_slug(m.group(1)) for m in re.finditer(r"^#+\s+(.*)$", _prose(page.read_text()), re.M)}


def test_the_readme_is_a_front_page() -> None:
    lines = README.read_text().splitlines()
    assert len(lines) <= MAX_README_LINES, (
        f"README.md has {len(lines)} lines; the front page stays under {MAX_README_LINES}: "
        "move the detail into docs/"
    )


def test_every_docs_page_is_reachable_from_the_front_page() -> None:
    index = DOCS / "index.md"
    assert "docs/index.md" in _links(README), "README.md links to no docs/index.md"
    linked = {Path(link.split("#")[0]).name for link in _links(README) if "docs/" in link}
    linked |= {Path(link.split("#")[0]).name for link in _links(index)}
    unlinked = sorted(p.name for p in DOCS.glob("*.md") if p.name not in linked | {"index.md"})
    assert not unlinked, f"no link from README.md or docs/index.md to {unlinked}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_leads_to_a_file(page: Path) -> None:
    broken = []
    for link in _links(page):
        if re.match(r"^[a-z][a-z0-9+.-]*:", link):  # https:, mailto:
            continue
        target, _, anchor = link.partition("#")
        path = (page.parent / target).resolve() if target else page
        if not path.exists():
            broken.append(f"{link} (no file {path.relative_to(ROOT)})")
        elif anchor and path.suffix == ".md" and anchor not in _anchors(path):
            broken.append(f"{link} (no heading #{anchor} in {path.relative_to(ROOT)})")
    assert not broken, f"{page.relative_to(ROOT)} links nowhere: {broken}"


def test_the_link_check_finds_a_broken_link(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("[ok](page.md) and [gone](missing.md)\n\n```\n[code](nope.md)\n```\n")
    assert _links(page) == ["page.md", "missing.md"]


def test_every_picture_exists_and_is_shown() -> None:
    pictures = _script("screenshots").PICTURES
    shown = {Path(link).name for page in PAGES for link in _links(page) if "img/" in link}
    for name in pictures:
        missing = f"docs/img/{name} is missing: run scripts/screenshots.py"
        assert (DOCS / "img" / name).is_file(), missing
        assert name in shown, f"docs/img/{name} is shown on no page"


def test_the_screenshot_script_draws_each_picture(tmp_path: Path) -> None:
    pictures = _script("screenshots").PICTURES
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "screenshots.py"), "--out", str(tmp_path)],
        capture_output=True, text=True, env=env, timeout=240,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(pictures)
    text = {name: html.unescape((tmp_path / name).read_text()).replace("\xa0", " ")
            for name in pictures}  # fmt: skip
    assert all(t.lstrip().startswith("<svg") for t in text.values())
    assert "decode tok/s" in text["dashboard.svg"]
    assert "Physics: 170.0 -> 71.0 tok/s" in text["verdict-physics.svg"]
    assert "Not physics: 114.0 -> 50.0 tok/s" in text["verdict-not-physics.svg"]
    assert "Not enough evidence:" in text["verdict-not-enough.svg"]


def _ci_test_command() -> str:
    """The command `.ci/run` ends with, less pip's `-q` (CI only quiets pip's output)."""
    lines = [ln.strip() for ln in (ROOT / ".ci" / "run").read_text().splitlines()]
    command = next(ln for ln in reversed(lines) if ln.startswith("pip install"))
    return command.replace("pip install -q ", "pip install ", 1)


def test_the_readme_shows_the_test_command_ci_runs() -> None:
    command = _ci_test_command()
    assert "pytest" in command
    assert command in README.read_text().splitlines(), (
        f".ci/run runs `{command}`, and the README must show exactly that command"
    )


def test_the_readme_installs_from_a_clone() -> None:
    text = README.read_text()
    # The front page names no clone URL (a fork or a mirror has its own); it says to stand
    # in the clone, then installs and connects from there.
    clone = text.find("cd specconsole")
    install = text.find("pip install torch==2.13.0 -e '.[engine]' && specconsole connect local")
    assert 0 <= clone < install, "the README enters the clone first, then installs and connects"
    assert "pip install -e ." in text  # the install without torch


def _bench_result():
    from console.analysis.verdict_scoring import Trial
    from console.experiments.verdict_result import BenchResult

    trials = [
        Trial("null", 0, "physics", "physics", -0.01, "Physics: within noise.", path="typed",
              constructed=0.0),
        Trial("null", 0, "physics", "not enough evidence", 0.02, "Not enough evidence: ...",
              path="explain", constructed=0.0),
        Trial("round-delay", 0, "not physics", "not physics", -0.25, "Not physics: ...",
              path="baseline"),
        Trial("round-delay", 0, "not physics", "physics", -0.22, "Physics: ...",
              path="typed"),
    ]  # fmt: skip
    params = {
        "scenarios": ["null", "round-delay"], "runs": 1, "output_tokens": 240,
        "sample_target": {"target_rel": 0.05, "min_repeat": 3, "max_repeat": 16,
                          "paired_max_repeat": 40, "passages": 2},
        "sweep_contexts": [256, 1800], "sweep_text_types": ["code"],
        "paths": ["typed", "explain", "baseline"], "seed": 0,
        "calibration": {"shift_sd": 0.02, "shifts": [0.01, -0.02], "restart_s": [4.0],
                        "drift_sd": 0.03},
    }  # fmt: skip
    result = BenchResult(trials, params, {"a": 1}, {"a": 1}, seconds=12.0,
                         timings={"calibration": 5.0})  # fmt: skip
    return result


def test_the_bench_page_table_is_the_commands_own(tmp_path: Path) -> None:
    doc_script = _script("bench_verdict_doc")
    result = _bench_result()
    saved = tmp_path / "saved.json"
    saved.write_text(json.dumps(result.as_dict(), default=str))
    page = tmp_path / "bench.md"
    marked = f"{doc_script.BEGIN}\nold\n{doc_script.END}"
    page.write_text(f"# Title\n\nprose before\n\n{marked}\n\nafter\n")

    assert doc_script.main([str(saved), "--doc", str(page)]) == 0
    text = page.read_text()
    assert text.startswith("# Title\n\nprose before\n") and text.endswith("\n\nafter\n")
    assert "old" not in text
    assert "$ specconsole bench verdict local --runs 1 --scenarios null,round-delay --paths " \
           "typed,explain,baseline" in text  # fmt: skip
    for line in result.table():  # the rebuilt trials score as the originals did
        assert line in text
    assert "false alarms ('not physics' where the truth is physics): 0/2" in text


def test_the_bench_page_script_refuses_bad_input_and_keeps_the_page(tmp_path: Path) -> None:
    doc_script = _script("bench_verdict_doc")
    page = tmp_path / "bench.md"
    page.write_text(f"{doc_script.BEGIN}\nkept\n{doc_script.END}\n")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert doc_script.main([str(bad), "--doc", str(page)]) == 1
    unmarked = tmp_path / "plain.md"
    unmarked.write_text("no markers\n")
    saved = tmp_path / "saved.json"
    saved.write_text(json.dumps(_bench_result().as_dict(), default=str))
    assert doc_script.main([str(saved), "--doc", str(unmarked)]) == 1
    assert page.read_text() == f"{doc_script.BEGIN}\nkept\n{doc_script.END}\n"
    assert unmarked.read_text() == "no markers\n"


def test_the_bench_page_has_the_markers_the_script_writes_between() -> None:
    doc_script = _script("bench_verdict_doc")
    text = (DOCS / "bench-verdict.md").read_text()
    assert text.index(doc_script.BEGIN) < text.index(doc_script.END)
