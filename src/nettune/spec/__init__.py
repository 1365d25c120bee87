"""The study file: models (spec.models), loading with clear errors (spec.load)."""
from .load import load_study, parse_study
from .models import Study, json_schema

__all__ = ["Study", "load_study", "parse_study", "json_schema"]
