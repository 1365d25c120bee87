"""Swept parameters and settings as pandas ordered categoricals (Analysis.frame(), the
API's DataFrames): a sweep's levels are categories, in the order a reader expects."""
from __future__ import annotations

import math
from typing import Any

import pandas as pd


def is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def categorical(values: list[Any]) -> pd.Categorical:
    """Values as an ordered categorical: numbers in numeric order (whole numbers as int),
    booleans False then True, anything else (or a mix) as text in first-seen order."""
    seen = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    if seen and all(is_number(v) for v in seen):
        cats: list[Any] = sorted(set(seen))
        if all(float(c).is_integer() for c in cats):
            cats = [int(c) for c in cats]
            values = [None if v is None else int(v) for v in values]
        return pd.Categorical(values, categories=cats, ordered=True)
    if seen and all(isinstance(v, bool) for v in seen):
        return pd.Categorical(values, categories=[c for c in (False, True) if c in seen], ordered=True)
    text = [None if v is None else str(v) for v in values]
    return pd.Categorical(text, categories=list(dict.fromkeys(t for t in text if t is not None)), ordered=True)
