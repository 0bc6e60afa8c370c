-- Keys with more than one open version.
SELECT {% for k in keys %}{{ k | ident }}, {% endfor %}COUNT(*) AS versions
FROM {{ table | ident }}
WHERE {{ end_column | ident }} = {{ open_end | lit }}
GROUP BY {% for k in keys %}{{ k | ident }}{{ ", " if not loop.last }}{% endfor %}

HAVING COUNT(*) > 1
