"""Broker-side message filters: SQL92 selectors (:mod:`.sql92`) and the per-group
filter-data registry plus the cheap record-properties reader (:mod:`.manager`)."""

from .sql92 import JLong, Sql92Expression, SQL92ParseError, clear_cache, compile_sql92

__all__ = ["JLong", "SQL92ParseError", "Sql92Expression", "clear_cache", "compile_sql92"]
