"""The columns and actions the merge's transforms hand one another, each named once.

A change set leaves `changes` with columns that later transforms read: a change's action, whether
it is late, a version's step among its key's versions of the day, whether it is the key's last or
its final one, and the kind a merged row is counted as. A transform that reads one names the same
column the one that wrote it did, and a new variant finds the whole vocabulary here. The names
start with `zipper_`, a prefix no table column may have (the spec refuses it)."""

from __future__ import annotations

OP = "zipper_op"  # a change's action: UPSERT or DELETE
LATE = "zipper_late"  # a change put in place in its key's history (transforms.late): older than its latest event
OVERDUE = "zipper_overdue"  # with ignore_null_updates: a LATE change that is older (the key's others are LATE too)
STEP = "zipper_step"  # a version's number among its key's versions of the day (changes.versions_of_day)
LAST = "zipper_last"  # the key's last version of the day
FINAL = "zipper_final"  # the key's last action of the day: whether it ends the day deleted
KIND = "zipper_kind"  # what a merged or replayed row is counted as (new, changed, closed, ...)

UPSERT, DELETE = "upsert", "delete"  # the actions of a change
