"""Sphinx directive ``rcmdp-cli``: the ``rcmdp`` command line, generated from its parser.

The page is built from :func:`rcmdp_exact.cli.build_parser`, so it lists exactly the
subcommands and options the installed program has and cannot go stale.  For the main
parser and then each subcommand (in the order of ``rcmdp --help``) it writes a section
with the subcommand's one-line summary, its full ``--help`` text, and a table of its
options.
"""

from __future__ import annotations

import argparse
import os

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective

#: Width of the rendered help text, fixed so that the page does not depend on the terminal.
HELP_WIDTH = "88"


def _help_text(parser: argparse.ArgumentParser) -> str:
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = HELP_WIDTH
    try:
        return parser.format_help()
    finally:
        if old is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = old


def _subparsers(parser: argparse.ArgumentParser):
    for action in parser._actions:  # argparse keeps no public list of subparsers
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help for a in action._choices_actions}
            for name, sub in action.choices.items():
                yield name, helps.get(name, ""), sub


def _option_rows(parser: argparse.ArgumentParser):
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
            continue
        names = ", ".join(action.option_strings) or action.dest
        if action.choices is not None and not isinstance(action.choices, dict):
            names += " {" + ",".join(map(str, action.choices)) + "}"
        elif action.nargs != 0 and action.option_strings:
            names += " " + (action.metavar or action.dest.upper())
        text = (action.help or "").replace("%(default)s", str(action.default))
        yield names, text


class RcmdpCliDirective(SphinxDirective):
    """Render ``rcmdp --help`` and every ``rcmdp SUBCOMMAND --help``."""

    has_content = False

    def run(self):
        from rcmdp_exact.cli import build_parser

        parser = build_parser()
        out = []
        main = nodes.literal_block(text=_help_text(parser))
        main["language"] = "text"
        out.append(main)
        commands = []
        for name, summary, sub in _subparsers(parser):
            commands.append((name, summary, sub))
            # a command with actions of its own (rcmdp suite list|show|...): each its section
            commands += [(f"{name} {act}", text, nested)
                         for act, text, nested in _subparsers(sub)]
        for name, summary, sub in commands:
            section = nodes.section(ids=[nodes.make_id(f"rcmdp-{name}")])
            section += nodes.title(text=f"rcmdp {name}")
            section += nodes.paragraph(text=summary[:1].upper() + summary[1:] + ".")
            table = ["```{list-table}", ":header-rows: 1", ":widths: 35 65", "",
                     "* - option", "  - meaning"]
            rows = list(_option_rows(sub))
            for opt, text in rows:
                table += [f"* - `{opt}`", f"  - {text or ' '}"]
            table.append("```")
            if not rows:  # only actions: they follow as sections of their own
                table = []
            holder = nodes.container()
            self.state.nested_parse(StringList(table, source=f"rcmdp {name}"), 0, holder)
            section += holder.children
            block = nodes.literal_block(text=_help_text(sub))
            block["language"] = "text"
            section += nodes.rubric(text=f"rcmdp {name} --help")
            section += block
            out.append(section)
        return out


def setup(app):
    app.add_directive("rcmdp-cli", RcmdpCliDirective)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
