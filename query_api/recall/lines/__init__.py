"""Line helpers shared by Retrieve and Extract: the one line scorer (:mod:`.scoring`;
Retrieve's passage lead and Extract's cuts both score with it) and what it reads in a
line — its shape (:mod:`.shapes`), a patch's lines (:mod:`.edits`), a question word's
term groups (:mod:`.term_groups`), a transcript's speakers (:mod:`.speakers`).

Below the stages in recall's import order: these modules import the values' lower
modules (:mod:`..passages`, :mod:`..question`) only, never a stage.
"""
