"""A LoCoMo-format conversation written for the tests (no LoCoMo text in it).

LoCoMo itself (Maharana et al., 2024; CC BY-NC 4.0) is not shipped: ``breadcrumb eval``
reads it from ``--locomo-dir`` / ``BREADCRUMB_LOCOMO_DIR``. The tests need its *shape*,
which this module generates: one ``<id>.json`` per conversation with ``speaker_a``,
``speaker_b``, ``session_N_date_time`` ("1:56 pm on 8 May, 2023"), ``session_N`` (turns
``{speaker, dia_id "D<session>:<turn>", text[, blip_caption]}``) and ``qa`` (``question``,
``answer``, ``category`` 1-5, ``evidence`` dia ids). Each session mixes small talk with
facts that one question each asks for; deterministic (no randomness).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SPEAKERS = ("Noriko", "Anselm")
DATES = ("10:12 am on 3 March, 2023", "6:40 pm on 21 March, 2023",
         "8:05 am on 9 April, 2023", "2:30 pm on 30 April, 2023")
SMALL_TALK = (
    "How was your week?", "Pretty busy, but good. Yours?", "Same here, lots going on.",
    "Did you sleep well after the trip?", "Not really, the hotel was noisy.",
    "That sounds tiring.", "It was, but the food made up for it.", "Ha, it always does.",
    "Anyway, what else is new?", "Let me think for a second.",
)
#: (session, speaker, fact turn, question, answer, category); adversarial (5) questions
#: name a fact of the other speaker.
FACTS: tuple[tuple[int, int, str, str, str, int], ...] = (
    (1, 0, "I finally adopted a dog, a grey whippet called Biscuit.",
     "What breed is Noriko's dog Biscuit?", "a whippet", 4),
    (1, 1, "I started volunteering at the Harbour Street food bank on Thursdays.",
     "Where does Anselm volunteer on Thursdays?", "the Harbour Street food bank", 4),
    (1, 0, "My sister Keiko moved to Tromso to study marine biology.",
     "Which city did Keiko move to?", "Tromso", 1),
    (1, 1, "I ran my first half marathon last Sunday in 1 hour 52 minutes.",
     "How long did Anselm's first half marathon take?", "1 hour 52 minutes", 2),
    (1, 0, "I signed up for a pottery class that meets at the Clayworks studio.",
     "Where does Noriko's pottery class meet?", "the Clayworks studio", 3),
    (1, 1, "My grandmother taught me to bake rye bread with caraway seeds.",
     "Who taught Anselm to bake rye bread?", "his grandmother", 4),
    (1, 0, "We repainted the kitchen a pale sage green over the weekend.",
     "What colour did Anselm paint his kitchen?", "not mentioned", 5),
    (1, 1, "I am reading a novel about a lighthouse keeper in Brittany.",
     "What is Anselm's novel about?", "a lighthouse keeper in Brittany", 4),
    (2, 0, "Biscuit won second prize at the county agility show yesterday!",
     "What prize did Biscuit win at the agility show?", "second prize", 2),
    (2, 1, "The food bank asked me to coordinate the winter coat drive.",
     "What did the food bank ask Anselm to coordinate?", "the winter coat drive", 1),
    (2, 0, "Keiko sent me a photo of the northern lights over the fjord.",
     "What did Keiko send Noriko a photo of?", "the northern lights", 1),
    (2, 1, "I bought a secondhand cello and I practise scales every morning.",
     "Which instrument did Anselm buy?", "a secondhand cello", 4),
    (2, 0, "My pottery teacher says my glazed teapot is ready for the kiln.",
     "What is Noriko's glazed piece ready for the kiln?", "a teapot", 3),
    (2, 1, "I am planning a cycling trip along the Danube in September.",
     "Where is Anselm planning a cycling trip?", "along the Danube", 2),
    (2, 0, "I gave up coffee and switched to roasted barley tea.",
     "What did Anselm switch to after giving up coffee?", "not mentioned", 5),
    (2, 1, "Our book club picked a biography of Ada Lovelace for May.",
     "Whose biography did Anselm's book club pick?", "Ada Lovelace", 4),
    (3, 0, "Biscuit learned to ring a bell by the door when she wants to go out.",
     "What did Biscuit learn to do?", "ring a bell by the door", 4),
    (3, 1, "The coat drive collected 312 coats in three weeks.",
     "How many coats did the coat drive collect?", "312", 1),
    (4, 0, "I am moving to a flat near the botanical garden in June.",
     "Where is Noriko moving in June?", "near the botanical garden", 2),
    (4, 1, "I performed my first cello piece, a Bach minuet, at a friend's party.",
     "Which piece did Anselm play at the party?", "a Bach minuet", 4),
)
TURNS_PER_SESSION = 24


def conversation(sessions: int = 4) -> dict[str, Any]:
    """One conversation in LoCoMo's layout (``sessions`` of up to four)."""
    data: dict[str, Any] = {"speaker_a": SPEAKERS[0], "speaker_b": SPEAKERS[1], "qa": []}
    for n in range(1, sessions + 1):
        facts = [f for f in FACTS if f[0] == n]
        turns: list[dict[str, Any]] = []
        talk = 0
        for t in range(TURNS_PER_SESSION):
            speaker = SPEAKERS[t % 2]
            due = [f for f in facts if f[1] == t % 2]
            if due and t % 3 == 0 or (due and t >= TURNS_PER_SESSION - 2 * len(facts)):
                fact = due[0]
                facts.remove(fact)
                text = fact[2]
                dia = f"D{n}:{t + 1}"
                data["qa"].append({"question": fact[3], "answer": fact[4],
                                   "evidence": [dia], "category": fact[5]})
            else:
                text = SMALL_TALK[talk % len(SMALL_TALK)]
                talk += 1
            turn = {"speaker": speaker, "dia_id": f"D{n}:{t + 1}", "text": text}
            if t == 5:
                turn["blip_caption"] = "a photo of a park bench in the rain"
            turns.append(turn)
        assert not facts, f"session {n}: facts left over {facts}"
        data[f"session_{n}"] = turns
        data[f"session_{n}_date_time"] = DATES[n - 1]
    return data


def write(directory: Path, conversations: tuple[str, ...] = ("901",), sessions: int = 4
          ) -> Path:
    """Write ``<id>.json`` for each id into ``directory``; returns it."""
    directory.mkdir(parents=True, exist_ok=True)
    for conv in conversations:
        (directory / f"{conv}.json").write_text(
            json.dumps(conversation(sessions), ensure_ascii=False, indent=1), "utf-8")
    return directory
