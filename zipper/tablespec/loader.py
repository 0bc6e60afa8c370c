"""Read spec files; every failure names the file and the key."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import yaml
from pydantic import ValidationError

from zipper.core.errors import SpecError
from zipper.tablespec.model import TableSpec

SPEC_SUFFIXES = (".yaml", ".yml")
# libyaml's loader when PyYAML has it: several times faster, which matters when DAG files parse
# hundreds of specs. Same safe subset of YAML either way.
YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
DEFAULT_SPECS_DIR = Path(__file__).resolve().parents[2] / "dags" / "tables"


class SpecLoader(YAML_LOADER):
    """YAML_LOADER keeping an unquoted date (`start_date: 2024-01-01`) as its text. PyYAML would
    build a date, and raise a bare ValueError for an impossible one (2024-13-01) that names
    neither file nor key; pydantic parses the text of a date key and names the key, and a text
    key (`description`, `options`, `tags`) takes the text instead of rejecting a date."""


SpecLoader.add_constructor("tag:yaml.org,2002:timestamp", SpecLoader.construct_yaml_str)


def specs_dir(explicit: str | os.PathLike | None = None) -> Path:
    return Path(explicit or os.environ.get("ZIPPER_SPECS") or DEFAULT_SPECS_DIR)


def _describe(error: dict) -> str:
    loc = [str(p) for p in error["loc"]]
    about = getattr((error.get("ctx") or {}).get("error"), "key", None)  # a KeyValueError's key
    key = ".".join(loc + ([about] if about else [])) or "(top level)"
    kind = error["type"]
    if kind == "extra_forbidden":
        return f"key '{key}': unknown key"
    if kind == "missing":
        return f"key '{key}': required key is missing"
    message = error["msg"].removeprefix("Value error, ")
    got = error.get("input")
    shown = "" if isinstance(got, (dict, list)) or got is None or repr(got) in message else f" (got {got!r})"
    return f"key '{key}': {message}{shown}"


def _one_line(exc: BaseException) -> str:
    text = (str(exc).strip().splitlines() or [""])[0]
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def load_spec_file(path: str | os.PathLike) -> TableSpec:
    """The spec of one file. Every failure is a one-line SpecError naming the file, even one no
    check foresaw: the caller (a DAG file parsing every spec) must be able to skip just this file."""
    path = Path(path)
    try:
        return _load(path)
    except SpecError:
        raise
    except Exception as exc:  # not BaseException: an interrupt or exit must still stop the caller
        raise SpecError(f"{path}: cannot load spec: {_one_line(exc)}") from exc


def _load(path: Path) -> TableSpec:
    try:
        raw = yaml.load(path.read_text(encoding="utf-8"), Loader=SpecLoader)
    except OSError as exc:
        raise SpecError(f"{path}: cannot read spec: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark else ""
        raise SpecError(f"{path}:{where} not valid YAML: {getattr(exc, 'problem', exc)}") from None
    if not isinstance(raw, dict):
        raise SpecError(f"{path}: a spec is a YAML mapping of keys, got {type(raw).__name__}")
    try:
        spec = TableSpec.model_validate(raw)
    except ValidationError as exc:
        problems = [_describe(e) for e in exc.errors()]
        raise SpecError(f"{path}: {'; '.join(problems)}", problems=[f"{path}: {p}" for p in problems]) from None
    spec._origin = path.resolve()
    return spec


def spec_files(directory: str | os.PathLike | None = None) -> list[Path]:
    folder = specs_dir(directory)
    if not folder.is_dir():
        problem = "is a file, not a folder of specs" if folder.exists() else "specs folder does not exist"
        raise SpecError(f"{folder}: {problem} (set --specs or ZIPPER_SPECS)")
    return sorted(p for p in folder.iterdir() if p.suffix in SPEC_SUFFIXES and p.is_file())


def scan_specs(directory: str | os.PathLike | None = None) -> Iterator[tuple[Path, TableSpec | SpecError]]:
    """Each spec file of a folder, in file order, with its spec or the error that keeps it out (a
    bad file, or a name or table another file keeps). One bad file does not stop the others.

    Of two files using one name or table, the one named after its spec (`dim_user.yaml` for
    `name: dim_user`) is kept, else the first in file order: a copy saved next to a spec
    (`backup.yaml`, `dim_user copy.yaml`) never takes the table from the file being edited."""
    loaded: list[tuple[Path, TableSpec | SpecError]] = []
    for path in spec_files(directory):
        try:
            loaded.append((path, load_spec_file(path)))
        except SpecError as exc:
            loaded.append((path, exc))
    good = [(path, spec) for path, spec in loaded if isinstance(spec, TableSpec)]
    keeps_name = _keepers(good, lambda spec: spec.name)
    keeps_table = _keepers([(p, s) for p, s in good if keeps_name[s.name] == p], lambda spec: spec.table)
    for path, spec in loaded:
        if isinstance(spec, TableSpec):
            if keeps_name[spec.name] != path:
                spec = _also_used("name", spec.name, path, keeps_name[spec.name])
            elif keeps_table[spec.table] != path:
                spec = _also_used("table", spec.table, path, keeps_table[spec.table])
        yield path, spec


def _keepers(specs: list[tuple[Path, TableSpec]], value) -> dict[str, Path]:
    """For each value (a name or a table) the file that keeps it: named after its spec first,
    then file order."""
    kept: dict[str, Path] = {}
    for path, spec in sorted(specs, key=lambda item: (item[0].stem.lower() != item[1].name, item[0])):
        kept.setdefault(value(spec), path)
    return kept


def load_specs(directory: str | os.PathLike | None = None) -> dict[str, tuple[Path, TableSpec]]:
    """All specs of a folder by name; a name or table used twice is an error naming both files."""
    found: dict[str, tuple[Path, TableSpec]] = {}
    for path, spec in scan_specs(directory):
        if isinstance(spec, SpecError):
            raise spec
        found[spec.name] = (path, spec)
    return found


def find_spec(name: str, directory: str | os.PathLike | None = None) -> tuple[Path, TableSpec]:
    """One spec by name, for the CLI: the file scan_specs keeps for that name, so the CLI and the
    DAGs use the same one. A file scan_specs refuses (broken, or a name or table an earlier file
    already uses) fails with its own error when it is the one the name points at (by its spec's
    name, or by its file stem when it does not load); a copy does not stop the other tables."""
    folder = specs_dir(directory)
    name = name.lower()  # spec names are identifiers, kept in lower case like Hive's
    kept: list[tuple[Path, TableSpec]] = []
    refused: list[tuple[Path, SpecError, str | None]] = []  # with the refused file's own name, if it loads
    for path, spec in scan_specs(folder):
        if isinstance(spec, SpecError):
            refused.append((path, spec, _name_of(path)))
        else:
            kept.append((path, spec))
    for path, error, own_name in refused:
        if path.stem == name and own_name is None:
            raise error  # the file named after it does not load: most likely the one being edited
    for path, spec in kept:
        if spec.name == name:
            return path, spec
    for _, error, own_name in refused:
        if own_name == name:
            raise error
    unnamed = [path.name for path, _, own_name in refused if own_name is None]
    maybe = f"; files that do not load, one of which may be it: {', '.join(unnamed)}" if unnamed else ""
    raise SpecError(f"{folder}: no spec named {name!r}{maybe}")


def _name_of(path: Path) -> str | None:
    """The name a refused file gives itself: its spec's, or, when the spec does not load (a typo
    in another key), its `name:` as written, so that the CLI shows that file's error rather than
    `no spec named` for a table whose file is named otherwise (`orders_v2.yaml`, `name: orders`)."""
    try:
        return load_spec_file(path).name
    except SpecError:
        pass
    try:
        raw = yaml.load(path.read_text(encoding="utf-8"), Loader=SpecLoader)
    except Exception:  # not YAML (or not readable): its name cannot be known
        return None
    name = raw.get("name") if isinstance(raw, dict) else None
    return name.strip().lower() if isinstance(name, str) and name.strip() else None


def _also_used(key: str, value: str, refused: Path, kept: Path) -> SpecError:
    return SpecError(f"{refused}: key '{key}': {value!r} is also used by {kept}, which is kept")


def validate_specs(directory: str | os.PathLike | None = None, names: list[str] | None = None) -> tuple[int, list[str]]:
    """How many specs were checked and one line per problem, as loading them would report: every
    spec of the folder, or the named ones. Reads YAML and validates the model only: no Spark, no
    metastore, so an editor's save hook or a CI step can run it in a second."""
    if not names:
        checked = list(scan_specs(directory))
        return len(checked), [line for _, spec in checked if isinstance(spec, SpecError) for line in spec.problems]
    problems: list[str] = []
    for name in dict.fromkeys(names):
        try:
            find_spec(name, directory)
        except SpecError as exc:
            problems.extend(exc.problems)
    return len(set(names)), problems
