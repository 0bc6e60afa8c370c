-- Versions whose validity interval is empty or inverted, or that lack a begin.
SELECT *
FROM {{ table | ident }}
WHERE {{ begin_column | ident }} IS NULL
   OR {{ begin_column | ident }} {{ ">=" if end_style == "exclusive" else ">" }} {{ end_column | ident }}
