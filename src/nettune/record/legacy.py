"""The `extra` JSON a stored run keeps, and the typed parts it holds.

Databases written before the typed parts keep them in `runs.extra_json` as plain keys
(`"pair"`, `"command"`, `"energy"`, `"reverse"`, `"num_streams"`, `"per_process"` ...).
nettune still writes that shape (so a script or an older nettune reading `extra` finds
what it always found) and reads it back into the parts here, in one place. What the JSON
holds is untrusted: a part that does not validate is kept as it was, in `details`, and
read as absent.
"""
from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError

from .parts import CommandRun, EngineChoice, EnergyRun, FanOut, HostEnergy, MeterReading, PairPlace, ReverseDirection, ToolDetails

PAIR_KEYS = tuple(PairPlace.model_fields)  # flat in `extra`: pair, server, client, round, round_total_bps, round_pairs, parallel
TOOL_KEYS = tuple(ToolDetails.model_fields)  # flat too
FANOUT_KEYS = ("processes", "per_process")
# the parts of a result and its other typed fields, by the name TestResult and RunRecord give them
PARTS = ("pair", "command", "energy", "reverse", "tool", "fanout", "engine_choice", "cpu_units")


def _valid(model: type[BaseModel], value: Any) -> Any:
    try:
        return model.model_validate(value)
    except ValidationError:
        return None


def _command(c: Any) -> CommandRun | None:
    if not isinstance(c, dict):
        return None
    run = _valid(CommandRun, {k: v for k, v in c.items() if k in CommandRun.model_fields})
    if isinstance(run, CommandRun) and run.timed_out:
        run.wall_s = None  # a run stopped at the timeout has no wall time of its own
    return run if isinstance(run, CommandRun) else None


def _energy(e: Any) -> EnergyRun | None:
    if not isinstance(e, dict):
        return None
    hosts = {str(k): _valid(HostEnergy, v) for k, v in e.items() if k != "meter" and isinstance(v, dict)}
    meter = _valid(MeterReading, e["meter"]) if isinstance(e.get("meter"), dict) else None
    if any(h is None for h in hosts.values()) or ("meter" in e and meter is None):
        return None
    return EnergyRun(hosts=hosts, meter=meter).settle()


def split(extra: dict[str, Any]) -> dict[str, Any]:
    """A stored (or legacy-constructed) `extra` as the typed fields of a result: the parts
    found (see PARTS) and `details`, every key no part took (or that did not validate)."""
    rest = dict(extra) if isinstance(extra, dict) else {}
    out: dict[str, Any] = {}

    def take(name: str, keys: tuple[str, ...], value: Any) -> None:
        if value is not None:
            out[name] = value
            for k in keys:
                rest.pop(k, None)

    if any(k in rest for k in PAIR_KEYS):
        take("pair", PAIR_KEYS, _valid(PairPlace, {k: rest[k] for k in PAIR_KEYS if k in rest}))
    take("command", ("command",), _command(rest.get("command")))
    take("energy", ("energy",), _energy(rest.get("energy")))
    take("reverse", ("reverse",), _valid(ReverseDirection, rest["reverse"]) if isinstance(rest.get("reverse"), dict) else None)
    if any(k in rest for k in TOOL_KEYS):
        take("tool", TOOL_KEYS, _valid(ToolDetails, {k: rest[k] for k in TOOL_KEYS if k in rest}))
    if "processes" in rest:
        take("fanout", FANOUT_KEYS, _valid(FanOut, {k: rest[k] for k in FANOUT_KEYS if k in rest}))
    if isinstance(rest.get("engine_choice"), dict):
        take("engine_choice", ("engine_choice",), _valid(EngineChoice, rest["engine_choice"]))
    units = rest.get("cpu_units")
    if isinstance(units, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in units.items()):
        take("cpu_units", ("cpu_units",), dict(units))
    out["details"] = rest
    return out


def join(parts: dict[str, Any], details: dict[str, Any]) -> dict[str, Any]:
    """The `extra` JSON of a result: its parts in the shape split reads, then `details`."""
    out: dict[str, Any] = {}
    pair, tool, fanout = parts.get("pair"), parts.get("tool"), parts.get("fanout")
    if pair is not None:
        out.update(pair.model_dump(exclude_none=True))
    if tool is not None:
        out.update(tool.model_dump(exclude_none=True))
    command = parts.get("command")
    if command is not None:
        out["command"] = command.model_dump(exclude_none=True)
    energy = parts.get("energy")
    if energy is not None:
        out["energy"] = {k: h.model_dump(exclude_none=True) for k, h in energy.hosts.items()}
        if energy.meter is not None:
            out["energy"]["meter"] = energy.meter.model_dump(exclude_none=True)
    if parts.get("reverse") is not None:
        out["reverse"] = parts["reverse"].model_dump(exclude_none=True)
    if fanout is not None:
        out.update(fanout.model_dump())
    if parts.get("engine_choice") is not None:
        out["engine_choice"] = parts["engine_choice"].model_dump()
    if parts.get("cpu_units"):
        out["cpu_units"] = dict(parts["cpu_units"])
    return out | {k: v for k, v in details.items() if k not in out}
