"""Subcommands of the ``rcmdp`` command line, one module each.

Each module defines ``NAME`` (the subcommand), ``HELP`` (one line),
``add_arguments(parser)`` and ``run(args) -> int``.
"""
