"""Hosts named on the command line (`nettune doctor HOST`, `nettune ceiling HOST`): each
looked up in an inventory when one is given, else in ssh_config like `ssh NAME`, and
connected with the same trust rules as a study's ssh target."""
from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator

from ...errors import NettuneError


@contextmanager
def named_ssh_hosts(names: list[str], inventory: str | None = None, command: str = "nettune") -> Iterator[list[Any]]:
    """Connected SshHosts for `names`, closed on the way out. `command` starts the one-line
    error a bad name gets ("doctor web-1: ...")."""
    from pydantic import ValidationError

    from ...studyfile.ssh_hosts import SshTargetSpec
    from .ssh import SshError, SshHost
    from .sshproc import EventLoopThread

    raw: dict[str, Any] = {"kind": "ssh"}
    if inventory:
        raw["inventory"] = inventory  # its hosts only: a name it lacks is an error, never looked up elsewhere
    else:
        raw["hosts"] = {n: {} for n in names}  # each looked up like `ssh NAME`
    from ...studyfile.local_commands import allow_local_commands

    try:
        with allow_local_commands():  # these hosts are connected to at once: evaluated as ssh would
            spec = SshTargetSpec.model_validate(raw)
    except ValidationError as e:
        first = e.errors(include_url=False)[0]
        raise NettuneError(f"{command} {' '.join(names)}: {first['msg'].removeprefix('Value error, ')}") from None
    missing = [n for n in names if n not in spec.hosts]
    if missing:
        raise NettuneError(f"{command} {' '.join(missing)}: not a host of the inventory {inventory} (its hosts: {', '.join(spec.hosts)}); "
                           "name one of them, or leave --inventory out to look the name up like `ssh NAME`")
    loop = EventLoopThread()
    hosts = [SshHost(n, spec.hosts[n], loop, spec.trust_on_first_use, spec.connect_timeout) for n in names]
    try:
        for h in hosts:
            try:
                h.connect()
            except SshError as e:
                raise NettuneError(str(e)) from None
        yield hosts
    finally:
        for h in hosts:
            h.close()
        loop.stop()
