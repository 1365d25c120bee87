"""What a target reports in force at a point: each host's interface as read back (MTU,
queues, address), the knob values the point applied, and whatever else the target's kind
reports (a lab's link shaping and VXLAN nodes, a Kubernetes target's pods and nodes).

`Target.prepare` and `Target.state` return one; the run layer adds the knob values and the
store keeps it with every run as `settings_json` (`to_json`), which `RunRecord.state`
reads back (`from_json`). Readers use the typed fields (`hosts[name].interface`,
`knobs`); the target-specific rest stays as the target wrote it. Item access
(`state["hosts"]["a"]["mtu"]`) keeps scripts written against the plain dict working.
"""
from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError


class _Items(BaseModel):
    """Item access to what was set (`state["hosts"]["a"]["mtu"]`), as on the plain dicts
    targets returned before: scripts written against them keep working."""

    def __getitem__(self, key: str) -> Any:
        if key in self.model_fields_set or key in (self.model_extra or {}):
            return self.__dict__[key] if key in type(self).model_fields else (self.model_extra or {})[key]
        raise KeyError(key)

    def get(self, key: str, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default


class HostState(_Items):
    """One host's interface as the target read it back (None: the target does not say)."""

    model_config = ConfigDict(extra="allow")  # a target's own keys: role, pod, node ...
    interface: str | None = None
    address: str | None = None
    mtu: int | None = None
    tx_queues: int | None = None
    rx_queues: int | None = None


class PointState(_Items):
    """The settings in force at a point (see the module's docstring)."""

    model_config = ConfigDict(extra="allow")  # shaping, nodes, context, namespace, same_node ...
    hosts: dict[str, HostState] = Field(default_factory=dict)
    knobs: dict[str, dict[str, Any]] = Field(default_factory=dict)  # host (or "machine") -> knob key -> value
    # host (or "machine") -> what the knobs decide beyond their own values, read after all were
    # set: a tuned profile's and an amd_pstate mode's scaling driver, governor and EPP
    read_back: dict[str, dict[str, Any]] = Field(default_factory=dict)

    def with_knobs(self, knobs: dict[str, dict[str, Any]]) -> "PointState":
        return self.model_copy(update={"knobs": knobs})

    def merged(self, newer: "PointState") -> "PointState":
        """This state with what `newer` (a read-back after the knobs) reports instead."""
        return PointState.model_validate(self.to_json() | newer.to_json())

    def to_json(self) -> dict[str, Any]:
        """The stored form: only what the target (and the knobs) reported."""
        return self.model_dump(exclude_unset=True)

    @classmethod
    def from_json(cls, data: Any) -> "PointState":
        """A stored settings dict; one that does not validate reads as an empty state
        with its keys kept as they were (what nettune reads back is untrusted)."""
        if not isinstance(data, dict):
            return cls()
        try:
            return cls.model_validate(data)
        except ValidationError:
            return cls.model_validate({k: v for k, v in data.items() if k not in ("hosts", "knobs", "read_back")})

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and key in self.to_json()

