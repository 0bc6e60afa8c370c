-- The classic hand-written daily zipper merge ("left join + union all"), for comparison only:
-- it closes every key present in the increment, changed or not, and rewrites the open
-- partition in place with INSERT OVERWRITE.
INSERT OVERWRITE TABLE {{ table | ident }} PARTITION ({{ end_column | ident }})
SELECT {% for c in columns %}{{ c | ident }}, {% endfor %}{{ begin_column | ident }}, {{ end_column | ident }}
FROM (
  SELECT {% for c in columns %}t1.{{ c | ident }}, {% endfor %}t1.{{ begin_column | ident }},
         IF(t2.{{ keys[0] | ident }} IS NOT NULL, {{ ds | lit }}, {{ open_end | lit }}) AS {{ end_column | ident }}
  FROM (SELECT * FROM {{ table | ident }} WHERE {{ end_column | ident }} = {{ open_end | lit }}) t1
  LEFT JOIN (SELECT {% for k in keys %}{{ k | ident }}{{ ", " if not loop.last }}{% endfor %} FROM {{ increment | ident }}) t2
    ON {% for k in keys %}t1.{{ k | ident }} = t2.{{ k | ident }}{{ " AND " if not loop.last }}{% endfor %}

  UNION ALL
  SELECT {% for c in columns %}{{ c | ident }}, {% endfor %}{{ ds | lit }} AS {{ begin_column | ident }}, {{ open_end | lit }} AS {{ end_column | ident }}
  FROM {{ increment | ident }}
) merged
