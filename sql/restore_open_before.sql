-- The open partition as it was at the end of the day before {{ first }}, which a rerun of
-- {{ first }} restores: every version that began before {{ first }} and was still open then.
-- The runs of {{ first }} and later closed versions with an end on or after {{ closed_end }}
-- ({{ first }} itself with exclusive ends, the day before with inclusive ends); those versions
-- are open again, with their end reset to {{ open_end }}. Versions that began on or after
-- {{ first }} are left out: the replay makes them again.
-- With source.updated_at, their valid-to column is reset to the open end as well.
SELECT
{% for c in columns %}
{% if c == valid_to_column %}
  CAST({{ open_end | lit }} AS {{ valid_to_type }}) AS {{ c | column }},
{% else %}
  {{ c | column }},
{% endif %}
{% endfor %}
  {{ begin_column | ident }}
FROM {{ table | ident }}
WHERE {{ begin_column | ident }} < {{ first | lit }}
  AND {{ end_column | ident }} >= {{ closed_end | lit }}
