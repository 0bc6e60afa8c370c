-- Versions whose validity interval is empty or inverted, or that lack a begin.
{% if validity %}
-- With source.updated_at, a version that began and ended within one day (its end the day's
-- closed end) is no empty interval when its valid_from is before its valid_to.
{% endif %}
SELECT *
FROM {{ table | ident }}
WHERE {{ begin_column | ident }} IS NULL
   OR ({{ begin_column | ident }} {{ ">=" if end_style == "exclusive" else ">" }} {{ end_column | ident }}
{% if validity %}
       AND NOT ({{ begin_column | ident }} = {{ end_column | ident if end_style == "exclusive" else "DATE_FORMAT(DATE_ADD(" ~ (end_column | ident) ~ ", 1), 'yyyy-MM-dd')" }}
                AND {{ validity[0] | ident }} < {{ validity[1] | ident }})
{% endif %}
       )
