-- Consecutive versions of a key whose intervals overlap (the key would appear twice in a slice).
SELECT *
FROM (
  SELECT {% for k in keys %}{{ k | ident }}, {% endfor %}{{ begin_column | ident }}, {{ end_column | ident }},
         LAG({{ end_column | ident }}) OVER (
           PARTITION BY {% for k in keys %}{{ k | ident }}{{ ", " if not loop.last }}{% endfor %}

           ORDER BY {{ begin_column | ident }}, {{ end_column | ident }}
         ) AS previous_end
  FROM {{ table | ident }}
{% if validity %}
  -- a version within a day (updated_at), or a late one put in place, is in no day's slice
  WHERE NOT ({{ begin_column | ident }} = {{ end_column | ident if end_style == "exclusive" else "DATE_FORMAT(DATE_ADD(" ~ (end_column | ident) ~ ", 1), 'yyyy-MM-dd')" }}
             AND {{ validity[0] | ident }} < {{ validity[1] | ident }})
{% endif %}
) versions
WHERE previous_end {{ ">" if end_style == "exclusive" else ">=" }} {{ begin_column | ident }}
