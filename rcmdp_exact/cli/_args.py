"""Argument conventions shared by every subcommand.

* ``--progress / --no-progress``: one flag for every long command; the default is on
  when standard error is a terminal (:func:`add_progress`, :func:`progress_enabled`).
* Numbers are parsed by :func:`_non_negative_int`, :func:`_positive_int`,
  :func:`probability` and :func:`real_number`, so a bad value is an argparse error
  (exit status 2, one line) before any work starts.  Negative numbers, ``-inf`` and
  ``nan`` are read as values, not as options (``--entropy -inf`` is refused for its
  value, with the valid range; the parser of :mod:`rcmdp_exact.cli`).  Integers that
  size the work or the memory are parsed by :func:`bounded_int` with a limit of
  :data:`rcmdp_exact.names.LIMITS` (the message names the limit and why it exists);
  local worker processes by :func:`workers_arg` (at most
  :data:`~rcmdp_exact.names.WORKERS_PER_CPU` per CPU).
* Output paths are checked before any work starts (:func:`check_output`); an existing
  file is refused unless ``--force``.  Input files (``--model``, ``--set-file``,
  ``--perturbations``) that are missing or folders are refused the same way
  (:func:`check_inputs`).  These checks, and every other refusal of an argument, come
  before the command imports numpy and the solvers, so a refusal is immediate.
  :func:`check_npz_output` adds the suffix ``.npz`` of an artefact when it is missing
  and refuses another one.
* Comma-separated lists are parsed by :func:`comma_list`.
* Options that act only on some algorithms are refused for the others
  (:func:`refuse_inapplicable`, :data:`rcmdp_exact.names.OPTION_ALGORITHMS`).
* Your own model: ``--model PATH.npz`` and its companions (``--horizon``, ``--set``,
  ``--set-file``, ``--estimate [N]``, ``--radius``, ``--support``, ``--perturbations``)
  are declared by :func:`add_model_options` and read by :func:`load_user_model`; options
  that choose among the paper's domains are refused beside ``--model``
  (:func:`refuse_with_model`).  Without ``--estimate`` or ``--set-file`` the model is
  judged on itself: the learners train on it and the set is built around its own kernel
  (radius ``--radius``, support ``--support``; :func:`rcmdp_exact.protocol.estimation.
  set_around`).
  ``--set`` is a built-in kind's name or ``MODULE:CLASS`` (:func:`set_kind`).
* ``--trainer MODULE:FUNCTION`` (:func:`add_trainer`, :func:`resolve_trainer`): a
  training function that follows the trainer protocol (``docs/your_learner.md``).
"""

from __future__ import annotations

import argparse
import sys

__all__ = [
    "add_force",
    "add_model_options",
    "add_progress",
    "add_trainer",
    "bounded_int",
    "check_inputs",
    "check_npz_output",
    "check_output",
    "comma_list",
    "load_user_model",
    "max_workers",
    "probability",
    "progress_enabled",
    "real_number",
    "refuse_inapplicable",
    "refuse_with_model",
    "resolve_trainer",
    "seed_arg",
    "set_kind",
    "workers_arg",
]


def _int(text: str, low: int, what: str) -> int:
    try:
        value = int(text, 10)
    except (TypeError, ValueError):
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer; give {what}") from None
    if value < low:
        raise argparse.ArgumentTypeError(f"{value} is below {low}; give {what}")
    return value


def _limit_text(n: int) -> str:
    """10**7 as "10^7", other numbers with thousands separators."""
    k = len(str(n)) - 1
    return f"10^{k}" if n == 10**k and k >= 3 else f"{n:,}"


def bounded_int(limit: str, low: int = 1):
    """An argparse type: an integer in ``[low, LIMITS[limit][0]]``.

    Above the limit, the message names it, what it bounds and why (one line, exit
    status 2), e.g. ``99999999999999999999 is above the limit 10^7 of training episodes
    (the learners keep about 64 bytes of records per episode); give at most 10000000``.
    """
    from ..names import LIMITS

    high, what, why = LIMITS[limit]
    name = "an integer >= 1" if low == 1 else f"an integer >= {low}"

    def parse(text: str) -> int:
        value = _int(text, low, name)
        if value > high:
            raise argparse.ArgumentTypeError(
                f"{value} is above the limit {_limit_text(high)} of {what} ({why}); give "
                f"at most {high}")
        return value

    parse.__name__ = name
    return parse


def max_workers() -> int:
    """The most local worker processes: ``WORKERS_PER_CPU * os.cpu_count()``."""
    import os

    from ..names import WORKERS_PER_CPU

    return WORKERS_PER_CPU * (os.cpu_count() or 1)


