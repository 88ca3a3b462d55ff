"""Lay out the real sessions the question sets name, from local git mirrors.

    .venv/bin/python eval/agents/lay_out.py --mirrors MIRRORS --out DIR \\
        [--questions eval/agents/real_questions*.jsonl]

For every distinct ``source`` ({repo, commit, path}) of the question sets it runs
``git --git-dir M show COMMIT:PATH`` and writes ``DIR/<agent>/<owner>+<name>/<path>``: the
layout ``breadcrumb eval --real-sessions DIR`` reads (every file under an agent folder is
imported, format recognised by content; the session keeps its own file name, so aider's
``.aider.chat.history.md``, SpecStory's ``.specstory/history/*.md`` and Cline's
``ui_messages.json`` are recognised as such; the ``<owner>+<name>`` folder keeps sessions of
the same name from different repositories apart). ``M`` is the first of
``MIRRORS/<owner>+<name>/repo``, ``MIRRORS/<owner>+<name>``, ``MIRRORS/<owner>/<name>.git``,
``MIRRORS/<name>.git``, ``MIRRORS/<name>`` that is a git dir.

A commit the mirror lacks falls back to the same path at the mirror's ``HEAD``, and is
reported as such. Then each question's value is looked for verbatim in its session: in the
text of the events the importer makes of it (what Breadcrumb stores), else in the raw file,
else JSON-escaped in the raw file. Counts are printed; the exit status is 1 when a session
could not be laid out or a value was not found.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def _sources(files: list[Path]) -> tuple[dict[tuple[str, str, str, str], list[dict[str, Any]]],
                                         Counter[str]]:
    """Questions grouped by (agent, repo, commit, path); questions per set."""
    groups: dict[tuple[str, str, str, str], list[dict[str, Any]]] = {}
    per_set: Counter[str] = Counter()
    for file in files:
        for line in file.read_text("utf-8").splitlines():
            if not line.strip():
                continue
            q = json.loads(line)
            src = q["source"]
            key = (q["agent"], src["repo"], src["commit"], src["path"])
            groups.setdefault(key, []).append(q)
            per_set[file.name] += 1
    return groups, per_set


def _slug(repo: str) -> tuple[str, str]:
    parts = repo.rstrip("/").removesuffix(".git").split("/")
    return parts[-2], parts[-1]


def _mirror(mirrors: Path, repo: str) -> Path | None:
    owner, name = _slug(repo)
    for cand in (mirrors / f"{owner}+{name}" / "repo", mirrors / f"{owner}+{name}",
                 mirrors / owner / f"{name}.git", mirrors / f"{name}.git", mirrors / name):
        if (cand / "HEAD").is_file() and (cand / "objects").is_dir():
            return cand
    return None


def _git(gitdir: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", "--git-dir", str(gitdir), *args], capture_output=True,
                          check=False)


def _decoded(path: Path) -> str:
    """The text of the events the importer makes of ``path`` (every string field)."""
    from breadcrumb.importers import ImportOptions, import_path

    out: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, str):
            out.append(node)
        elif isinstance(node, dict):
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    try:
        for result in import_path(path, "auto", ImportOptions(user_id="lay-out")):
            walk(result.events)
    except Exception as exc:  # noqa: BLE001 - reported, the raw file is still checked
        sys.stderr.write(f"  import failed for {path}: {exc!s:.200}\n")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mirrors", type=Path, required=True,
                        help="folder of bare / mirror git dirs of the listed repositories")
    parser.add_argument("--out", type=Path, required=True, help="DIR to write")
    parser.add_argument("--questions", type=Path, nargs="+",
                        default=sorted(HERE.glob("real_questions*.jsonl")))
    args = parser.parse_args(argv)
    groups, per_set = _sources(args.questions)
    counts: Counter[str] = Counter()
    problems: list[str] = []
    for (agent, repo, commit, path), questions in sorted(groups.items()):
        owner, name = _slug(repo)
        gitdir = _mirror(args.mirrors, repo)
        if gitdir is None:
            problems.append(f"no mirror of {repo}")
            counts["sessions missing"] += 1
            continue
        shown = _git(gitdir, "show", f"{commit}:{path}")
        if shown.returncode != 0:
            head = _git(gitdir, "rev-parse", "HEAD").stdout.decode().strip()
            shown = _git(gitdir, "show", f"HEAD:{path}")
            if shown.returncode != 0:
                problems.append(f"{repo}: {commit}:{path} and HEAD:{path} absent")
                counts["sessions missing"] += 1
                continue
            problems.append(f"{repo}: commit {commit} absent, {path} taken at HEAD {head}")
            counts["sessions at HEAD"] += 1
        target = args.out / agent / f"{owner}+{name}" / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(shown.stdout)
        counts["sessions"] += 1
        raw = shown.stdout.decode("utf-8", errors="replace")
        decoded = _decoded(target)
        for q in questions:
            value = q["value"]
            if value in decoded:
                counts["values in the imported events"] += 1
            elif value in raw:
                counts["values in the raw file only"] += 1
            elif any(json.dumps(value, ensure_ascii=a)[1:-1] in raw for a in (True, False)):
                counts["values JSON-escaped in the raw file only"] += 1
            else:
                counts["values not found"] += 1
                problems.append(f"{q['id']}: value not verbatim in {agent}/{owner}+{name}/{path}")
    out = [f"question sets: {', '.join(f'{k} {v}' for k, v in sorted(per_set.items()))}",
           f"questions: {sum(per_set.values())}, distinct sessions: {len(groups)}",
           *(f"{key}: {value}" for key, value in sorted(counts.items())),
           *(f"  {line}" for line in problems)]
    sys.stdout.write("\n".join(out) + "\n")
    return 1 if counts["sessions missing"] or counts["values not found"] else 0


if __name__ == "__main__":
    sys.exit(main())
