-- Versions that begin after the last committed date, or closed after it.
SELECT *
FROM {{ table | ident }}
WHERE {{ begin_column | ident }} > {{ last_committed | lit }}
   OR ({{ end_column | ident }} <> {{ open_end | lit }} AND {{ end_column | ident }} > {{ last_closed_end | lit }})
