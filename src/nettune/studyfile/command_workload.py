"""The command workload kind, its study-file half: any command, timed on one host
(`[workload] engine = "command"`): a build, a benchmark script.

Its one host is `host` (sweepable; default: the target's first test host). Its primary
metric is the wall seconds of `run` (`wall_s`, lower is better). Its fields and how
sweep values enter them: command_fields.py; how a run uses it:
run/workloads/command_run.py.

A list runs as an argv, without a shell. A string runs through `sh -c` because the user
wrote a string, and each sweep value substituted into it is shell-quoted (shlex.quote),
so a value is always one word, never shell syntax. Where quoting cannot hold, a
placeholder is refused when the file is read: inside quotes (`'{v}'` becomes `''$(x)''`),
inside a here-document (the shell expands `$(...)` there and quotes are plain text), and
inside a comment (a newline in the value would end the comment). The fix in each case:
pass the value as an environment variable (env = { V = "{v}" }, then "$V").
"""
from __future__ import annotations

import re

from .command_fields import COMMAND_FIELDS, command_field, placeholder_in_quotes, placeholder_unquotable
from .workload import Workload
from .workload_kind import HostField, PrimaryMetric, WorkloadKindBase


def command_problem(wl: Workload) -> str | None:
    """Why a command workload (engine = "command") is not runnable as written, else None."""
    if wl.run is None:
        return 'engine = "command" needs run = [...] (an argv) or run = "..." (a shell command): the command to time'
    if isinstance(wl.processes, int) and wl.processes > 1 or wl.processes == "auto":
        return 'processes applies to the network engines, not to engine = "command"'
    if wl.pairs is not None:
        return 'pairs applies to the network engines; engine = "command" runs on one host (host = "...", sweepable)'
    for key in wl.env:
        if not key or not (key[0].isalpha() or key[0] == "_") or not all(c.isalnum() or c == "_" for c in key):
            return f"env: {key!r} is not a variable name (letters, digits and _, not starting with a digit)"
    return None


def quoting_problem(wl: Workload) -> str | None:
    """A placeholder inside quotes in a command string as written in the file (checked
    before the point is filled: a filled string no longer tells "{{" from "{")."""
    for name in COMMAND_FIELDS:
        value = command_field(wl, name)
        if isinstance(value, str):
            quoted = placeholder_in_quotes(value)
            if quoted:
                return (f"workload.{name}: the placeholder {quoted} is inside quotes; write it bare (nettune shell-quotes "
                        "every sweep value it puts into a command string), use an argv list, or write {{ }} for literal braces")
            where = placeholder_unquotable(value)
            if where:
                place, token = where
                var = re.sub(r"\W", "_", token.strip("{}")).upper() or "VALUE"
                why = ("the shell expands $(...) and `...` in a here-document, and quotes are plain text there" if place == "here-document"
                       else "a newline in the value would end the comment and run the rest as a command")
                return (f"workload.{name}: the placeholder {token} is inside a {place}, where nettune cannot quote it ({why}); "
                        f"pass it as an environment variable: env = {{ {var} = \"{token}\" }}, then write \"${var}\" there")
    return None


class CommandWorkload(WorkloadKindBase):
    name = "command"
    engines = ("command",)
    primary = PrimaryMetric("wall_s", "seconds", False)
    fixed_length = False  # a command runs as long as it takes

    def check(self, wl: Workload) -> str | None:
        return command_problem(wl)

    def check_written(self, wl: Workload, test_hosts: list[str]) -> str | None:
        return quoting_problem(wl) or super().check_written(wl, test_hosts)

    def host_fields(self, wl: Workload) -> list[HostField]:
        return [HostField("workload.host", wl.host)] if wl.host is not None else []

    def point_hosts(self, wl: Workload, test_hosts: list[str]) -> list[str]:
        return [wl.host or test_hosts[0]]  # default: the target's first host that runs tests
