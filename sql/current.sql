-- Current state: the open partition.
SELECT *
FROM {{ table | ident }}
WHERE {{ end_column | ident }} = {{ open_end | lit }}
