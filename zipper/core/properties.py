"""Names of the table properties that more than the table layer reads."""

P_KEYS = "zipper.keys"  # the table's key columns, comma-separated (a landing zone's may come from the zone)
