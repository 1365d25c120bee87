"""The JSON `nettune doctor --format json` prints, as a model (docs/doctor.md shows it;
tests validate real output against it)."""
from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class FindingJson(_Strict):
    check: str
    host: str
    severity: Literal["info", "cannot_tell", "warn", "problem"]
    seen: str
    evidence: str
    why: str
    fix: str
    revert: str
    knob: dict[str, Any] | None
    inputs: list[str]


class SummaryJson(_Strict):
    info: int
    cannot_tell: int
    warn: int
    problem: int


class DoctorJson(_Strict):
    version: Literal[2]
    input: str
    hosts: list[str]
    summary: SummaryJson
    findings: list[FindingJson]
    errors: list[str]
    fixed: list[str] | None = None
    capture: str | None = None
