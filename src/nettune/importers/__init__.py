"""`nettune import`: files written outside nettune become runs (importers.base describes
the family; intake.py checks every file, then stores the usable ones)."""
from .base import MEMBERS, Importer, ImporterBase, importers
from .intake import FileOutcome, ImportOutcome, check_args, import_files, import_store, parse_sets, read_file, read_files, read_runs, store_files

__all__ = ["MEMBERS", "FileOutcome", "ImportOutcome", "Importer", "ImporterBase", "check_args", "import_files", "import_store", "importers", "parse_sets",
           "read_file", "read_files", "read_runs", "store_files"]
