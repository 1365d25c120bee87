"""Exporters: the files and text nettune writes from a table of runs or points, one format
per file in this package (csv, json, markdown, parquet), each an `ExporterBase` subclass
listed in `base.MEMBERS`, the registry `nettune results --format`, `nettune export
--format` and `nettune report` ask; runs.py builds the tables of runs they are given."""
