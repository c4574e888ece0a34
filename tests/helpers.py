"""Assertions shared by the tests."""

from __future__ import annotations

import re

import pytest


def raises_fact(cls, *facts: str):
    """``pytest.raises(cls)`` whose message names every one of ``facts``.

    An error test checks the class and the key facts of the message (the offending
    argument, index and value), not the whole sentence, so that rewording a message
    does not change a test.
    """
    pattern = "(?s)" + "".join(f"(?=.*{re.escape(f)})" for f in facts)
    return pytest.raises(cls, match=pattern)


#: Multiplier of every test's example count under the "thorough" hypothesis profile.
THOROUGH_FACTOR = 10


def examples(n: int) -> int:
    """``n`` hypothesis examples, or ten times as many under ``HYPOTHESIS_PROFILE=thorough``.

    Tests that set their own ``max_examples`` (to keep the default run short) use this, so
    the thorough profile scales them too.
    """
    import os

    return n * (THOROUGH_FACTOR if os.environ.get("HYPOTHESIS_PROFILE") == "thorough" else 1)
