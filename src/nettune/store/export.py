"""`nettune export`: one row per run, the sweep parameters as columns, for pandas,
spreadsheets and other tools. Every run is exported (warm-up and failed ones too, with
their flags) so nothing is hidden; filter on `warmup` and `ok` downstream.
"""
from __future__ import annotations

import io
import json
import math
from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import NettuneError
from .sqlite import METRICS

FORMATS = ("csv", "json", "parquet")
BASE = ["study", "study_id", "point_idx"]
RUN = ["run", "warmup", "ok", "error", "engine", "tool_version", "protocol", "started", "duration"]
AFTER = ["total_bps", *METRICS, "n_streams", "warnings"]


def param_names(runs: list[dict[str, Any]]) -> list[str]:
    """Every parameter of every point, in first-seen order."""
    names: dict[str, None] = {}
    for r in runs:
        names.update(dict.fromkeys(r["point"]))
    return list(names)


def column(name: str) -> str:
    """A parameter's column; prefixed only if it would shadow a run column."""
    return f"param_{name}" if name in BASE or name in RUN or name in AFTER else name


def rows(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    params = param_names(runs)
    out = []
    for r in runs:
        row: dict[str, Any] = {"study": r["study"], "study_id": r["study_id"], "point_idx": r["point_idx"]}
        row |= {column(p): r["point"].get(p) for p in params}
        row |= {k: r.get(k) for k in RUN}
        total = None if r.get("receiver_bps") is None else r["receiver_bps"] + (r.get("reverse_receiver_bps") or 0.0)
        row["total_bps"] = total
        row |= {k: r.get(k) for k in METRICS}
        row["n_streams"] = len([s for s in r.get("streams") or [] if s.get("direction", "forward") == "forward"]) or None
        row["warnings"] = "; ".join(r.get("warnings") or [])
        out.append(row)
    return out


def frame(runs: list[dict[str, Any]]) -> pd.DataFrame:
    recs = rows(runs)
    cols = BASE + [column(p) for p in param_names(runs)] + RUN + AFTER
    df = pd.DataFrame.from_records(recs, columns=cols)
    for c in df.columns:
        kinds = {type(v) for v in df[c] if v is not None and not (isinstance(v, float) and math.isnan(v))}
        # a parameter that is 1 at one point and "auto" at another: parquet needs one type
        if len(kinds) > 1 and not kinds <= {int, float}:
            df[c] = [None if v is None else str(v) for v in df[c]]
    return df


def _json_value(v: Any) -> Any:
    if isinstance(v, float) and math.isnan(v):
        return None
    return v.item() if hasattr(v, "item") else v


def export(runs: list[dict[str, Any]], fmt: str, out: Path | None) -> str | None:
    """Write the runs as `fmt` to `out`; without `out` return the text (csv, json)."""
    if fmt not in FORMATS:
        raise NettuneError(f"--format {fmt!r}: use csv, json or parquet")
    if fmt == "parquet" and out is None:
        raise NettuneError("--format parquet is binary: give --out FILE.parquet")
    if fmt == "json":
        # built from the records, not the frame: keeps ints as ints and None as null
        text = json.dumps([{k: _json_value(v) for k, v in r.items()} for r in rows(runs)], indent=2) + "\n"
    else:
        df = frame(runs)
        if fmt == "parquet":
            _write(out, lambda p: df.to_parquet(p, index=False))  # type: ignore[arg-type]
            return None
        buf = io.StringIO()
        df.to_csv(buf, index=False)
        text = buf.getvalue()
    if out is None:
        return text
    _write(out, lambda p: p.write_text(text))
    return None


def _write(out: Path | None, writer: Any) -> None:
    assert out is not None
    try:
        writer(out)
    except OSError as e:
        raise NettuneError(f"--out {out}: cannot write ({e.strerror})") from None
