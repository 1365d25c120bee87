"""From a study to the list of tests: points, resolution of templates, run order; and
the study file loaded with every point checked (study_file)."""
from .points import Point, ResolvedPoint, Slot, expand, resolve, schedule
from .study_file import load_study, parse_study

__all__ = ["Point", "ResolvedPoint", "Slot", "expand", "load_study", "parse_study", "resolve", "schedule"]
