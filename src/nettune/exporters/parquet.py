"""Parquet (binary, needs a file): one column per table column, typed by pandas/pyarrow,
the unit of each column in the file's metadata (`pd.read_parquet(f).attrs["units"]`).

A column whose values mix kinds (a parameter that is 1 at one point and "auto" at
another) is written as text: parquet needs one type per column."""
from __future__ import annotations

import math
from pathlib import Path
from typing import IO

import pandas as pd

from ..errors import NettuneError
from .base import ExporterBase, Table


def frame(table: Table) -> pd.DataFrame:
    df = pd.DataFrame.from_records([table.values(r) for r in table.rows], columns=table.columns)
    for c in df.columns:
        kinds = {type(v) for v in df[c] if v is not None and not (isinstance(v, float) and math.isnan(v))}
        if len(kinds) > 1 and not kinds <= {int, float}:
            df[c] = [None if v is None else str(v) for v in df[c]]
    if table.units:
        df.attrs["units"] = {c: u for c, u in table.units.items() if c in table.columns}
    return df


class ParquetExporter(ExporterBase):
    name = "parquet"
    suffix = ".parquet"
    binary = True

    def write(self, table: Table, out: IO[str] | Path) -> None:
        if not isinstance(out, Path):
            raise NettuneError("--format parquet is binary: give --out FILE.parquet")
        frame(table).to_parquet(out, index=False)


EXPORTER = ParquetExporter()
