r"""Your own model in the commands and the reproduction: files known by their content.

A model of your own enters as a file written by :meth:`rcmdp_exact.TabularCMDP.save`
(``--model PATH.npz``), a set as one written by ``save`` of a set (``--set-file``), the
test settings of a reproduction as a small TOML or JSON file that lists saved models
(``--perturbations FILE``, :func:`_read_perturbations`).

Every file is known by its **content hash** (:func:`_file_digest`: the SHA-256 of the
arrays of the archive, their names, dtypes and shapes, not of the zip bytes), so a
reproduction keys its jobs by what the file holds: a changed file gets new keys and
never mixes with the results of the old one, and a file moved or copied keeps its
results.  A process keeps the loaded files by hash (:func:`_register_model`,
:func:`model_of`); a job names the files it needs (``sources``: hash and path), and a
worker process that does not have them loads them again and checks their hash
(:func:`ensure_sources`): a file changed after the reproduction was planned is an
error naming it.

Perturbations are other dynamics of the same problem: each listed model must have the
same states, actions and constraints as your model and the same rewards, costs,
budgets, discount, start distribution and terminal states (only the transitions may
differ); the test metric uses your model's horizon for all of them.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from .._checks import InputError
from .._io import LoadError
from ..names import USER_DOMAIN, USER_TEST

__all__ = ["USER_DOMAIN", "USER_TEST", "PerturbationError", "check_perturbation",
           "ensure_sources", "load_model_file", "load_problem", "set_of",
           "spec_options", "user_settings"]

_MODELS: dict = {}
_SETS: dict = {}


class PerturbationError(InputError):
    """A perturbations file that cannot be used; the message names the file, the entry
    and what to fix."""


def _file_digest(data: dict) -> str:
    """SHA-256 (hex) of the arrays of an archive (:func:`rcmdp_exact._io.load_npz`):
    every entry's name, dtype, shape and bytes, in the order of the names."""
    h = hashlib.sha256()
    for name in sorted(data):
        arr = np.ascontiguousarray(data[name])
        h.update(f"{name}\0{arr.dtype.str}\0{arr.shape}\0".encode())
        h.update(arr.tobytes())
    return h.hexdigest()


def _register_model(digest: str, model) -> None:
    """Keep ``model`` (loaded from a file with content hash ``digest``) in this process."""
    _MODELS[digest] = model


def _register_set(digest: str, uset) -> None:
    """Keep ``uset`` (loaded from a file with content hash ``digest``) in this process."""
    _SETS[digest] = uset


def load_model_file(path, name: str = "--model"):
    """``(model, digest)`` of a model file; a broken or foreign file is a
    :class:`~rcmdp_exact.LoadError` naming the path (and ``name``, the option)."""
    from ..core.model import TabularCMDP

    try:
        model = TabularCMDP.load(path)
    except LoadError as exc:
        raise LoadError(f"{name} {exc}".strip()) from None
    digest = _digest_of_file(path)
    _register_model(digest, model)
    return model, digest


def _load_set_file(path, name: str = "--set-file"):
    """``(set, digest)`` of a saved uncertainty set (:func:`rcmdp_exact.load_set`)."""
    from ..uncertainty import load_set

    try:
        uset = load_set(path)
    except LoadError as exc:
        raise LoadError(f"{name} {exc}".strip()) from None
    digest = _digest_of_file(path)
    _register_set(digest, uset)
    return uset, digest


def _digest_of_file(path) -> str:
    """The content hash of an archive that was just loaded (so it is a valid one)."""
    from .._io import npz_path

    p = Path(path).expanduser()
    if not p.exists():
        p = npz_path(p)
    with np.load(p, allow_pickle=False) as f:
        return _file_digest({k: f[k] for k in f.files})


def model_of(digest: str, horizon: int = 0):
    """The model registered under ``digest``, with ``horizon`` (> 0) in place of its
    own; :class:`~rcmdp_exact.InputError` when this process has not loaded it."""
    try:
        model = _MODELS[digest]
    except KeyError:
        raise InputError(f"the model file with content hash {digest[:12]} is not loaded "
                         f"in this process; run the job with its sources (RunSpec.sources)"
                         ) from None
    return model if not horizon else model.replace(horizon=int(horizon))


def set_of(digest: str):
    """The uncertainty set registered under ``digest``."""
    try:
        return _SETS[digest]
    except KeyError:
        raise InputError(f"the set file with content hash {digest[:12]} is not loaded in "
                         f"this process; run the job with its sources") from None


def ensure_sources(sources) -> None:
    """Load the files of ``sources`` (``(kind, digest, path)`` triples, kind "model" or
    "set") that this process does not have, and check that each still has its hash."""
    for kind, digest, path in sources:
        have = _MODELS if kind == "model" else _SETS
        if digest in have:
            continue
        _, got = (load_model_file if kind == "model" else _load_set_file)(path, name="")
        if got != digest:
            raise InputError(
                f"the file {str(path)!r} changed after the reproduction was planned "
                f"(content hash {got[:12]}, planned {digest[:12]}); run the command again "
                f"to plan with the new file (its results get new keys)")


