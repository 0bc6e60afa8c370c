"""The verbs about spec files rather than tables: `schema` and `validate`. They read YAML and the
model only, so they answer in a second, without Spark or a metastore."""

from __future__ import annotations

import argparse
import json

from zipper.core.errors import SpecError
from zipper.tablespec.loader import specs_dir, validate_specs
from zipper.tablespec.schema import spec_schema

EXIT_INVALID = 1


def run_schema(args: argparse.Namespace) -> int:
    print(json.dumps(spec_schema(), indent=2))
    return 0


def validate_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("names", nargs="*", metavar="NAME", help="spec names to check (default: every spec in --specs)")


def run_validate(args: argparse.Namespace) -> int:
    """Every problem on its own line (file, key, what was expected), then one summary line."""
    folder = specs_dir(args.specs)
    checked, problems = validate_specs(folder, args.names)
    if checked == 0:
        raise SpecError(f"{folder}: no spec files (*.yaml, *.yml) to validate (set --specs or ZIPPER_SPECS)")
    for line in problems:
        print(line)
    noun = "spec" if checked == 1 else "specs"
    if problems:
        print(f"zipper validate: {len(problems)} problem{'' if len(problems) == 1 else 's'} in {checked} {noun}")
        return EXIT_INVALID
    print(f"zipper validate: {checked} {noun} valid in {folder}")
    return 0
