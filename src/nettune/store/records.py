"""The stored test as readers get it: `Store.runs` returns one `RunRecord` per row of
`runs`, its JSON columns decoded, with the values derived from them (total throughput,
retransmits per GB, the main direction's streams) computed here and nowhere else.

Its measurement attributes are the field table's (record/fields.py), inherited: a row
added there is an attribute here. The typed parts a result carries (command, energy,
reverse, tool, fanout, engine choice) are read back from the stored `extra` JSON.
"""
from __future__ import annotations

import json
from functools import cached_property
from typing import Any, Mapping

from pydantic import Field

from ..record.fields import CommandColumns, EnergyColumns, Measures, PairColumns
from ..record.legacy import split
from ..record.parts import CommandRun, EngineChoice, EnergyRun, FanOut, ReverseDirection, ToolDetails
from ..record.point_state import PointState


class RunRecord(Measures, CommandColumns, EnergyColumns, PairColumns):
    """One stored test: its slot (study, point, run number), what ran, its values (bits/s,
    bytes, %, as in the field table), and its series as stored JSON (nettune's own pydantic
    model; `Store.runs` gives them, `nettune.results(db).runs()` the same as a DataFrame).
    Example::

        with nettune.Store("results.db") as store:
            rec = store.runs(store.find_study("quick")["id"])[0]
            rec.point, rec.receiver_bps, rec.state.knobs, rec.intervals[0]["bps"]
    """

    id: int
    study_id: int
    point_id: int
    run: int  # 0-based within its point, warm-ups first: the number every output shows
    warmup: bool
    ok: bool
    error: str | None
    engine: str
    tool_version: str | None
    protocol: str | None
    started: float | None
    cpu_extra: dict[str, float] = Field(default_factory=dict)
    tool_cpu: dict[str, float] = Field(default_factory=dict)
    warnings: list[str] = Field(default_factory=list)
    streams: list[dict[str, Any]] = Field(default_factory=list)  # StreamResult dumps (None fields left out)
    intervals: list[dict[str, Any]] = Field(default_factory=list)  # Interval dumps
    settings: dict[str, Any] = Field(default_factory=dict)  # target state and knob values in force (PointState's JSON)
    extra: dict[str, Any] = Field(default_factory=dict)  # the typed parts as stored JSON (record/legacy.py) and details
    cpu_units: dict[str, str] = Field(default_factory=dict)  # unit of each CPU figure (store/cpu_units.py)
    point_idx: int = 0
    point: dict[str, Any] = Field(default_factory=dict)  # the sweep parameters of this test
    study: str = ""  # the study's name

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> "RunRecord":
        """A row of `SELECT r.*, p.idx AS point_idx, p.params_json, s.name AS study`.
        Columns this nettune does not know (a newer one added them) are left out."""
        d = dict(row)
        d["point"] = json.loads(d.pop("params_json"))
        for k in [k for k in d if k.endswith("_json")]:
            d[k.removesuffix("_json")] = json.loads(d.pop(k))
        d["ok"], d["warmup"] = bool(d["ok"]), bool(d["warmup"])
        return cls.model_construct(**{k: v for k, v in d.items() if k in _FIELDS})

    # -- derived values -------------------------------------------------------------
    @property
    def forward_streams(self) -> list[dict[str, Any]]:
        """The streams of the main direction (a bidir test also has 'reverse' ones)."""
        return [s for s in self.streams if s.get("direction", "forward") == "forward"]

    @property
    def n_streams(self) -> int | None:
        """Streams in the main direction: counted from the stored streams, else what the
        tool said (an import of an export without its series)."""
        return len(self.forward_streams) or self.tool.num_streams

    @property
    def state(self) -> PointState:
        """The settings in force (`settings`) as a PointState."""
        return PointState.from_json(self.settings)

    # -- the typed parts, read back from `extra` ------------------------------------
    @cached_property
    def _parts(self) -> dict[str, Any]:
        return split(self.extra)

    @property
    def command(self) -> CommandRun | None:
        out: CommandRun | None = self._parts.get("command")
        return out

    @property
    def energy(self) -> EnergyRun | None:
        out: EnergyRun | None = self._parts.get("energy")
        return out

    @property
    def reverse(self) -> ReverseDirection | None:
        out: ReverseDirection | None = self._parts.get("reverse")
        return out

    @property
    def tool(self) -> ToolDetails:
        out: ToolDetails = self._parts.get("tool") or ToolDetails()
        return out

    @property
    def fanout(self) -> FanOut | None:
        out: FanOut | None = self._parts.get("fanout")
        return out

    @property
    def engine_choice(self) -> EngineChoice | None:
        out: EngineChoice | None = self._parts.get("engine_choice")
        return out

    @property
    def processes(self) -> int:
        """Tool processes of the test (1 unless `[workload] processes` fanned it out)."""
        return self.fanout.processes if self.fanout is not None and self.fanout.processes > 0 else 1

    # -- plain forms ----------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The stored columns as a plain dict (what Store.runs returned before records)."""
        return {name: self.__dict__[name] for name in _FIELDS}

    def __getitem__(self, key: str) -> Any:
        """Read access by column name, so notebooks and scripts written against the plain
        dicts (`run["receiver_bps"]`, `run["point"]["queues"]`) keep working."""
        if key not in _FIELDS:
            raise KeyError(key)
        return self.__dict__[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self.__dict__[key] if key in _FIELDS else default


_FIELDS = tuple(RunRecord.model_fields)
