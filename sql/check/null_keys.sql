-- Versions with a NULL in a key column.
SELECT *
FROM {{ table | ident }}
WHERE {% for k in keys %}{{ k | ident }} IS NULL{{ " OR " if not loop.last }}{% endfor %}

