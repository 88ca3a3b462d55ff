"""The MySQL store's string escape is pymysql's mapping (checked against it, no server)."""

from __future__ import annotations

import random

from pymysql.converters import escape_string as pymysql_escape

from breadcrumb.stores.sql.mysql.store import escape_string


def test_escape_string_equals_pymysql_on_every_special_character() -> None:
    specials = "\\\0\n\r\032\"'"
    rng = random.Random(7)
    texts = ["", specials, specials[::-1], "\\\\n", "\\'", "plain é 日本 ' -- ;"]
    texts += ["".join(rng.choice(specials + "ab é") for _ in range(rng.randint(0, 16)))
              for _ in range(5000)]
    for text in texts:
        assert escape_string(text) == pymysql_escape(text), repr(text)
