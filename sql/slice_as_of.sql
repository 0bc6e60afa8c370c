-- The table as it was at the end of day {{ as_of }}.
-- exclusive end: begin <= d AND d < end;  inclusive end: begin <= d AND d <= end.
SELECT *
FROM {{ table | ident }}
WHERE {{ begin_column | ident }} <= {{ as_of | lit }}
  AND {{ as_of | lit }} {{ "<" if end_style == "exclusive" else "<=" }} {{ end_column | ident }}
ORDER BY {% for k in keys %}{{ k | ident }}{{ ", " if not loop.last }}{% endfor %}
