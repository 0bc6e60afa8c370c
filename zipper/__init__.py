"""zipper: daily SCD type 2 ("zipper") tables on Hive with PySpark."""

__version__ = "0.1.0"
