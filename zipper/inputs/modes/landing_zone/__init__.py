"""Landing-zone change files: a folder per table holding `_metadata.json` ({"keyColumns": [...]})
and Parquet files named with 20 digits (`00000000000000000001.parquet`, ...), each row marked
by `__rowMarker__` (0 insert, 1 update, 2 delete, 4 upsert; a file without it is all inserts).

A date consumes every file numbered after the last one the table consumed, up to the highest
present when the merge starts; a gap in the numbering is an error, and so is a zone that was
reset (its files end before the last one consumed, or a file already consumed was written again
with other contents), which the table would otherwise skip without a word. The merge copies
those files under its run directory (`versions/<run_id>/zipper_landing/`) and reads the copy; the
commit record names the range and the copy (`zipper.landing`), so a replay of the date reads
exactly what the first run read, even after the landing zone has been cleaned. `zipper vacuum`
keeps every copy a commit names.

The modules, by role: `files` (the zone's layout and the record of what a date consumed), `keys`
(`keyColumns`), `locate` (which files a date consumes, and their copy), `read` (the files as one
DataFrame, in file and row order), `checks` (what the rows must hold), `strategy` (the mode's
answers to the jobs)."""

from zipper.inputs.modes.landing_zone.strategy import LandingZone

__all__ = ["LandingZone"]
