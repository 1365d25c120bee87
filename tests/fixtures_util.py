"""Loading the captured engine outputs under tests/fixtures/<engine>/<mode> (made by
tests/fixtures/capture.py), shared by the iperf2 and iperf3 engine tests."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from nettune.engines.result import SideOutput
from nettune.studyfile.models import Workload

FIXTURES = Path(__file__).parent / "fixtures"


def read_or_empty(p: Path) -> str:
    return p.read_text() if p.exists() else ""


def load_capture(fix: Path, mode: str) -> tuple[Workload, SideOutput, SideOutput, dict[str, Any]]:
    """(workload, client output, server output, meta.json) of one captured mode."""
    d = fix / mode
    meta = json.loads((d / "meta.json").read_text())
    wl = Workload.model_validate({k: v for k, v in meta["workload"].items() if k in Workload.model_fields})
    sides = [
        SideOutput(role=r, host=r, argv=meta[f"{r}_argv"] or [], stdout=read_or_empty(d / f"{r}.stdout"), stderr=read_or_empty(d / f"{r}.stderr"))
        for r in ("client", "server")
    ]
    return wl, sides[0], sides[1], meta


def close(a: float | None, b: float | None, rel: float = 0.01) -> bool:
    return a is not None and b is not None and abs(a - b) <= rel * max(abs(a), abs(b), 1e-9)
