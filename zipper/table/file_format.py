"""The table's file format, Parquet, where it is named outside the store's reads and writes: the
storage clause of the table's DDL (`sql/create_table.sql`), and what the files' footers tell
without a Spark job (a directory's rows, a column's largest value). A new format (ORC, ...)
changes this module and `table/store.py`.

No pyspark: `--profile` counts the footer reads as file calls (`runtime.profile`)."""

from __future__ import annotations

from zipper.core import fs
from zipper.core.filesystems import locate
from zipper.core.paths import local_path

STORED_AS = "PARQUET"  # the DDL's `STORED AS`


def rows_in_files(directory: str) -> int:
    """Rows in the Parquet files of a directory, from their footers, through the directory's own
    file system (no Spark job); none for a directory that is not there. The table store counts a
    slot's rows with it (`table.store.rows_in`)."""
    import pyarrow.parquet as pq  # imported on use: the table's readers without rows never need it

    files = fs.list_data_files([directory]) if fs.exists(directory) else []
    total = 0
    for found in files:
        filesystem, inner, _ = locate(found.path)
        with filesystem.open_input_file(inner) as handle:
            total += pq.ParquetFile(handle).metadata.num_rows
    return total


UNKNOWN = object()  # the footers cannot tell: a Spark read must


def largest_in_footers(directory: str, column: str):
    """The largest value of a column in a directory's local files, from their footers' statistics;
    None when the directory holds no row; UNKNOWN when the files are not local or carry no statistics."""
    import pyarrow.parquet as pq

    files = fs.list_data_files([directory]) if fs.exists(directory) else []
    if not files:
        return None
    local = [local_path(f.path) for f in files]
    if not all(local):
        return UNKNOWN
    largest = None
    for path in local:
        metadata = pq.ParquetFile(path).metadata
        if metadata.num_rows == 0:
            continue
        index = metadata.schema.names.index(column) if column in metadata.schema.names else None
        for group in range(metadata.num_row_groups):
            stats = metadata.row_group(group).column(index).statistics if index is not None else None
            if stats is None or not stats.has_min_max:
                return UNKNOWN
            value = stats.max.decode() if isinstance(stats.max, bytes) else stats.max
            largest = value if largest is None or value > largest else largest
    return largest
