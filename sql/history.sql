-- Every version of one business key, oldest first. Key values are bound as parameters (text),
-- read as the key column's type: a binary key from base64, as slice and history write it.
SELECT *
FROM {{ table | ident }}
WHERE {% for k in keys %}{{ k | ident }} = {% if types[k] == "binary" %}unbase64(:key{{ loop.index0 }}){% else %}CAST(:key{{ loop.index0 }} AS {{ types[k] }}){% endif %}{{ " AND " if not loop.last }}{% endfor %}

ORDER BY {{ begin_column | ident }}, {{ end_column | ident }}