def workers_arg(text: str) -> int:
    """Local worker processes: an integer in ``[1, max_workers()]`` (argparse type)."""
    import os

    from ..names import WORKERS_PER_CPU

    value = _int(text, 1, "an integer >= 1")
    top = max_workers()
    if value > top:
        raise argparse.ArgumentTypeError(
            f"{value} workers is above the limit {top} ({WORKERS_PER_CPU} per CPU, "
            f"{os.cpu_count() or 1} CPUs: more processes only wait for a core, each with "
            f"its own copy of the models); give at most {top}")
    return value


def refuse_inapplicable(parser: argparse.ArgumentParser, args: argparse.Namespace,
                        algorithms, options=None) -> None:
    """Refuse every option given on the command line (its value is not None) that acts
    on none of ``algorithms`` (:data:`rcmdp_exact.names.OPTION_ALGORITHMS`).

    The message names the option, the algorithms it applies to and the ones chosen.
    """
    from ..names import OPTION_ALGORITHMS

    chosen = list(algorithms)
    for name, applies in OPTION_ALGORITHMS.items():
        if options is not None and name not in options:
            continue
        if getattr(args, name, None) is None:
            continue
        if not any(a in applies for a in chosen):
            flag = "--" + name.replace("_", "-")
            which = "algorithm " + chosen[0] if len(chosen) == 1 else \
                "algorithms " + ",".join(chosen)
            parser.error(f"{flag} does not apply to {which}: it acts only on "
                         f"{', '.join(applies)}; drop {flag}")


def _positive_int(text: str) -> int:
    """An integer >= 1 (argparse type)."""
    return _int(text, 1, "an integer >= 1")


def _non_negative_int(text: str) -> int:
    """An integer >= 0 (argparse type)."""
    return _int(text, 0, "an integer >= 0")


def seed_arg(text: str) -> int:
    """A seed: an integer >= 0 (argparse type)."""
    return _int(text, 0, "a seed, an integer >= 0")


def probability(text: str) -> float:
    """A number in the open interval (0, 1) (argparse type)."""
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number in (0, 1)") from None
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"{value} is not in the open interval (0, 1)")
    return value


def real_number(low: float | None = None, high: float | None = None, *,
                low_open: bool = False, high_open: bool = False, what: str = "a number"):
    """An argparse type: a finite number in the interval (``rcmdp_exact._checks.
    check_real`` decides); ``inf``, ``-inf`` and ``nan`` are refused with the range.

    ``what`` says what the number is, for the message: ``argument --entropy: '-inf' is
    not a valid entropy weight: give a finite number in [0, inf)``.
    """
    from .._checks import InputError, check_real, interval_text

    interval = interval_text(low, high, low_open=low_open, high_open=high_open)

    def parse(text: str) -> float:
        try:
            return check_real(float(text), what, low, high, low_open=low_open,
                              high_open=high_open)
        except (TypeError, ValueError, InputError):
            raise argparse.ArgumentTypeError(
                f"{text!r} is not a valid {what}: give a finite number in {interval}"
            ) from None

    parse.__name__ = what
    return parse


def comma_list(choices, what: str):
    """An argparse type: a comma-separated list of names, each one of ``choices``.

    Names are kept in the order given, without duplicates; an unknown name is an error
    listing the valid ones.
    """
    valid = tuple(choices)

    def parse(text: str) -> list[str]:
        names = [t.strip() for t in str(text).split(",") if t.strip()]
        if not names:
            raise argparse.ArgumentTypeError(f"empty list of {what}; give e.g. {valid[0]}")
        bad = [n for n in names if n not in valid]
        if bad:
            raise argparse.ArgumentTypeError(
                f"unknown {what} {', '.join(map(repr, bad))}; choose from {', '.join(valid)}"
            )
        return list(dict.fromkeys(names))

    parse.__name__ = what  # argparse names the type in its messages
    return parse


def add_progress(parser: argparse.ArgumentParser) -> None:
    """``--progress / --no-progress`` (default: on when stderr is a terminal)."""
    parser.add_argument(
        "--progress", action=argparse.BooleanOptionalAction, default=None,
        help="show progress bars (default: on when the output is a terminal)",
    )


def progress_enabled(args: argparse.Namespace) -> bool:
    """The resolved value of ``--progress / --no-progress`` (the toolkit's one default,
    :func:`rcmdp_exact._progress.progress_default`)."""
    from .._progress import progress_default

    return progress_default(getattr(args, "progress", None))


def add_force(parser: argparse.ArgumentParser) -> None:
    """``--force``: replace existing output files."""
    parser.add_argument("--force", action="store_true",
                        help="replace output files that already exist")


