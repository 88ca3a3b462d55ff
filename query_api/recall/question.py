"""What a question asks for: the readings every stage shares, and the analysed :class:`Query`.

:func:`analyze_query` reads what *kind* of exact value a question asks for (regex, port,
image, SQL, ...), whether it asks for the newest or the first value, for a failure, or
for what the user said; Retrieve uses it for ranking, Decide and Extract for choosing
lines. :func:`named_literal` is the one definition of a literal a question names
(``DB_PORT``, ``validate-email.ts``, ``retryCount``), read two ways (see there).
The pipeline's first stage, :func:`.query.analyze`, makes the :class:`Query` once; every
later stage reads it (and these pure functions), never the stage again.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

#: Words of a question -> the kinds of exact value (processors.hints kinds) it asks for.
_KIND_WORDS: tuple[tuple[re.Pattern[str], tuple[str, ...]], ...] = tuple(
    (re.compile(p, re.IGNORECASE), kinds) for p, kinds in (
        (r"\bregex|regexp|regular expression|pattern|正規表現", ("regex",)),
        (r"\bports?\b|ポート", ("port", "env")),
        (r"\benv\b|environment|variable|\bset to\b|config|環境変数|設定", ("env", "quoted")),
        (r"\bimages?\b|\btags?\b|イメージ|タグ|docker", ("image", "version")),
        (r"\bsql\b|\bquery\b|クエリ|売上", ("sql",)),
        (r"\bcolumns?\b|カラム|列", ("sql_column", "sql")),
        (r"\btables?\b|テーブル", ("sql_table", "sql")),
        (r"\bendpoint|\bapi\b|\broute|エンドポイント", ("endpoint",)),
        (r"\burl\b|\blink\b", ("url",)),
        (r"\bpath\b|\bfile\b|パス|ファイル", ("path", "file")),
        (r"\bcron\b|schedule|スケジュール", ("cron",)),
        (r"\berror|exception|fail|broke|crash|落ち|失敗|エラー", ("error", "nodeid")),
        (r"\bpapers?\b|arxiv|論文", ("arxiv", "arxiv_id")),
        (r"\bfunction|method|関数", ("identifier",)),
        (r"\bdomains?\b|ドメイン", ("env", "domain")),
        # "which command": a command line (what a question's shape asks for — "which
        # script did we run", "how did we retire …" — is :data:`_SHAPED`, read over the
        # whole question)
        (r"\bcommands?\b|コマンド", ("command",)),
        # "which test checks / graded ...": a test's node id or its function name
        (r"\bwhich\b[^?]*\btests?\b|\bpytest\b|どのテスト", ("nodeid", "identifier")),
        (r"\bversion|\bpin(?:s|ned)?\b|バージョン", ("version",)),
    )
)
#: A question for the current value ("now", "latest", "今", "変更後") ...
_NEWEST = re.compile(
    r"\b(current(ly)?|now|latest|newest|today|most recent|after|up[- ]to[- ]date|these days)\b"
    r"|今|現在|最新|最近|後の|(対策|変更|修正|更新|移行)後",
    re.IGNORECASE,
)
#: ... or for the first / an earlier one ("original", "previous", "最初", "元の", "前の").
#: "前の" after a number or a time unit ("2日前の") means "ago", not "previous".
_OLDEST = re.compile(
    r"\b(first|original(ly)?|initial(ly)?|before|at first|earliest|used to|(?<!how )old(er)?"
    r"|previous(ly)?|prior|former(ly)?|back then)\b"
    r"|最初|当初|元々|もともと|初め|はじめ|以前|元の|(?<![復新])旧|(?<![\d０-９一二三四五六七八九十数日週月年分秒間])前の"
    r"|(対策|変更|修正|更新|移行)前",
    re.IGNORECASE,
)
_FAILURE = re.compile(r"\b(fail\w*|error\w*|broke\w*|crash\w*|exception|reject\w*|refus\w*"
                      r"|invalid|denied|complain\w*|went wrong|go(?:es)? wrong)\b"
                      # "why couldn't task-master create the tag", "why isn't it working"
                      r"|\bwhy (?:could|can|would|will|did|does|do|is|was|are|were)"
                      r"(?:n[’']?t| not)\b"
                      r"|\bwhy (?:can ?not|won[’']?t)\b|\bnot work(?:ing|s)?\b|n[’']?t work\b"
                      r"|落ち|失敗|エラー",
                      re.IGNORECASE)
#: "what the user said / asked", "ユーザーの発言": the answer is one of the user's own turns.
_USER_WORDS = re.compile(
    r"(?i)\b(the|our) (user|customer|client)('s)? (said|says|say|asked|asks|ask|wrote|writes"
    r"|typed|requested|request|told|words|message|request(ed)?|wanted)\b"
    r"|\b(user|customer)'s (own )?(words|message|request)\b"
    r"|ユーザー(さん)?(の(発言|言葉|依頼|要望|メッセージ)|が(言|書|頼|依頼|求|指示))"
)

#: A request for advice or a recommendation ("any tips on what to bake?", "can you recommend
#: some resources …?", "何かおすすめは？"): the answer is tailored to what the user said of
#: themselves (their tools, their last success, their plans), so their own turns lead.
_ADVICE = re.compile(
    r"(?i)\b(any|some|a few) (tips|suggestions|ideas|advice|recommendations)\b"
    r"|\bcan you (recommend|suggest)\b|\bwould (it|that) be a good idea\b"
    r"|おすすめ|オススメ|アドバイス|提案して"
)


@dataclass(frozen=True, slots=True)
class QueryIntent:
    """What a question asks for: value kinds, a time preference, failures."""

    kinds: frozenset[str]
    temporal: str | None  # "newest" | "oldest" | None
    failure: bool
    role: str | None = None  # "user": the question asks for what the user said
    #: "how many tests / modules / schema pages …": the thing counted (its stem), whose
    #: count line (``Ran 73 tests across 10 files``) is the answer
    counted: str | None = None
    #: "which bike did I fix", "my", "me", without "you": the asker's own turns say it
    first_person: bool = False

    @property
    def failure_asked(self) -> bool:
        """A failure question, or one for an error value ("which error …")."""
        return self.failure or "error" in self.kinds


_HOW_MANY = re.compile(r"(?i)\bhow many\s+([a-z][a-z_-]{2,})")
#: "how many days did it take … after …": time elapsed between two events; its "after"
#: names the second event, not a current value
_ELAPSED = re.compile(
    r"(?i)\bhow (many|much) (days|weeks|months|years|hours|minutes|time)\b"
    r"|\bhow long (did|does|do|had|has|have|was|were|will)\b"
    r"|何(日|週間|か月|ヶ月|カ月|年|時間)(かか|経|たっ|後)"
)
_AFTER = re.compile(r"(?i)\bafter\b|後の|(対策|変更|修正|更新|移行)後")
_FIRST_PERSON = re.compile(r"(?i)\b(i|me|my|mine|myself)\b|私|僕|俺|自分")
_SECOND_PERSON = re.compile(r"(?i)\b(you|your|yours)\b|あなた")


#: "which X", "what X": the thing asked for comes right after the question word ...
_WH = re.compile(r"(?i)\b(?:which|what)\b")
#: ... up to the verb ("which Swashbuckle version *does* …", "what volume mount *did* …")
_AUX = re.compile(r"(?i)\b(?:did|does|do|is|are|was|were|has|have|had|should|can|could|will"
                  r"|would|we|i|you|they|it|in|of|for|on|at|to|from|with|about|by)\b|[?,;:]")
ASKED_WORDS = 4  # at most this many words after the question word name the thing asked


def asked_phrase(query: str) -> str | None:
    """The words naming what an English question asks for — the question word and up to
    :data:`ASKED_WORDS` words before its verb ("Which Swashbuckle version", "what volume
    mount") — or None where there are none ("What did odoo complain about …", "How did we
    retire …", a Japanese question): then the whole question names the kinds."""
    return _asked_after(query, _WH.search(query))


def _asked_after(query: str, wh: re.Match[str] | None) -> str | None:
    """:func:`asked_phrase` from the question word found (``wh``, searched once)."""
    if wh is None:
        return None
    rest = query[wh.end():]
    verb = _AUX.search(rest)
    words = (rest if verb is None else rest[:verb.start()]).split()
    return f"{wh.group(0)} {' '.join(words[:ASKED_WORDS])}" if words else None


def named_by_kind(query: str) -> tuple[str, ...]:
    """The words that name the value a question asks for a kind of: "Which *Next.js*
    version did the … build report" → ``("Next.js",)``, "what *Redis* port" → ``("Redis",)``;
    none when the asked phrase (:func:`asked_phrase`) holds no kind word ("which PBI",
    "what field") or nothing beside it. The rest of the question says where it was said."""
    phrase = asked_phrase(query)
    if phrase is None:
        return ()
    words = phrase.split()[1:]
    named = tuple(w for w in words if not any(p.search(w) for p, _k in _KIND_WORDS))
    return named if len(named) < len(words) else ()


#: what a question's shape asks for, read over the whole question: "which script did we
#: run …", "with which model and flags did I start …", "how did we retire …"
_SHAPED = re.compile(r"(?i)\bscript\b.*\b(?:run|ran)\b|\b(?:what|how) did (?:we|i) (?:install"
                     r"|run|execute|start|launch|retire|rename|remove|delete|deploy)\b"
                     r"|\bflags?\b[^?]*\b(?:start|run|launch)")


#: a dotenv file named anywhere in the question (``.env``, ``.env.local``): what it holds
#: is asked for, ``KEY=value`` lines (held-out hn1, ka1)
_DOTENV = re.compile(r"(?<![\w.])\.env(?:\.[\w-]+)?(?![\w.-])")


def _kinds_in(text: str) -> set[str]:
    kinds: set[str] = set()
    for pattern, found in _KIND_WORDS:
        if pattern.search(text):
            kinds.update(found)
    return kinds


def analyze_query(query: str) -> QueryIntent:
    """Value kinds asked for, newest/oldest preference and failure interest of a query.

    The kinds are those the words naming the thing asked for name (:func:`asked_phrase`:
    "which Swashbuckle version does the … project *file* reference" asks for a version,
    not a path; "what field … instead of separate *image* fields" for no kind), else
    those of the whole question."""
    wh = _WH.search(query)
    asked = _asked_after(query, wh)
    kinds = _kinds_in(query if asked is None else asked)
    shaped = _SHAPED.search(query) is not None
    if shaped:
        kinds.add("command")
    if _DOTENV.search(query):
        kinds.add("env")
    # a command asked for ("which command … show only errors") is no failure question; a
    # failure named before the question word is context ("after the CI step complained
    # about …, which pnpm pin …"), so is a command named after it ("what did odoo
    # complain about when we passed … to the upgrade command")
    main = query if wh is None else query[wh.start():]
    command_asked = "command" in kinds and (asked is not None or shaped)
    dated = _AFTER.sub(" ", query) if _ELAPSED.search(query) else query
    newest, oldest = bool(_NEWEST.search(dated)), bool(_OLDEST.search(dated))
    temporal = "newest" if newest and not oldest else "oldest" if oldest and not newest else None
    failure = bool(_FAILURE.search(main)) and not command_asked
    advice = not kinds and not failure and _ADVICE.search(query) is not None
    role = "user" if advice or _USER_WORDS.search(query) else None
    many = _HOW_MANY.search(query)
    counted = many.group(1).lower().removesuffix("s") if many else None
    mine = bool(_FIRST_PERSON.search(query)) and not _SECOND_PERSON.search(query)
    return QueryIntent(frozenset(kinds), temporal, failure, role, counted or None, mine)


#: What a named literal looks like, one table. Two readings of it (their alternatives, in
#: this order) are kept apart because recall's answers depend on each as it is:
#: ``"decide"`` (a literal that makes a question need the source; its match is quoted in
#: the decision's reason) and ``"precise"`` (a literal that makes the word-exact cut come
#: first: also snake_case words, camelCase names and any short file extension).
_LITERAL_PARTS = {
    "backticked": r"`[^`]+`",
    "constant": r"\b[A-Z][A-Z0-9]*(_[A-Z0-9]+)+\b",
    "path": r"[\w.-]+/[\w./-]+",
    "source_file": r"\b\w+\.(ts|py|js|sql|yml|yaml|json|toml)\b",
    "snake_word": r"\w+_\w+",
    "file_name": r"\w[\w-]*\.\w{1,5}\b",
    "word_path": r"[\w-]+/[\w./-]+",
    "camel_word": r"\b[a-z]+[A-Z]\w*",
}
_LITERAL_READINGS = {
    "decide": ("backticked", "constant", "path", "source_file"),
    "precise": ("snake_word", "file_name", "word_path", "camel_word", "backticked"),
}
_LITERALS = {reading: re.compile("|".join(_LITERAL_PARTS[p] for p in parts))
             for reading, parts in _LITERAL_READINGS.items()}


def named_literal(text: str, reading: Literal["decide", "precise"]) -> re.Match[str] | None:
    """The first literal ``text`` names under ``reading`` (see ``_LITERAL_PARTS``)."""
    return _LITERALS[reading].search(text)


def precise(intent: QueryIntent, text: str = "") -> bool:
    """A question for a typed value, a failure, a named literal (``DB_PORT``,
    ``validate-email.ts``, ``retryCount``) or the current value ("… now?") keeps the
    word-exact cut: its one line, the newest version first."""
    if intent.role:  # "what the user said": a speaker's turn, found by meaning
        return False
    return (bool(intent.kinds) or intent.failure or intent.temporal == "newest"
            or named_literal(text, "precise") is not None)


@dataclass(frozen=True, slots=True)
class Query:
    """A question, analysed once: intent, weighted lexical terms, dense vector."""

    text: str
    intent: QueryIntent
    terms: dict[str, float]
    dense: list[float]

    @property
    def precise(self) -> bool:
        """See :func:`precise`."""
        return precise(self.intent, self.text)

