"""The study file: models (spec.models), reading and validating it with clear errors
(spec.load). Loading a study with every point expanded is the plan stage's
(nettune.plan.study_file, also `from nettune import load_study, parse_study`)."""
from .load import parse_spec, read_study_text
from .models import Study, json_schema

__all__ = ["Study", "json_schema", "parse_spec", "read_study_text"]
