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
