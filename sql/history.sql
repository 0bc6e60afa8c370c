-- Every version of one business key, oldest first. Key values are bound as parameters.
SELECT *
FROM {{ table | ident }}
WHERE {% for k in keys %}CAST({{ k | ident }} AS STRING) = :key{{ loop.index0 }}{{ " AND " if not loop.last }}{% endfor %}

ORDER BY {{ begin_column | ident }}, {{ end_column | ident }}
