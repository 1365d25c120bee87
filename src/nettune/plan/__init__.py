"""From a study to the list of tests: points, resolution of templates, run order."""
from .points import Point, ResolvedPoint, Slot, expand, resolve, schedule

__all__ = ["Point", "ResolvedPoint", "Slot", "expand", "resolve", "schedule"]
