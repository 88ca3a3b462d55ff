"""One token budget for the whole answer: the listed memories' summaries, then evidence.

``max_tokens`` bounds a RecallResponse's ``token_cost`` (summaries + evidence). Memories
are listed in rank order while their summaries fit in a share of it (all of it for a
summary answer, :data:`SUMMARY_SHARE` when evidence is sought: a busy range's long summary
must not leave the exact lines no room); the best memory is always listed. The evidence
(word-exact cut, lines by meaning and the fresh tail alike) gets what the listed summaries
leave, and at least :data:`EVIDENCE_FLOOR` of ``max_tokens``: only when the best summary
alone takes more than the rest does ``token_cost`` pass ``max_tokens``. Pure.
:func:`fitted` applies it to Retrieve's value once Decide has classified the question.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from breadcrumb.query_api.recall.stages import Retrieved

#: share of ``max_tokens`` the listed summaries may take when evidence is sought
SUMMARY_SHARE = 0.5
#: share of ``max_tokens`` the evidence always gets
EVIDENCE_FLOOR = 0.25


def listed(summary_costs: Sequence[int], max_tokens: int, summary_only: bool) -> int:
    """How many of the ranked memories (their summaries' token counts, best first) the
    answer lists: in order while they fit in their share; the first one always."""
    share = max_tokens if summary_only else int(max_tokens * SUMMARY_SHARE)
    used = n = 0
    for cost in summary_costs:
        if n and used + cost > share:
            break
        used += cost
        n += 1
    return n


def evidence_tokens(max_tokens: int, listed_costs: Sequence[int]) -> int:
    """The evidence's budget: what the listed summaries leave, at least the floor."""
    return max(max_tokens - sum(listed_costs), int(max_tokens * EVIDENCE_FLOOR), 1)


def fitted(retrieved: Retrieved, summary_only: bool, count: Callable[[str], int]) -> Retrieved:
    """``retrieved`` with the listed memories and the evidence budget fitted to
    ``max_tokens``."""
    req = retrieved.request
    costs = [count(c.memory.summary) for c in retrieved.ranked[: req.k]]
    n = listed(costs, req.max_tokens, summary_only)
    return replace(retrieved, listed=n,
                   evidence_tokens=evidence_tokens(req.max_tokens, costs[:n]))
