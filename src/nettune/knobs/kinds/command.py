"""command:NAME = {value = "...", read = CMD, apply = CMD, restore = CMD, scope = "host"|"machine"}

For a setting nettune has no kind for. CMD is either a string, run as
`sh -c CMD nettune-knob VALUE` (the value is $1, never pasted into the shell text), or an
argv list that gets VALUE appended as its last argument. `read` prints the current value;
`restore` gets the original value the same way (default: `apply`). The commands are
journaled with the value, and the run's begin record holds the study file's path and
SHA-256: `nettune restore` runs them only while that file is unchanged and declares this
knob with these same commands (knobs/verify.py); else it says so and leaves the value,
with the way to put it back by hand.
Braces are sweep placeholders in a study file: write $1, not ${1}.
"""
from __future__ import annotations

import dataclasses
import shlex
from typing import Any

from ...targets.base import Host
from ..base import Ctx, Kind, KnobError, Loc, Persisted, catalog_row, check_plain, run_ok


def argv_for(cmd: str | list[str], value: Any | None) -> list[str]:
    extra = [] if value is None else [str(value)]
    if isinstance(cmd, str):
        return ["sh", "-c", cmd, "nettune-knob", *extra]
    return [*cmd, *extra]


class Command(Kind):
    name = "command"
    takes_arg, example_arg = "required", "mysetting"
    table_value = True
    table_hint = "{value = ..., read = ..., apply = ..., restore = ...}"
    declared_only = True  # restore runs the journaled commands only as the study file declares them

    def parse(self, loc: Loc, raw: Any) -> dict[str, Any]:
        spec = dict(raw)  # the filled-in table (plan.points dumps the study's models)
        for field in ("read", "apply"):
            if not spec.get(field):
                raise KnobError(f"{loc.key}: needs {field} (a shell string or an argv list)")
        for field in ("read", "apply", "restore"):
            cmd = spec.get(field)
            if isinstance(cmd, list) and not all(isinstance(x, str) and x for x in cmd):
                raise KnobError(f"{loc.key}: {field} must be a list of non-empty strings")
        if spec.get("scope", "host") not in ("host", "machine"):
            raise KnobError(f"{loc.key}: scope is host or machine")
        v = spec.get("value")
        spec["value"] = ("1" if v else "0") if isinstance(v, bool) else " ".join(str(v).split())
        return spec

    def check_value(self, loc: Loc, value: Any) -> None:
        """A journaled value: one line of text, as parse leaves it (the commands are loc.spec,
        checked against the study file by verify.py)."""
        check_plain(loc, value)
        if not isinstance(value, str):
            raise KnobError(f"{loc.key}: the journaled value is not text")

    def check_reading(self, loc: Loc, value: Any) -> None:
        self.check_value(loc, value)  # what read gives: the command's output, on one line

    def split(self, loc: Loc, parsed: Any) -> tuple[Loc, Any]:
        spec = {k: parsed.get(k) for k in ("read", "apply", "restore", "scope")}
        return dataclasses.replace(loc, spec=spec), parsed["value"]

    def slot_key(self, loc: Loc) -> str:
        return loc.key  # its commands are the setting

    def scope(self, ex: Host, loc: Loc) -> str:
        return "machine" if (loc.spec or {}).get("scope") == "machine" else "ns"

    def validate(self, ex: Host, loc: Loc, value: Any, ctx: Ctx) -> None:
        if not ctx.scratch:
            self.read(ex, loc)

    def read(self, ex: Host, loc: Loc) -> str:
        return " ".join(run_ok(ex, argv_for(loc.spec["read"], None), f"{loc.key} read").split())

    def apply(self, ex: Host, loc: Loc, value: Any) -> None:
        run_ok(ex, argv_for(loc.spec["apply"], value), f"{loc.key} apply")

    def restore(self, ex: Host, loc: Loc, original: Any) -> None:
        run_ok(ex, argv_for(loc.spec.get("restore") or loc.spec["apply"], original), f"{loc.key} restore")

    def same(self, a: Any, b: Any) -> bool:
        return " ".join(str(a).split()) == " ".join(str(b).split())

    def linux_sysctls(self, loc: Loc) -> list[str] | None:
        return None  # its commands may write anything

    def commands(self, loc: Loc, value: Any) -> list[str]:
        return [shlex.join(argv_for(loc.spec["apply"], value))] if loc.spec else []

    def persisted(self, loc: Loc, value: Any) -> Persisted:
        return Persisted(notes=[f"{loc.key} = {value!r}: a command knob; its apply command is in the study file"])

    def catalog(self) -> list[dict[str, str]]:
        return [catalog_row(
            "command", '"command:NAME" = {value = "{x}", read = "...", apply = \'... "$1"\', restore = "..."}',
            "host (or machine)", "any setting via your own read/apply/restore commands", "-", "-", "whatever the command needs",
            "yours: nettune journals and replays exactly what the commands print/accept", "",
        )]
