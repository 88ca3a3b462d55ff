"""One question word, one vote: the weight a line gets for the question terms it holds.

``query_terms`` reads a compound word of a question as several terms — the path
``backend/requirements.txt`` is ``backend/requirements.txt``, ``backend``,
``requirements.txt``, ``requirements``, ``txt`` and the stem ``requirement`` — so a line
that merely names the path held 5.7 points of question weight, and a line holding the
value asked for (``slowapi==0.1.9``: one question word and the kind) lost to every line
about the file (real session a03). The terms of a question word that names a file or a
path are one :class:`TermGroups` group here: a line gets the best of them and a small
share (:data:`EXTRA`) of the rest, so the whole path still beats a bare ``txt``. Other
words (identifiers, CJK pieces, translations) keep their terms apart.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from breadcrumb.processors.lexical import query_terms, with_verb_forms

#: a file or a path (``backend/requirements.txt``, ``.env.example``, ``settings.py``): where
#: a value lives, not the value. An identifier (``MAX_DEBUG_ATTEMPTS``, ``AWLEN_CP``)
#: is what is asked for: its pieces keep counting apart, a line holding all of them is it.
_PLACE = re.compile(r"\w[/.]\w|^\.\w")
#: what each further term of one question word adds, as a share of its weight
EXTRA = 0.1


class TermGroups:
    """The question words' terms, grouped, for summing a line's held terms."""

    __slots__ = ("terms", "group")

    def __init__(self, question: str, terms: dict[str, float]) -> None:
        self.terms = terms
        self.group: dict[str, int] = {}
        for n, word in enumerate(question.split()):
            if not _PLACE.search(word.strip("?!.,;:()'\"`")):
                continue
            parts = [t for t in with_verb_forms(query_terms(word)) if t in terms and t.isascii()]
            if len(parts) > 1:
                for t in parts:
                    self.group.setdefault(t, n)

    def weight(self, held: Iterable[str]) -> float:
        """The question weight of the held terms (each a key of ``terms``): a group's best
        term plus :data:`EXTRA` of its others; a term of no group, its weight."""
        total = 0.0
        best: dict[int, float] = {}
        rest = 0.0
        for t in held:
            v = self.terms[t]
            g = self.group.get(t)
            if g is None:
                total += v
                continue
            top = best.get(g)
            if top is None:
                best[g] = v
            elif v > top:
                best[g] = v
                rest += top
            else:
                rest += v
        return total + sum(best.values()) + EXTRA * rest
