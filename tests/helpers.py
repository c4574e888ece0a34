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


def thorough() -> bool:
    """True under ``HYPOTHESIS_PROFILE=thorough``: the run a developer makes before a
    release (ten times the hypothesis examples, and the deep cases of :func:`depth`)."""
    import os

    return os.environ.get("HYPOTHESIS_PROFILE") == "thorough"


def depth(default, deep):
    """``deep`` under the thorough profile, ``default`` otherwise.

    For a size that the test command keeps small and a release check makes large (a
    model's states, episodes, a list of cases such as ``depth([0.99, 0.999], [0.99,
    0.999, 0.99999])``): the everyday run keeps the test, cheaper, instead of skipping
    it, and ``HYPOTHESIS_PROFILE=thorough python -m pytest`` runs it at full depth.
    """
    return deep if thorough() else default


def examples(n: int) -> int:
    """``n`` hypothesis examples, or ten times as many under ``HYPOTHESIS_PROFILE=thorough``.

    Tests that set their own ``max_examples`` (to keep the default run short) use this, so
    the thorough profile scales them too.
    """
    return n * (THOROUGH_FACTOR if thorough() else 1)
