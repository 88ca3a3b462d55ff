"""Recall in four steps — Retrieve → Decide → Recall → Extract — as a pipeline of named
stages (:mod:`.pipeline`): analyze (:mod:`.query`) → retrieve (:mod:`.retrieve`) →
decide (:mod:`.decide`) → recall (:mod:`.sources`) → extract (:mod:`.extract`) →
respond. The values they hand each other are in :mod:`.stages`; docs/recall.md walks
through them.
"""

from breadcrumb.query_api.recall.extract.cut import Quoter
from breadcrumb.query_api.recall.pipeline import RecallService
from breadcrumb.query_api.recall.rank import Candidate, ScoreWeights

__all__ = ["Candidate", "Quoter", "RecallService", "ScoreWeights"]
