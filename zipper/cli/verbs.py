"""Every `zipper` verb, one record each: the parser, the dispatch and the checks before a run read
this table, so that what a verb is (does it write? need a table? check dates first?) is said once."""

from __future__ import annotations

from zipper.cli import data_verbs, service_verbs, spec_verbs, table_verbs
from zipper.cli.verb import Verb

VERBS: tuple[Verb, ...] = (
    Verb(
        "init",
        "create the table (and load the base)",
        data_verbs.run_init,
        data_verbs.init_arguments,
        writes=True,
        check_dates=data_verbs.init_dates,
    ),
    Verb(
        "adopt",
        "take over an SCD2 table written by hand, its history kept, committed through --through",
        data_verbs.run_adopt,
        data_verbs.adopt_arguments,
        writes=True,
        check_dates=data_verbs.adopt_dates,
    ),
    Verb(
        "merge",
        "merge one day's increment",
        data_verbs.run_merge,
        data_verbs.merge_arguments,
        writes=True,
        check_dates=data_verbs.merge_dates,
    ),
    Verb(
        "rerun",
        "restore the table to the day before --from and replay --from..--to in one application",
        data_verbs.run_rerun,
        data_verbs.rerun_arguments,
        writes=True,
        check_dates=data_verbs.rerun_dates,
        refuses_new_metastore=True,
    ),
    Verb(
        "rebuild",
        "build the table from the base and every increment, published at once",
        data_verbs.run_rebuild,
        data_verbs.rebuild_arguments,
        writes=True,
        check_dates=data_verbs.rebuild_dates,
    ),
    Verb(
        "correct",
        "erase keys from every version, fix values in past versions, or delete versions: one commit",
        data_verbs.run_correct,
        data_verbs.correct_arguments,
        description=data_verbs.CORRECT_DESCRIPTION,
        writes=True,
        check_dates=data_verbs.correct_dates,
    ),
    Verb(
        "alter",
        "rename or drop a column in every version: one commit",
        data_verbs.run_alter,
        data_verbs.alter_arguments,
        description=data_verbs.ALTER_DESCRIPTION,
        writes=True,
        check_dates=data_verbs.alter_dates,
        refuses_new_metastore=True,
    ),
    Verb(
        "status",
        "committed state as JSON",
        table_verbs.run_status,
        table_verbs.status_arguments,
        refuses_new_metastore=True,
    ),
    Verb(
        "slice",
        "the table as of a date",
        table_verbs.run_slice,
        table_verbs.slice_arguments,
        refuses_new_metastore=True,
    ),
    Verb(
        "history",
        "every version of one key",
        table_verbs.run_history,
        table_verbs.history_arguments,
        refuses_new_metastore=True,
    ),
    Verb(
        "check",
        "verify every invariant on the live table",
        table_verbs.run_check,
        table_verbs.check_arguments,
        refuses_new_metastore=True,
    ),
    Verb(
        "vacuum",
        "remove unreferenced version directories",
        table_verbs.run_vacuum,
        table_verbs.vacuum_arguments,
        writes=True,
        refuses_new_metastore=True,
    ),
    Verb(
        "schema",
        "print the spec's JSON Schema, for editors (yaml-language-server) and CI",
        spec_verbs.run_schema,
        needs_table=False,
    ),
    Verb(
        "validate",
        "check specs without Spark or a metastore: one line per problem, exit 1",
        spec_verbs.run_validate,
        spec_verbs.validate_arguments,
        needs_table=False,
    ),
    Verb(
        "metastore",
        "start, stop or show the warehouse's metastore server (started on demand by any run)",
        service_verbs.run_metastore,
        service_verbs.service_arguments,
        needs_table=False,
    ),
    Verb(
        "spark",
        "start, stop or show the warehouse's Spark Connect server (started on demand by its clients)",
        service_verbs.run_spark,
        service_verbs.service_arguments,
        needs_table=False,
    ),
)
BY_NAME: dict[str, Verb] = {verb.name: verb for verb in VERBS}
