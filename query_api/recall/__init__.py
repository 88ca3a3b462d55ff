"""Recall in four steps — Retrieve → Decide → Recall → Extract — as a pipeline of named
stages (:mod:`.pipeline`): analyze (:mod:`.query`) → retrieve (:mod:`.retrieve`) →
decide (:mod:`.decide`) → recall (:mod:`.sources`) → extract (:mod:`.extract`) →
respond (:mod:`.respond`). The modules import in that order: each stage imports the
values they hand each other (:mod:`.stages`), the stages before it and the shared
lower modules (:mod:`.question`, :mod:`.lines`, :mod:`.rank`, :mod:`.raw_reads`, ...),
never a later stage (an import-linter layers contract, pyproject.toml); docs/recall.md
walks through them.
"""

from breadcrumb.query_api.recall.extract.cut import Quoter
from breadcrumb.query_api.recall.pipeline import RecallService
from breadcrumb.query_api.recall.rank import ScoreWeights
from breadcrumb.query_api.recall.stages import Candidate

__all__ = ["Candidate", "Quoter", "RecallService", "ScoreWeights"]
