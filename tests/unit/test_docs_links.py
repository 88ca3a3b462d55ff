"""Every relative link and ``#anchor`` in README.md and docs/**/*.md resolves.

A link names a file of the repository (relative to the page) and, optionally, a heading
of a Markdown page, by GitHub's anchor rule: lower case, punctuation dropped, spaces to
hyphens, ``-1``, ``-2`` … for repeats. Links inside code (fenced blocks, inline code) and
to other sites are not checked.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
_FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.M | re.S)
_INLINE_CODE = re.compile(r"(?<!`)(`+)(?!`).+?(?<!`)\1(?!`)", re.S)
_LINK = re.compile(r"\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t#]*$", re.M)
_EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.I)


def prose(text: str) -> str:
    """The page without fenced code blocks and inline code spans."""
    return _INLINE_CODE.sub("", _FENCE.sub("", text))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading's text."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
    text = re.sub(r"<[^>]+>", "", text).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Every anchor GitHub gives the headings of ``page`` (repeats numbered)."""
    seen: dict[str, int] = {}
    found: set[str] = set()
    for match in _HEADING.finditer(_FENCE.sub("", page.read_text("utf-8"))):
        base = slug(match.group(1))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def links(page: Path) -> list[str]:
    return [m.group(1) for m in _LINK.finditer(prose(page.read_text("utf-8")))]


def broken(page: Path) -> list[str]:
    """The links of ``page`` that name no file, or no heading of the page they name."""
    bad: list[str] = []
    for target in links(page):
        if _EXTERNAL.match(target):
            continue
        path_part, _, anchor = target.partition("#")
        dest = (page.parent / path_part).resolve() if path_part else page
        if not dest.exists():
            bad.append(f"{target}: no file {path_part}")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            bad.append(f"{target}: no heading #{anchor} in {dest.name}")
    return bad


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_every_link_resolves(page: Path) -> None:
    assert broken(page) == []


def test_every_page_of_docs_is_reachable_from_the_readme() -> None:
    """The checker sees links at all, and no page is an orphan: following relative links
    from README.md reaches every page of docs/ (link a new page from the README's
    Documentation table or from a page on its subject)."""
    seen: set[Path] = set()
    todo = [ROOT / "README.md"]
    while todo:
        page = todo.pop()
        if page in seen or not page.is_file() or page.suffix != ".md":
            continue
        seen.add(page)
        for target in links(page):
            path_part = target.partition("#")[0]
            if path_part and not _EXTERNAL.match(target):
                todo.append((page.parent / path_part).resolve())
    orphans = sorted(str(p.relative_to(ROOT)) for p in PAGES if p not in seen)
    assert orphans == [], f"not linked from README.md or a page it links: {orphans}"
    assert ROOT / "docs" / "contract" / "API.md" in seen


def test_checker_finds_a_broken_link_and_anchor(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# Title\n\n## Two `words` here\n\n## Two words here\n")
    page = tmp_path / "b.md"
    page.write_text("`` x `[no](#no)` `` [ok](#b) a lone `` then [ok](#b) "
                    "[ok](a.md#two-words-here) [ok](a.md#two-words-here-1) [ok](#b)\n"
                    "# B\n[bad](a.md#nope) [bad](missing.md) `[code](missing.md)`\n"
                    "```\n[fenced](missing2.md)\n```\n[web](https://example.com/x)\n")
    assert broken(page) == ["a.md#nope: no heading #nope in a.md",
                            "missing.md: no file missing.md"]
    assert links(page)[:2] == ["#b", "#b"]


def test_the_readme_s_two_commands_are_make_targets() -> None:
    """The README's "Two commands" section shows `make demo` and `make test`, alone, and
    the Makefile has both targets (what they do is run by tests/e2e/test_readme_commands.py
    and .ci/run)."""
    text = (ROOT / "README.md").read_text("utf-8")
    section = text.split("## Two commands on a fresh machine", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```bash\n(.*?)```", section, re.S)
    assert [b.strip() for b in blocks] == ["make demo", "make test"]
    makefile = (ROOT / "Makefile").read_text("utf-8")
    assert re.search(r"(?m)^demo:", makefile) and re.search(r"(?m)^test:", makefile)
    assert "core.symlinks=true" in text  # the Windows clone note stays on the landing page
