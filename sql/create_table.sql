-- The zipper table: one Hive table partitioned by the end column, in the table's file format
-- (`stored_as`: zipper/table/file_format.py, Parquet).
-- Partition '{{ open_end }}' holds the open (current) versions; every other partition holds
-- the versions closed with that end date.
CREATE EXTERNAL TABLE IF NOT EXISTS {{ table | ident }} (
{% for name, type in columns %}
  {{ name | column }} {{ type }},
{% endfor %}
  {{ begin_column | ident }} STRING
)
PARTITIONED BY ({{ end_column | ident }} STRING)
STORED AS {{ stored_as }}
LOCATION {{ location | lit }}
TBLPROPERTIES ({% for k, v in properties %}{{ k | lit }} = {{ v | lit }}{{ ", " if not loop.last }}{% endfor %})
