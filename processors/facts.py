"""Keyed exact values (facts) of a range, so a later change of the same key is detectable.

Keys:

* ``env:NAME`` — ``NAME=value`` in messages, commands, output and non-code files;
* ``file:<path>#key`` — ``key: value`` (YAML-ish) and ``"key": value`` (JSON) of a
  file: a config-file edit, or a tool's output when its call names the file it read
  (:mod:`.calls`); the path is the event's ``attrs.path`` or the one the call names.
  Never in chat messages, nor in output that names no file: ``error: Entry … not
  uptodate`` of a git command, ``status: TODO`` of a task list and ``name: apply-grant``
  of one skill file are not settings of the tenant that a later ``error:``, ``status:``
  or ``name:`` line anywhere would change;
* ``file:<path>#NAME`` (or ``symbol:NAME`` without ``attrs.path``) — constants in code
  edits (``const EMAIL_RE = /.../``, ``EMAIL_RE = re.compile(...)``);
* ``port:<NAME>`` / ``port:<service>`` — a port keyed by the setting it is written in:
  the nearest ``UPPER_SNAKE`` name before it on its line, exactly as written, when the
  port is that name's own value (``REDIS_PORT=6379`` → ``port:REDIS_PORT``,
  ``REDIS_URL=redis://cache:6379/0`` → ``port:REDIS_URL``, ``getenv("ORDERS_URL",
  "redis://c:46903/0")``, ``DB_PORT from 5432 to 6432``), else the service word the line
  names (``postgres listens on port 5432`` → ``port:postgres``). A name whose own value
  ends before the port is not its setting: in ``(LOGIN_RATE_LIMIT = "5/minute"); …
  Redis at redis://cache.internal:6380/2`` the port is Redis's, not the rate limit's.
  Two settings of one service (``REDIS_PORT`` and ``REDIS_SENTINEL_PORT``) are two keys:
  only a change of the same one supersedes;
* ``image:<name>`` — a docker image tag (``postgres:16-alpine`` → ``16-alpine``);
* ``session:<thread>#<setting>`` — what a session ran with (``model``, ``provider``,
  ``agent_version``, ``working_directory``, ``git_branch``), from a note whose
  ``attrs.session_settings`` names them (the importers write it where the transcript
  records them): facts of that thread, which a value of another thread or a later change
  never supersedes (:mod:`.supersession`).

Values are verbatim substrings of the event. Removed diff lines (``-...``) are ignored.
The last assignment of a key in the range wins.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

from breadcrumb.processors.calls import MAX_CALL_CHARS, calls_of
from breadcrumb.processors.hints import extract_typed_values, scan_segments
from breadcrumb.processors.supersession import SESSION_KEY
from breadcrumb.topics.records import Event, Fact

_F = re.ASCII | re.MULTILINE
_TAIL = ".,;:)'\""
_CODE_EXTS = frozenset("py ts tsx js jsx mjs cjs go rs java kt rb php cs swift scala".split())
_ENV = re.compile(r"(?<![\w$.-])([A-Z][A-Z0-9_]+)=(\"[^\"\n]*\"|'[^'\n]*'|[^\s'\"`]+)", _F)
_YAML_LINE = re.compile(
    r"(\+?[ \t]*(?:-[ \t]+)?)([A-Za-z_][\w.-]*):(?:[ \t]*$|[ \t]+([^\s#][^\n#]*?)[ \t]*$)",
    re.ASCII,
)
_PROSE_KEY = re.compile(r"[A-Z][a-z]+$")  # "Tests: 2 passed" is a report line, not config
_JSON = re.compile(
    r"\"([\w.-]+)\"\s*:\s*(\"(?:\\.|[^\"\\\n])*\"|-?\d+(?:\.\d+)?|true|false|null)", _F
)
_CONST_JS = re.compile(
    r"^[+ \t]*(?:export[ \t]+)?(?:const|let|var|final|static[ \t]+final)[ \t]+([A-Za-z_$][\w$]*)"
    r"[ \t]*(?::[^=\n]+?)?[ \t]*=(?!=)[ \t]*([^\n]*?)[ \t]*;?[ \t]*$",
    _F,
)
_CONST_PY = re.compile(
    r"^\+?([A-Z][A-Z0-9_]*)[ \t]*(?::[^=\n]+?)?[ \t]*=(?!=)[ \t]*([^\n]*?)[ \t]*$", _F
)
_IMAGE = re.compile(
    r"(?<![\w/.:-])((?:[a-z0-9.-]+/)*([a-z0-9][a-z0-9._-]*)):([A-Za-z0-9][\w.-]*[\w])", _F
)
_KNOWN_IMAGES = frozenset(
    "postgres redis node python nginx mysql mariadb kafka alpine ubuntu debian golang pgbouncer"
    " mongo rabbitmq elasticsearch qdrant minio memcached httpd traefik caddy".split()
)
_IMAGE_CONTEXT = re.compile(r"(?i)\bimage\b|^\s*FROM\s|\bdocker\b|\bpodman\b", _F)
_PORT = re.compile(
    r"(?i:\bport)[ \t]*(?:[:=][ \t]*|is[ \t]+|to[ \t]+|on[ \t]+)?(\d{2,5})\b"
    r"|ポート[ \t]*(?:番号)?[ \t]*[:=：は]?[ \t]*(\d{2,5})(?!\d)"
    r"|(?<![\w-])-p[ \t]+(\d{2,5}):\d{2,5}\b"
    r"|\b[A-Z][A-Z0-9_]*_PORT=(\d{2,5})\b"
    r"|(?<=[a-z0-9@]):(\d{4,5})(?![\w.:-])",
    _F,
)
_SERVICE_WORD = re.compile(
    r"(?i)\b(postgres(?:ql)?|pgbouncer|redis|mysql|mariadb|mongo(?:db)?|nginx|kafka|rabbitmq"
    r"|elasticsearch|qdrant|minio|memcached|api|web|frontend|backend|grafana|prometheus)\b"
)
#: the setting a port is written in: an UPPER_SNAKE name (``REDIS_SENTINEL_PORT``,
#: ``"ORDERS_URL"``), or a one-word upper-case name assigned with ``=`` (``PORT=8080``)
_SETTING_NAME = re.compile(r"(?<![\w$.-])([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+|[A-Z][A-Z0-9]+(?==))\b",
                           re.ASCII)
_SERVICE_ALIASES = {"postgresql": "postgres", "mongodb": "mongo"}
#: a setting name's own assignment — ``= value``, ``:= value``, ``: type = value``,
#: ``NAME: value`` — and its value: a quoted string, a bracketed list, or the text up to
#: the first space. A port after that value is not the setting's (``(LOGIN_RATE_LIMIT =
#: "5/minute"); … Redis at redis://cache.internal:6380/2``) ...
_VALUE = (r"(?:\[[^\]\n]*\]?|\([^)\n]*\)?|\{[^}\n]*\}?|\"[^\"\n]*\"?|'[^'\n]*'?|`[^`\n]*`?"
          r"|[^\s\"'`]*)")
_ASSIGNED = re.compile(r"[\"'`]?[ \t]*(?::[^=\n\"'`]{1,40}?)?:?=(?!=)[ \t]*" + _VALUE
                       + r"|[\"'`]?[ \t]*:[ \t]*" + _VALUE)
#: the port of a URL (``redis://cache-8:`` right before it)
_IN_URL = re.compile(r"://[\w.-]+:$")
#: ... nor a port in a later sentence (``LOGIN_RATE_LIMIT is 5/minute. Redis listens on
#: port 6380``) or on a later line of JSON-escaped text (``NEO4J_AUTH: x\\n  ports: …``)
_SENTENCE_END = re.compile(r"[.!?;。](?:\s|$)|\\n")  # \n: a line of JSON-escaped text


def extract_facts(events: Sequence[Event]) -> list[Fact]:
    """Keyed exact values of ``events``; the last assignment of each key wins.

    Deterministic; ordered by where each winning assignment occurs.
    """
    latest: dict[str, Fact] = {}
    calls = calls_of(events)
    for position, event in enumerate(events):
        index = event.index if event.index is not None else position
        for key, value in _event_facts(event, calls.get(event.event_id)):
            latest.pop(key, None)  # re-insert so order follows the winning assignment
            latest[key] = Fact(key, value, event.event_id, index)
    return list(latest.values())


def _event_facts(event: Event, call: str | None = None) -> Iterator[tuple[str, str]]:
    """``call``: the call a tool result answers; the file it names is the output's file
    (``sed -n 1,80p app/SKILL.md``, ``{"filePath": ".../docker-compose.yml"}``)."""
    yield from session_settings(event)
    path = str(event.attrs.get("path") or "") or (_named_path(call) if call else None)
    is_code = path is not None and path.rsplit(".", 1)[-1].lower() in _CODE_EXTS
    for _offset, piece in scan_segments(_live_text(event)):
        if event.kind == "file_edit" and is_code:
            yield from _constants(piece, path)
        else:
            yield from _env(piece)
        if event.kind != "message" and not is_code and path is not None:
            yield from _config(piece, path)
        yield from _images(piece)
        yield from _ports(piece)


def session_settings(event: Event) -> Iterator[tuple[str, str]]:
    """``(session:<thread>#<name>, value)`` of a settings note: each value its
    ``attrs.session_settings`` names that stands verbatim in its content."""
    settings = event.attrs.get("session_settings")
    if event.kind != "note" or not isinstance(settings, dict):
        return
    for name, value in settings.items():
        if isinstance(value, str) and value and value in event.content:
            yield f"{SESSION_KEY}{event.thread_id}#{name}", value


def _named_path(call: str) -> str | None:
    """The first file path a call names, if any."""
    for kind, value in extract_typed_values(call[:MAX_CALL_CHARS]):
        if kind == "path":
            return value
    return None


def _live_text(event: Event) -> str:
    """The content without removed diff lines (``-old``) of a file edit."""
    if event.kind != "file_edit" or "\n-" not in "\n" + event.content:
        return event.content
    lines = event.content.split("\n")
    return "\n".join(
        "" if ln.startswith("-") and not ln.startswith("---") else ln for ln in lines
    )


def _env(text: str) -> Iterator[tuple[str, str]]:
    for m in _ENV.finditer(text):
        value = m.group(2).rstrip(_TAIL) if m.group(2)[0] not in "\"'" else m.group(2)
        if value:
            yield f"env:{m.group(1)}", value


def _config(text: str, path: str | None) -> Iterator[tuple[str, str]]:
    prefix = f"file:{path}#" if path else "config:"
    parents: list[tuple[int, str]] = []  # (indent, key) of enclosing YAML mappings
    for line in text.split("\n"):
        m = _YAML_LINE.match(line)
        if m is None or _PROSE_KEY.match(m.group(2)):
            continue
        indent = len(m.group(1))
        while parents and parents[-1][0] >= indent:
            parents.pop()
        if m.group(3) is None:
            parents.append((indent, m.group(2)))
        else:
            yield prefix + ".".join([k for _i, k in parents] + [m.group(2)]), m.group(3)
    for m in _JSON.finditer(text):
        raw = m.group(2)
        yield prefix + m.group(1), raw[1:-1] if raw.startswith('"') else raw


def _constants(text: str, path: str | None) -> Iterator[tuple[str, str]]:
    prefix = f"file:{path}#" if path else "symbol:"
    found = [(m.start(), m.group(1), m.group(2)) for m in _CONST_JS.finditer(text)]
    found += [(m.start(), m.group(1), m.group(2)) for m in _CONST_PY.finditer(text)]
    for _pos, name, value in sorted(found):
        if value:
            yield prefix + name, value


def _images(text: str) -> Iterator[tuple[str, str]]:
    for m in _IMAGE.finditer(text):
        name, short, tag = m.group(1), m.group(2), m.group(3)
        if tag.isdigit() and len(tag) >= 3:
            continue  # host:port
        if not any(c.isdigit() for c in tag) and tag not in ("latest", "alpine", "slim"):
            continue
        line = _line_at(text, m.start())
        if short in _KNOWN_IMAGES or _IMAGE_CONTEXT.search(line):
            yield f"image:{name}", tag


def _ports(text: str) -> Iterator[tuple[str, str]]:
    for m in _PORT.finditer(text):
        group = next(i for i, g in enumerate(m.groups(), 1) if g is not None)
        port = m.group(group)
        if not 0 < int(port) < 65536:
            continue
        col = m.start(group) - _line_start(text, m.start())
        setting = _setting(_line_at(text, m.start()), col)
        if setting:
            yield f"port:{setting}", port


def _setting(line: str, col: int) -> str | None:
    """The setting a port at ``col`` of ``line`` is written in: the nearest upper-case
    setting name before it, as written; else the nearest service word (before it, else
    the line's first)."""
    names = [m for m in _SETTING_NAME.finditer(line, 0, col)]
    if names and _holds_port(line, names[-1].end(), col):
        return names[-1].group(1)
    words = list(_SERVICE_WORD.finditer(line))
    if not words:
        return None
    before = [w for w in words if w.start() < col]
    word = (before[-1] if before else words[0]).group(1).lower()
    return _SERVICE_ALIASES.get(word, word)


def _holds_port(line: str, end: int, col: int) -> bool:
    """Whether the port at ``col`` is the value of the setting name ending at ``end``:
    not when the name's own assignment ends before it (``_ASSIGNED``), nor when a
    sentence ends between them; prose between them may say what the value becomes
    (``DB_PORT is now set to http://db:6432``)."""
    assigned = _ASSIGNED.match(line, end)
    if assigned is not None and assigned.end() < col:
        return False
    if _IN_URL.search(line, 0, col):  # a URL's port is the value its sentence is about
        return True  # (``… ignores RETRY_URL. Reading it … with default redis://h:63292/0``)
    return _SENTENCE_END.search(line, end, col) is None


def _line_start(text: str, pos: int) -> int:
    return text.rfind("\n", 0, pos) + 1


def _line_at(text: str, pos: int) -> str:
    end = text.find("\n", pos)
    return text[_line_start(text, pos): len(text) if end < 0 else end]
