"""sysctl_field:NAME:N = VALUE: one field of a sysctl holding several numbers, the others
kept as the host has them ("sysctl_field:net.ipv4.tcp_rmem:3" = 8388608 sets the
autotuning maximum and keeps min and default).

Read gives the whole value ("4096 131072 6291456"), which is what the journal keeps as
the original, so a restore writes the host's own three numbers back. Scope, paths and the
FreeBSD form are the sysctl kind's (sysctl.py); the OS-neutral `sockbuf` kind uses this
one for the TCP buffer ranges of Linux.
"""
from __future__ import annotations

import re
from typing import Any

from ...targets.base import Host
from ..base import Ctx, Kind, KnobError, Loc, Persisted, catalog_row, whole
from .sysctl import Sysctl, norm

_ARG = re.compile(r"^(?P<name>[A-Za-z0-9_][A-Za-z0-9_./-]*):(?P<n>[1-9])$")
_SYSCTL = Sysctl()


def split_arg(loc: Loc) -> tuple[str, int]:
    m = _ARG.match(loc.arg or "")
    if not m:
        raise KnobError(f"{loc.key}: write sysctl_field:NAME:N, N the field from 1 (e.g. 'sysctl_field:net.ipv4.tcp_rmem:3')")
    return m.group("name"), int(m.group("n"))


def _whole_loc(loc: Loc) -> Loc:
    return Loc(loc.key, "sysctl", split_arg(loc)[0], None)


KEEP = "*"  # a field the value leaves as the host has it


class SysctlField(Kind):
    """The value is a pattern ("* * 8388608": keep, keep, set), so it carries its field and
    compares with a whole value read back ("4096 131072 8388608") without its key."""

    name = "sysctl_field"
    takes_arg, example_arg = "required", "net.ipv4.tcp_rmem:3"

    def check_loc(self, loc: Loc) -> None:
        _SYSCTL.check_loc(_whole_loc(loc))  # the sysctl kind's canonical names and denylist apply

    def check_reading(self, loc: Loc, value: Any) -> None:
        _SYSCTL.check_reading(_whole_loc(loc), value)  # what read gives: the sysctl's whole value

    def parse(self, loc: Loc, raw: Any) -> str:
        name, n = split_arg(loc)
        self.check_loc(loc)
        if isinstance(raw, str) and KEEP in raw:  # a pattern already (the sockbuf kind builds them)
            pattern = norm(raw).split()
            if not all(f == KEEP or re.fullmatch(r"-?\d+", f) for f in pattern):
                raise KnobError(f"{loc.key}: {raw!r} is not a field pattern (whole numbers and {KEEP})")
            return " ".join(pattern)
        _SYSCTL.parse(_whole_loc(loc), raw)
        return " ".join([KEEP] * (n - 1) + [str(whole(loc, raw, 0, 2**62))])

    def scope(self, ex: Host, loc: Loc) -> str:
        return _SYSCTL.scope(ex, _whole_loc(loc))

    def validate(self, ex: Host, loc: Loc, value: Any, ctx: Ctx) -> None:
        cur = self.read(ex, loc)
        _SYSCTL.validate(ex, _whole_loc(loc), self._merged(loc, cur, value), ctx)

    def read(self, ex: Host, loc: Loc) -> str:
        return _SYSCTL.read(ex, _whole_loc(loc))

    def _merged(self, loc: Loc, current: str, value: Any) -> str:
        """The whole value to write: the pattern over the current fields (a whole value,
        as a restore gives, is written as it is)."""
        want, have = norm(value).split(), norm(current).split()
        if len(want) > len(have) or not all(re.fullmatch(r"-?\d+", f) for f in have):
            raise KnobError(f"{loc.key}: {split_arg(loc)[0]} reads {current!r}, not {len(want)} or more whole numbers")
        return " ".join(w if w != KEEP else h for w, h in zip(want, have)) + "".join(" " + h for h in have[len(want):])

    def apply(self, ex: Host, loc: Loc, value: Any) -> None:
        _SYSCTL.apply(ex, _whole_loc(loc), self._merged(loc, self.read(ex, loc), value))

    def same(self, a: Any, b: Any) -> bool:
        x, y = norm(a).split(), norm(b).split()
        if KEEP not in x and KEEP not in y:
            return x == y
        return all(p == q or KEEP in (p, q) for p, q in zip(x, y))

    def show(self, value: Any) -> str:
        return norm(value)

    def linux_sysctls(self, loc: Loc) -> list[str] | None:
        return [split_arg(loc)[0].replace("/", ".")]

    def commands(self, loc: Loc, value: Any) -> list[str]:
        name = split_arg(loc)[0]
        fields = norm(value).split()
        if KEEP not in fields:
            return _SYSCTL.commands(_whole_loc(loc), value)
        sets = "; ".join(f"${i}={f}" for i, f in enumerate(fields, 1) if f != KEEP)
        return [f"sysctl -w {name}=\"$(sysctl -n {name} | awk '{{{sets}; print}}')\""]

    def persisted(self, loc: Loc, value: Any) -> Persisted:
        return Persisted(shell=self.commands(loc, value), notes=[
            f"{loc.key}: sysctl.d needs the whole value of {split_arg(loc)[0]}; apply.sh sets field {split_arg(loc)[1]} and keeps the others"])

    def catalog(self) -> list[dict[str, str]]:
        return [catalog_row("sysctl_field", '"sysctl_field:net.ipv4.tcp_rmem:3" = 8388608', "as the sysctl",
                            "one field of a sysctl of several numbers, the others kept", "-", "-", "no", "as the sysctl", "")]