def check_npz_output(parser: argparse.ArgumentParser, path, *, force: bool = False,
                     name: str = "--out", what: str = "the result"):
    """Check the path of an ``.npz`` artefact up front: the suffix ``.npz`` is added when
    the path has none, another suffix is refused (an archive named ``a.json`` would
    mislead), then the file is checked as :func:`check_output` does."""
    from pathlib import Path

    from .._io import npz_path

    if path is None:
        return None
    p = Path(path)
    if p.suffix and p.suffix != ".npz":
        parser.error(f"{name} {str(path)!r} ends in {p.suffix!r}, but {what} is an .npz "
                     f"archive; give a path ending in .npz (or without a suffix, and .npz "
                     f"is added)")
    return check_output(parser, npz_path(p) if str(path).strip() else path, kind="file",
                        force=force, name=name)


def check_output(parser: argparse.ArgumentParser, path, *, kind: str = "dir",
                 force: bool = False, name: str = "--out"):
    """Check an output path up front; a problem is an argparse error (exit status 2)."""
    from .._checks import InputError, check_out_path

    if path is None:
        return None
    try:
        return check_out_path(path, kind=kind, force=force, name=name)
    except InputError as exc:
        parser.error(str(exc))


# --------------------------------------------------------------------------- your model
def add_model_options(parser: argparse.ArgumentParser, *, kinds: bool = True,
                      set_file: bool = True, estimation: bool = True,
                      perturbations: bool = False, horizon: bool = True) -> None:
    """``--model PATH.npz`` and the options that go with it (module notes)."""
    from ..names import AROUND_SUPPORTS, DEFAULT_SET_KIND, USER_ESTIMATION_EPISODES, USER_RADIUS
    from ..uncertainty.kinds import builtin_kinds, kind_files

    parser.add_argument("--model", metavar="PATH.npz", default=None,
                        help="your own model: a file written by TabularCMDP.save, in place "
                             "of the paper's domains")
    if horizon:
        parser.add_argument("--horizon", type=bounded_int("horizon"), default=None,
                            metavar="T",
                            help="episode length T of --model (needed when the model has "
                                 "none; replaces its own)")
    if kinds:
        parser.add_argument("--set", dest="set_kind", type=set_kind, default=None,
                            metavar="KIND",
                            help=f"kind of uncertainty set: "
                                 f"{', '.join(builtin_kinds(estimated=True))} (default "
                                 f"{DEFAULT_SET_KIND}, the paper's; docs/sets.md), or "
                                 f"MODULE:CLASS, a set class of yours (docs/your_set.md): "
                                 f"estimated from data on a paper domain and with "
                                 f"--estimate, built around --model otherwise")
    if set_file:
        parser.add_argument("--set-file", metavar="PATH.npz", default=None,
                            help="with --model: a saved uncertainty set (save() of a set) "
                                 "used as it is, with its own nominal kernel")
    if estimation:
        parser.add_argument("--estimate", type=bounded_int("episodes"), nargs="?",
                            const=USER_ESTIMATION_EPISODES, default=None, metavar="N",
                            help=f"with --model: the paper's phase 1 instead of judging the "
                                 f"model on itself: train on a model estimated from N "
                                 f"episodes of the uniform random policy (default N "
                                 f"{USER_ESTIMATION_EPISODES}) and its estimated set")
        radii = "; ".join(f"{k}: {info.radius}" for k, info in kind_files().items()
                          if info.radius and info.estimated)
        parser.add_argument("--radius", type=real_number(0.0, what="radius"), default=None,
                            metavar="R",
                            help=f"with --model: radius of the set built around the model "
                                 f"(default {USER_RADIUS}; {radii})")
        parser.add_argument("--support", choices=AROUND_SUPPORTS, default=None,
                            help="with --model: next states the set around the model allows: "
                                 "nominal (default: the model's own next states), all (every "
                                 "state) or outcomes (the states its outcomes reach)")
    if perturbations:
        parser.add_argument("--perturbations", metavar="FILE", default=None,
                            help="with --model: a TOML or JSON file listing saved models "
                                 "(name, group, file) to test on beside the model itself "
                                 "(docs/cli.md)")


def set_kind(text: str) -> str:
    """An argparse type: ``--set KIND``, a built-in kind that is estimated from data, or
    ``MODULE:CLASS`` (a set class of yours, imported and checked after parsing, before
    any work).  The built-in kinds come from :mod:`rcmdp_exact.uncertainty.kinds`, which
    reads them from the package's files without importing numpy."""
    from ..uncertainty.kinds import kind_name_problem

    problem = kind_name_problem(text)
    if problem is not None:
        raise argparse.ArgumentTypeError(problem)
    return text