# --------------------------------------------------------------------------- perturbations
_KEYS = ("name", "group", "file")


def _read_table(path: Path):
    text_error = None
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise PerturbationError(f"--perturbations {str(path)!r} cannot be read "
                                f"({exc.strerror})") from None
    if path.suffix.lower() == ".toml":
        import tomllib

        try:
            return tomllib.loads(raw.decode("utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            text_error = f"it is not valid TOML ({exc})"
    elif path.suffix.lower() == ".json":
        import json

        try:
            return json.loads(raw.decode("utf-8"))
        except (ValueError, UnicodeDecodeError) as exc:
            text_error = f"it is not valid JSON ({exc})"
    else:
        text_error = (f"its suffix {path.suffix!r} is neither .toml nor .json; name the "
                      f"file .toml or .json")
    raise PerturbationError(f"--perturbations {str(path)!r}: {text_error}")


def _read_perturbations(path) -> list[dict]:
    """The entries of a perturbations file: ``[{"name", "group", "file"}, ...]``.

    TOML (``[[perturbation]]`` tables) or JSON (``{"perturbation": [...]}`` or a plain
    list), each entry with ``file`` (a saved model; relative paths are taken from the
    perturbations file's folder), an optional ``name`` (default: the file's stem) and an
    optional ``group`` (default: the name; settings of one group are averaged together
    in the report).  Example (TOML)::

        [[perturbation]]
        name = "slip 0.2"
        group = "slippery"
        file = "frozen_slip02.npz"
    """
    p = Path(path).expanduser()
    doc = _read_table(p)
    entries = doc.get("perturbation", doc.get("perturbations")) if isinstance(doc, dict) \
        else doc
    where = f"--perturbations {str(p)!r}"
    if not isinstance(entries, list):
        raise PerturbationError(f"{where} lists no perturbations: give [[perturbation]] "
                                f"tables (TOML) or a list of objects (JSON), each with "
                                f"file = PATH and optionally name and group")
    out = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict) or not isinstance(entry.get("file"), str):
            raise PerturbationError(f"{where}: entry {i} has no file; give file = PATH (a "
                                    f"model saved by TabularCMDP.save)")
        unknown = sorted(set(entry) - set(_KEYS))
        if unknown:
            raise PerturbationError(f"{where}: entry {i} has unknown key(s) "
                                    f"{', '.join(unknown)}; the keys are {', '.join(_KEYS)}")
        file = Path(entry["file"]).expanduser()
        file = file if file.is_absolute() else p.parent / file
        name = str(entry.get("name", Path(entry["file"]).stem))
        group = str(entry.get("group", name))
        if not name or name == USER_TEST:
            raise PerturbationError(f"{where}: entry {i} is named {name!r}; {USER_TEST!r} "
                                    f"is your model itself: give another name")
        if any(e["name"] == name for e in out):
            raise PerturbationError(f"{where}: the name {name!r} is given twice; give each "
                                    f"perturbation its own name")
        out.append({"name": name, "group": group, "file": str(file)})
    return out


def check_perturbation(base, other, name: str) -> None:
    """Raise :class:`PerturbationError` unless ``other`` differs from ``base`` only in its
    transitions (and horizon); the message names the perturbation and the field."""
    shape = (other.n_states, other.n_actions, other.n_constraints)
    want = (base.n_states, base.n_actions, base.n_constraints)
    if shape != want:
        raise PerturbationError(
            f"perturbation {name!r} has (S, A, K) = {shape} but the model has {want}; a "
            f"perturbation is the same problem with other transitions")
    for field in ("R", "C", "d", "p0", "terminal"):
        a, b = np.asarray(getattr(base, field)), np.asarray(getattr(other, field))
        if a.shape != b.shape or not np.array_equal(a, b):
            raise PerturbationError(
                f"perturbation {name!r} has another {field} than the model; a perturbation "
                f"changes the transitions only (build it with "
                f"model.with_transitions(P).save(...))")
    if other.gamma != base.gamma:
        raise PerturbationError(f"perturbation {name!r} has gamma {other.gamma}, the model "
                                f"{base.gamma}; give the same discount")


def user_settings(fields: dict) -> dict:
    """``{"model": tuple of Setting}``: your model (label and group ``"model"``) and the
    perturbations of the test fields of a reproduction, all with the model's horizon."""
    from ..domains import Setting

    horizon = int(fields.get("horizon", 0))
    base = model_of(fields["model"], horizon)
    T = base.horizon
    out = [Setting(USER_TEST, base, USER_TEST, {"model": fields["model"]})]
    for name, group, digest in fields.get("perturbations", ()):
        m = model_of(digest).replace(horizon=T)
        out.append(Setting(name, m, group, {"model": digest}))
    return {USER_TEST: tuple(out)}


# --------------------------------------------------------------------------- a problem
def load_problem(model, *, horizon=None, set_file=None, perturbations=None,
                 need_horizon: str | None = None):
    """Your model and its companions, loaded and checked, as the commands take them.

    ``model`` (the path of a file written by ``TabularCMDP.save``), ``horizon`` (T in
    place of the model's own), ``set_file`` (a saved set, which must fit the model),
    ``perturbations`` (a TOML or JSON file, :func:`_read_perturbations`; each model must
    be the same problem with other transitions).  ``need_horizon`` (the name of what
    needs it) refuses a model without a horizon.

    Returns
    -------
    Result
        ``model``, ``digest``, ``path``, ``uset``, ``set_digest``, ``set_path``,
        ``perturbations`` (dicts with ``name``, ``group``, ``file``, ``model``,
        ``digest``), ``horizon`` (as given).

    Raises
    ------
    LoadError, InputError
        One line naming the option and the path: a file that cannot be used, a model
        without a horizon, a set of another shape, a perturbation that differs in more
        than its transitions.
    """
    from .._result import Result

    loaded, digest = load_model_file(model)
    if horizon is not None:
        loaded = loaded.replace(horizon=int(horizon))
    elif need_horizon is not None and loaded.horizon is None:
        raise InputError(f"--model {str(model)!r} has no horizon and {need_horizon} needs "
                         f"the episode length T: give --horizon T (or save the model with "
                         f"a horizon)")
    out = Result(model=loaded, digest=digest, path=str(model), uset=None, set_digest="",
                 set_path=None, perturbations=[], horizon=horizon)
    if set_file is not None:
        from ..uncertainty import check_set

        uset, sd = _load_set_file(set_file)
        try:
            check_set(uset, loaded, what=f"--set-file {str(set_file)!r}")
        except InputError as exc:
            raise InputError(f"--set-file {str(set_file)!r} does not fit --model "
                             f"{str(model)!r}: {exc}") from None
        out.update(uset=uset, set_digest=sd, set_path=str(set_file))
    if perturbations is not None:
        for entry in _read_perturbations(perturbations):
            other, pd = load_model_file(entry["file"],
                                        name=f"--perturbations entry {entry['name']!r}:")
            try:
                check_perturbation(loaded, other, entry["name"])
            except InputError as exc:
                raise type(exc)(f"--perturbations {str(perturbations)!r}: {exc}") from None
            out.perturbations.append(dict(entry, model=other, digest=pd))
    return out


def spec_options(problem, estimate: int | None = None, radius: float | None = None,
                 support: str | None = None) -> dict:
    """The :class:`~.spec.RunSpec` fields of a problem of :func:`load_problem`: the
    content hashes, the horizon given, what the set is, and the ``sources`` a worker
    loads the files from.

    The set is the saved one of the problem (``set_file``), or estimated from
    ``estimate`` episodes of the uniform random policy (``estimation_episodes``: the
    paper's phase 1, asked for), or, by default, built around the model itself
    (``radius``, default :data:`~rcmdp_exact.names.USER_RADIUS`, and ``support``,
    default ``"nominal"``: the model is judged on itself).  ``radius`` and ``support``
    apply to the set around the model only.
    """
    from .._checks import check_choice, check_limit, check_real
    from ..names import AROUND_SUPPORTS, USER_RADIUS

    sources = [("model", problem.digest, problem.path)]
    perts = []
    for p in problem.perturbations:
        perts.append((p["name"], p["group"], p["digest"]))
        sources.append(("model", p["digest"], p["file"]))
    options = {"model": problem.digest, "perturbations": tuple(perts),
               "horizon": int(problem.horizon or 0)}
    around = problem.uset is None and estimate is None
    if not around and (radius is not None or support is not None):
        raise InputError("radius and support shape the set built around the model itself; "
                         "they do not apply with a set file or an estimation")
    if problem.uset is not None:
        if estimate is not None:
            raise InputError("an estimation does not apply with a set file (the saved set "
                             "replaces the estimation); give one of them")
        options["set_file"] = problem.set_digest
        sources.append(("set", problem.set_digest, problem.set_path))
    elif estimate is not None:
        options["estimation_episodes"] = check_limit(
            estimate, "estimate", "episodes", hint=" (episodes of the estimation)")
    else:
        options["radius"] = check_real(USER_RADIUS if radius is None else radius, "radius",
                                       0.0)
        options["support"] = check_choice("nominal" if support is None else support,
                                          "support", AROUND_SUPPORTS)
    options["sources"] = tuple(sources)
    return options
