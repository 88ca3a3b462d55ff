"""Exact values of a text: the observer's recall hints (phrases and language:
:mod:`processors.phrases`).

Every value :func:`extract_exact_values` returns is a verbatim substring of its input
(identifiers, paths, env assignments, SQL (:mod:`.sql_values`), regex literals, ports,
image tags, error lines, cron, arXiv ids, quoted config values). Patterns are
ASCII-bounded so that a value glued to Japanese text (``EMAIL_REを``) is still found.
Huge texts (tool output) are scanned by head, tail and every error-looking line, so a
2,000-line log costs a few milliseconds and its one failing line is still caught.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache

from breadcrumb.processors.sql_values import SQL_KINDS, sql_values

#: Texts with more lines than this are scanned by head/tail/error lines only.
MAX_SCAN_LINES = 300
_EDGE_LINES = 8

_F = re.ASCII | re.MULTILINE
_TAIL_PUNCT = ".,;:!?)'\""
_TLDS = (
    "com|net|org|io|dev|app|ai|co|jp|uk|de|fr|us|cn|kr|edu|gov|info|me|cloud|local"
    "|internal|example|test|localhost|shop|xyz"
)
_FILE_EXTS = (
    "py|pyi|ts|tsx|js|jsx|mjs|cjs|json|yaml|yml|toml|ini|cfg|conf|env|sql|md|sh|txt|lock"
    "|go|rs|rb|java|kt|css|scss|html|vue|svelte|proto|tf|csv|log|ipynb|pdf"
)
_ERRNOS = (
    "CONN(?:REFUSED|RESET|ABORTED)|TIMEDOUT|NOTFOUND|ADDRINUSE|ADDRNOTAVAIL|NOENT|ACCES"
    "|PERM|PIPE|EXIST|ISDIR|NOTDIR|MFILE|AI_AGAIN|HOSTUNREACH|NETUNREACH|NOTEMPTY|NOMEM"
)
_STR = r"([\"'`])((?:\\.|(?!\1)[^\\\n])*)\1"
_KNOWN_DIRS = frozenset(
    "src tests test lib app apps deploy config configs docs scripts migrations infra pkg"
    " cmd internal api bin etc var usr web frontend backend packages services tools".split()
)
_CODE_FILE = re.compile(rf"\.(?:{_FILE_EXTS})$")  # "tests/x.py:42" is a location, not an image
_IMAGE_WORDS = frozenset({"latest", "alpine", "slim", "bookworm", "bullseye", "lts", "stable"})
_NOT_IMAGE_HOSTS = frozenset({"localhost", "http", "https", "file", "arxiv", "port"})

Match = re.Match[str]


@dataclass(frozen=True)
class _Rule:
    pattern: re.Pattern[str]
    kinds: tuple[str, ...]  # one kind per emitted group
    groups: tuple[int, ...] = (0,)
    check: Callable[[Match], bool] | None = None
    # Every match contains one of these substrings (a necessary condition, so a text
    # holding none of them skips the pattern; empty = always run it); with ``fold`` they
    # are looked for in the lowercased text (the pattern ignores ASCII case).
    needs: tuple[str, ...] = ()
    fold: bool = False


def _rule(
    kinds: str, pattern: str, groups: tuple[int, ...] = (0,),
    check: Callable[[Match], bool] | None = None, needs: str = "", fold: bool = False,
) -> _Rule:
    """``needs``: space-separated substrings, one of which every match contains."""
    return _Rule(re.compile(pattern, _F), tuple(kinds.split()), groups, check,
                 tuple(needs.split(" ")) if needs else (), fold)


def _path_ok(m: Match) -> bool:
    value = m.group(0).rstrip(_TAIL_PUNCT)
    if value.startswith(("a/", "b/")) and m.string.startswith(("--- ", "+++ "), m.start() - 4):
        return False  # unified diff header: the path is named without the prefix elsewhere
    last = value.rsplit("/", 1)[-1]
    first = value.lstrip("./~").split("/", 1)[0]
    return (
        "." in last or value.startswith(("/", "./", "../", "~")) or value.count("/") >= 2
        or "{" in value or first in _KNOWN_DIRS
    )


def _image_ok(m: Match) -> bool:
    name, tag = m.group(1), m.group(2).rstrip(".")
    if name in _NOT_IMAGE_HOSTS or m.string.startswith("//", m.end()) or _CODE_FILE.search(name):
        return False
    if tag.isdigit() and len(tag) >= 3:  # host:port, not an image
        return False
    return any(c.isdigit() for c in tag) or tag in _IMAGE_WORDS


def _port_ok(m: Match) -> bool:
    return 0 < int(m.group(m.lastindex or 0)) < 65536


def _arxiv_ok(m: Match) -> bool:
    return 1 <= int(m.group(0)[2:4]) <= 12


def _cron_ok(m: Match) -> bool:
    return "*" in m.group(0) or "/" in m.group(0)


def _has_digit_and_letter(m: Match) -> bool:
    value = m.group(0)
    return any(c.isdigit() for c in value) and any(c.isalpha() for c in value)


# Order matters only for ties at the same offset (longer values sort first anyway).
_RULES: tuple[_Rule, ...] = (
    _rule("url", r"\b(?:https?|wss?|postgres(?:ql)?|redis|mysql|amqp|s3)://[^\s'\"`<>]+",
          needs="://"),
    _rule("endpoint path", r"\b(?:GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS)[ \t]+(/[^\s'\"`<>,]*)",
          (0, 1), needs="/"),
    _rule("env env_name env_value",
          r"(?<![\w$])(([A-Z][A-Z0-9_]+)=(\"[^\"\n]*\"|'[^'\n]*'|[^\s'\"`]+))", (1, 2, 3),
          needs="="),
    _rule("email", r"\b[\w.+-]+@(?:[\w-]+\.)+[A-Za-z]{2,}\b", needs="@"),
    _rule("nodeid path", r"(?<![\w/.-])((?:[\w.-]+/)*[\w.-]+\.py)::[\w\[\]:.-]*[\w\]]", (0, 1),
          needs="::"),
    _rule("path", r"(?<![\w/.:~@-])(?:~|\.{1,2})?/?(?:[\w.{}@+-]+/)+[\w.{}@+-]*[\w}]",
          check=_path_ok, needs="/"),
    _rule("path", r"^(?:---|\+\+\+) [ab]/(\S+)", (1,), needs="/"),
    _rule("file", rf"(?<![\w/.-])[\w-]+(?:\.[\w-]+)*\.(?:{_FILE_EXTS})\b(?![\w-])", needs="."),
    _rule("file", r"(?<![\w/.-])(?:Dockerfile|Makefile|Procfile|\.env(?:\.[\w-]+)?|\.gitignore)\b",
          needs="Dockerfile Makefile Procfile .env .gitignore"),
    _rule("domain",
          rf"(?<![\w.@/-])(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+(?:{_TLDS})\b(?![\w-]|\.[a-z])",
          needs="."),
    _rule("regex",
          r"(?<![\w)\]/.])/(?=[\^(\[\\])(?:\\.|\[(?:\\.|[^\]\\\n])*\]|[^/\\\n\[])+/[dgimsuy]*",
          needs="/"),
    _rule("regex regex", r"\b[rR]b?([\"'])((?:\\.|(?!\1)[^\\\n])*)\1", (0, 2),
          needs="\" '"),
    _rule("regex regex", rf"\bnew\s+RegExp\(\s*{_STR}(?:\s*,\s*[\"'][a-z]*[\"'])?\s*\)", (0, 2),
          needs="RegExp"),
    _rule("regex", rf"\bre\.(?:compile|match|search|fullmatch|sub|findall)\(\s*r?{_STR}", (2,),
          needs="re."),
    _rule("port port", r"(?i:\bport)[ \t]*(?:[:=][ \t]*|is[ \t]+|to[ \t]+|on[ \t]+)?(\d{2,5})\b",
          (0, 1), _port_ok, needs="port", fold=True),
    _rule("port port", "ポート[ \t]*(?:番号)?[ \t]*[:=：は]?[ \t]*(\\d{2,5})(?!\\d)", (0, 1),
          _port_ok, needs="ポート"),
    _rule("port port",
          r"(?<![\w:/.-])((?:localhost|\d{1,3}(?:\.\d{1,3}){3}|[a-z][a-z0-9-]*(?:\.[a-z0-9-]+)*))?"
          r":(\d{2,5})(?![\w.:-])", (0, 2), _port_ok, needs=":"),
    _rule("port", r"(?<![\w-])-p[ \t]+(\d{2,5}:\d{2,5})\b", (1,), needs="-p"),
    _rule("image", r"(?<![\w/.:-])((?:[a-z0-9.-]+/)*[a-z0-9][a-z0-9._-]*):([A-Za-z0-9][\w.-]*)",
          check=_image_ok, needs=":"),
    _rule("version",
          r"(?<![\w.])v?\d+\.\d+(?:\.\d+){0,2}(?:-[0-9A-Za-z][0-9A-Za-z.]*)?(?!\w|\.\d)",
          needs="."),
    _rule("error", rf"\bE(?:{_ERRNOS})\b|\bE\d{{3,5}}\b", needs="E"),
    # a tool's own error code: ``npm error code ERESOLVE``, ``npm ERR! code E404``,
    # tsc's ``error TS2304``
    _rule("error", r"\b(?:error|ERR!)[ \t]+code[ \t]+([A-Z][A-Z0-9_]{2,})\b", (1,),
          needs="code"),
    _rule("error", r"\berror[ \t]+(TS\d{4,5})\b", (1,), needs="TS"),
    _rule("error", r"\bHTTP(?:/\d(?:\.\d)?)?[ \t]+[1-5]\d\d\b", needs="HTTP"),
    _rule("error", r"\b[45]\d\d[ \t]+(?:Bad Gateway|Gateway Timeout|Service Unavailable"
          r"|Not Found|Internal Server Error|Bad Request|Unauthorized|Forbidden"
          r"|Too Many Requests|Conflict)\b",
          needs="Gateway Unavailable Found Error Request Unauthorized Forbidden Conflict"),
    _rule("error", r"\b(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Warning)\b"
          r"(?::[ \t]+[^\n`]*[^\s`.])?", needs="Error Exception Warning"),
    _rule("error", r"^(?:FAILED|ERROR|FATAL|PANIC)\b[^\n]*\S|\bpanic: [^\n]*\S",
          needs="FAILED ERROR FATAL PANIC panic:"),
    _rule("error", r"^E[ \t]{2,}(\S[^\n]*\S)", (1,), needs="E"),
    _rule("error", r"^[\w./-]+::\S+[ \t]+(?:FAILED|ERROR)\b", needs="::"),
    _rule("cron", r"(?<![\w*/,-])(?:[\d*/,-]+[ \t]+){4}[\d*/,-]+(?![\w*/,-])", check=_cron_ok,
          needs="* /"),
    _rule("cron", r"(?<!\w)@(?:yearly|annually|monthly|weekly|daily|hourly|reboot)\b",
          needs="@"),
    _rule("arxiv", r"\b(?i:arxiv):[ \t]?\d{4}\.\d{4,5}(?:v\d+)?\b", needs=":"),
    _rule("arxiv_id", r"(?<![\w.])\d{4}\.\d{4,5}(?:v\d+)?(?!\w|\.\d)", check=_arxiv_ok,
          needs="."),
    _rule("hash", r"\b[0-9a-f]{7,40}\b", check=_has_digit_and_letter),
    _rule("identifier", r"\b[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?=\()", needs="("),
    _rule("identifier", r"\b[a-z][a-z0-9]*[A-Z][A-Za-z0-9]*\b"),
    _rule("identifier", r"\b[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]*\b"),
    _rule("identifier", r"\b_*[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b", needs="_"),
    _rule("identifier", r"\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b", needs="_"),
    _rule("identifier", r"(?<![\w./-])[a-z][a-z0-9]+(?:-[a-z0-9]+)+(?![\w/-]|\.\w)", needs="-"),
    _rule("flag", r"(?<![\w-])--[a-z][\w-]*(?:=[^\s'\"`]+)?", needs="--"),
    _rule("quoted", r"`([^`\n]{1,120})`", (1,), needs="`"),
    _rule("quoted", r"[:=][ \t]*\"([^\"\n]{1,120})\"", (1,), needs="\""),
    _rule("quoted", r"[:=][ \t]*'([^'\n]{1,120})'", (1,), needs="'"),
    _rule("quoted", "「([^」\n]{1,80})」", (1,), needs="「"),
    _rule("quoted", r"^[ \t]*(?:-[ \t]+)?[a-z_][\w.-]*:[ \t]+([^\s#'\"][^\n#]{0,80}?)[ \t]*$",
          (1,), needs=":"),
)

_STRIP_KINDS = frozenset(
    {"url", "path", "endpoint", "env", "env_value", "image", "flag", "version"}
)

# ---- scanning -------------------------------------------------------------------------
#: Lines holding one of these (any case) are always scanned, however long the text.
ERROR_WORDS = (
    "error", "fail", "exception", "traceback", "panic", "fatal", "refused", "denied",
    "timeout", "timed out", "critical",
)
_ASCII_LOWER = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}


def scan_segments(text: str, max_lines: int = MAX_SCAN_LINES) -> list[tuple[int, str]]:
    """``(offset, piece)`` pieces of ``text`` worth scanning.

    Short texts are one piece. Longer ones: the first and last lines plus every line
    holding one of :data:`ERROR_WORDS`, each kept whole. Uses ``str.find`` (not a
    case-insensitive regex), which keeps a 2,000-line log at a few milliseconds.
    """
    if text.count("\n") < max_lines:
        return [(0, text)]
    return list(_long_segments(text, max_lines))


@lru_cache(maxsize=16)
def _long_segments(text: str, max_lines: int) -> tuple[tuple[int, str], ...]:
    """:func:`scan_segments` of a long text (cached: the facts and the typed values of an
    observation scan the same event texts)."""
    head_end = _nth_newline(text, _EDGE_LINES, 0)
    tail_start = _nth_newline_back(text, _EDGE_LINES)
    pieces = [(0, text[:head_end])]
    for line_start in _error_line_starts(text, head_end, tail_start):
        line_end = text.find("\n", line_start)
        pieces.append((line_start, text[line_start: len(text) if line_end < 0 else line_end]))
    pieces.append((tail_start, text[tail_start:]))
    return tuple(pieces)


def _error_line_starts(text: str, start: int, stop: int) -> list[int]:
    low = text.lower()
    if len(low) != len(text):  # a few non-ASCII characters change length when lowered
        low = text.translate(_ASCII_LOWER)
    starts: set[int] = set()
    for word in ERROR_WORDS:
        i = low.find(word, start, stop)
        while i >= 0:
            starts.add(low.rfind("\n", 0, i) + 1)
            eol = low.find("\n", i)
            i = low.find(word, eol, stop) if eol >= 0 else -1
    return sorted(starts)


def _nth_newline(text: str, n: int, pos: int) -> int:
    for _ in range(n):
        pos = text.index("\n", pos) + 1
    return pos


def _nth_newline_back(text: str, n: int) -> int:
    pos = len(text.rstrip("\n"))
    for _ in range(n):
        pos = text.rindex("\n", 0, pos)
    return pos + 1


def _rule_values(piece: str, rules: tuple[_Rule, ...] = _RULES) -> Iterator[tuple[int, str, str]]:
    lowered: str | None = None
    for rule in rules:
        needs = rule.needs
        if needs:
            text = piece
            if rule.fold:
                lowered = piece.lower() if lowered is None else lowered
                text = lowered
            if len(needs) == 1:
                if needs[0] not in text:
                    continue
            elif not any(n in text for n in needs):
                continue
        for m in rule.pattern.finditer(piece):
            if rule.check is not None and not rule.check(m):
                continue
            for kind, g in zip(rule.kinds, rule.groups, strict=True):
                value = m.group(g)
                if value and kind in _STRIP_KINDS:
                    value = value.rstrip(_TAIL_PUNCT)
                if value and value.strip() == value:
                    yield m.start(g), kind, value


def extract_typed_values(text: str, max_lines: int = MAX_SCAN_LINES) -> list[tuple[str, str]]:
    """``(kind, value)`` of every exact value, deduplicated by value, in first-seen order.

    Kinds: url, endpoint, path, nodeid, file, domain, email, env, env_name, env_value,
    regex, port, image, version, error, cron, arxiv, arxiv_id, hash, identifier, flag,
    quoted, sql, sql_table, sql_column. Texts up to :data:`CACHE_MAX_CHARS` are cached
    (agents repeat commands, outputs and messages; the result is a pure function).
    """
    if len(text) <= CACHE_MAX_CHARS:
        return list(_cached_typed_values(text, max_lines))
    return _typed_values(text, max_lines)


#: Texts up to this size have their values cached (LRU of :data:`CACHE_ENTRIES`).
CACHE_MAX_CHARS = 8192
CACHE_ENTRIES = 4096


@lru_cache(maxsize=CACHE_ENTRIES)
def _cached_typed_values(text: str, max_lines: int) -> tuple[tuple[str, str], ...]:
    return tuple(_typed_values(text, max_lines))


def _typed_values(text: str, max_lines: int) -> list[tuple[str, str]]:
    found: list[tuple[int, int, str, str]] = []
    for offset, piece in scan_segments(text, max_lines):
        for pos, kind, value in _rule_values(piece):
            found.append((offset + pos, -len(value), kind, value))
        for pos, kind, value in sql_values(piece):
            found.append((offset + pos, -len(value), kind, value))
    found.sort()
    seen: dict[str, str] = {}
    for _pos, _neg_len, kind, value in found:
        seen.setdefault(value, kind)
    return [(kind, value) for value, kind in seen.items()]


def value_kinds(text: str, max_lines: int = MAX_SCAN_LINES) -> frozenset[str]:
    """Every kind a rule reads a value of ``text`` as. :func:`extract_typed_values` names
    a value once (its first kind: ``"POSTGRES_15"`` is an identifier there); a line
    holding a quoted value is one for a question about quoted values all the same."""
    kinds: set[str] = set()
    for _o, piece in scan_segments(text, max_lines):  # segmented once for both rule sets
        kinds.update(kind for _p, kind, _v in _rule_values(piece))
        kinds.update(kind for _p, kind, _v in sql_values(piece))
    return frozenset(kinds)


#: Every kind some rule can name (a question may ask for others, e.g. "command").
VALUE_KINDS = frozenset(k for rule in _RULES for k in rule.kinds) | SQL_KINDS


@lru_cache(maxsize=64)
def _rules_of(kinds: frozenset[str]) -> tuple[_Rule, ...]:
    return tuple(rule for rule in _RULES if kinds.intersection(rule.kinds))


def holds_kind(text: str, kinds: frozenset[str], max_lines: int = MAX_SCAN_LINES) -> bool:
    """Whether :func:`extract_typed_values` finds a value of one of ``kinds`` in ``text``.

    Same answer, cheaper: when no rule that can emit those kinds matches (most lines),
    the other rules never run; otherwise the full (cached) extraction decides.
    """
    if not kinds & SQL_KINDS:
        rules = _rules_of(kinds)
        if not any(True for _o, piece in scan_segments(text, max_lines)
                   for _v in _rule_values(piece, rules)):
            return False
    return any(kind in kinds for kind, _v in extract_typed_values(text, max_lines))


def extract_exact_values(text: str, max_lines: int = MAX_SCAN_LINES) -> list[str]:
    """Every exact surface form in ``text`` (verbatim substrings), deduplicated, first-seen order.

    Texts longer than ``max_lines`` lines are scanned by head, tail and error lines.
    """
    return [value for _kind, value in extract_typed_values(text, max_lines)]