def check_inputs(parser, args) -> None:
    """Refuse, before any heavy import, the input files of ``args`` that are missing or
    folders (``--model``, ``--set-file`` with or without ``.npz``; ``--perturbations``):
    one line naming the option and the path.  What a file holds is checked when it is
    loaded (:func:`load_user_model`)."""
    from .._io import LoadError, require_file

    for dest, suffixes, what in (
            ("model", (".npz",), "a model file written by TabularCMDP.save"),
            ("set_file", (".npz",), "an uncertainty set written by its save()"),
            ("perturbations", (), "a TOML or JSON file listing saved models")):
        path = getattr(args, dest, None)
        if path is None:
            continue
        flag = "--" + dest.replace("_", "-")
        if not str(path).strip():
            parser.error(f"{flag} is empty; give the path of {what}")
        try:
            require_file(path, suffixes, what)
        except LoadError as exc:
            parser.error(f"{flag} {exc}")


def refuse_with_model(parser, args, names) -> None:
    """Refuse the options ``names`` (destinations) given beside ``--model`` (they choose
    among the paper's domains), and the ``--model`` companions given without it."""
    given = lambda n: getattr(args, n, None) not in (None, False)  # noqa: E731
    flag = lambda n: "--" + n.replace("_", "-")  # noqa: E731
    if args.model is not None:
        for n in names:
            if given(n):
                parser.error(f"{flag(n)} chooses among the paper's domains and does not "
                             f"apply to --model; drop {flag(n)}")
        if given("set_file") and given("set_kind"):
            parser.error("--set and --set-file both give the uncertainty set; give one of "
                         "them")
        if given("set_file") and given("estimate"):
            parser.error("--estimate does not apply with --set-file (the saved set replaces "
                         "the estimation); drop one of them")
        for n in ("radius", "support"):
            if given(n) and (given("set_file") or given("estimate")):
                other = "--set-file" if given("set_file") else "--estimate"
                parser.error(f"{flag(n)} shapes the set built around the model itself and "
                             f"does not apply with {other}; drop one of them")
        _refuse_support(parser, getattr(args, "set_kind", None),
                        args.support if given("support") else None)
        return
    for n in ("horizon", "set_file", "estimate", "radius", "support", "perturbations"):
        if given(n):
            parser.error(f"{flag(n)} applies to your own model: add --model PATH.npz or drop "
                         f"{flag(n)}")


def _refuse_support(parser, kind, support) -> None:
    """Refuse a ``--support`` that the set of ``--set KIND`` around a model does not take
    (the kind file's ``AROUND_SUPPORTS``, read by :mod:`rcmdp_exact.uncertainty.kinds`)."""
    from ..uncertainty.kinds import kind_files

    info = kind_files().get(kind) if isinstance(kind, str) else None
    if support is None or info is None or info.supports is None or support in info.supports:
        return
    parser.error(f"--set {kind} takes --support {' or '.join(info.supports)} (the supports "
                 f"{info.cls}.around accepts), not {support}")


def load_user_model(args, *, need_horizon: str | None = None):
    """The ``--model`` of ``args`` and its companions, loaded and checked
    (:func:`rcmdp_exact.protocol.user.load_problem`), or None without ``--model``."""
    if getattr(args, "model", None) is None:
        return None
    parser = getattr(args, "_parser", None)
    if parser is not None:
        check_inputs(parser, args)
    from ..protocol.user import load_problem

    return load_problem(args.model, horizon=getattr(args, "horizon", None),
                        set_file=getattr(args, "set_file", None),
                        perturbations=getattr(args, "perturbations", None),
                        need_horizon=need_horizon)


# --------------------------------------------------------------------------- trainers
def add_trainer(parser: argparse.ArgumentParser) -> None:
    """``--trainer MODULE:FUNCTION``."""
    parser.add_argument("--trainer", metavar="MODULE:FUNCTION", default=None,
                        help="train with this function instead of rcmdp_exact.learners."
                             "train (the trainer protocol: docs/your_learner.md)")


def resolve_trainer(parser, text):
    """The ``--trainer MODULE:FUNCTION`` callable, checked against the trainer protocol
    before any work (None: the learners, whose presence is checked here)."""
    import importlib
    import importlib.util

    if text is None:
        if importlib.util.find_spec("rcmdp_exact.learners") is None:
            parser.error("the learners (rcmdp_exact.learners) are not available in this "
                         "installation; install a version of rcmdp_exact that has them or "
                         "give --trainer MODULE:FUNCTION")
        return None
    mod_name, _, fn_name = text.partition(":")
    if "" not in sys.path and "." not in sys.path:  # a module in the working folder, last
        sys.path.append("")
    try:
        fn = getattr(importlib.import_module(mod_name), fn_name) if fn_name else None
    except (ImportError, AttributeError) as exc:
        parser.error(f"--trainer {text!r} cannot be imported ({exc}); give MODULE:FUNCTION "
                     f"of an importable module")
    if not callable(fn):
        parser.error(f"--trainer {text!r} is not a function; give MODULE:FUNCTION")
    from ..protocol.run import TrainerError, check_trainer

    try:
        check_trainer(fn)
    except TrainerError as exc:
        parser.error(f"--trainer {text!r}: {exc}")
    return fn
