"""Whether reading a study may run the programs your ssh_config and inventory name.

An ssh_config `Match exec "CMD"` runs CMD on this machine whenever ssh evaluates that
line, and an Ansible inventory script (or inventory plugin) runs whenever Ansible reads the
inventory. A real run (`nettune run`, `nettune hosts` when it connects, `nettune doctor`)
evaluates them as ssh and Ansible do, and says so (each host lists what ran for it). Any
other reading of a study, the dry run first, runs nothing: a `Match exec` is taken as not
matching and named on the hosts it would decide, an inventory script is refused with the
flag that runs it (`--run-config-commands`). The default is to run nothing, so a path that
forgets to decide is safe; the ssh target refuses to connect to a host whose values were
guessed that way.
"""
from __future__ import annotations

import re
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Iterator

_ALLOWED: ContextVar[bool] = ContextVar("nettune_run_config_commands", default=False)
FLAG = "--run-config-commands"


@contextmanager
def allow_local_commands(allowed: bool = True) -> Iterator[None]:
    """Within this block, reading a study runs `Match exec` commands and inventory scripts."""
    token = _ALLOWED.set(allowed)
    try:
        yield
    finally:
        _ALLOWED.reset(token)


def may_run() -> bool:
    return _ALLOWED.get()


# Words that carry a secret in a command line: `sshpass -p PASS`, `--password X`, `password=X`.
_SECRET_FLAG = re.compile(r"^(-p|-P|--pass(word)?|--pw|--token|--secret)$", re.I)
_SECRET_ASSIGN = re.compile(r"^([^=]*?(pass(word|wd)?|pwd|secret|token|key)[^=]*=)(.+)$", re.I)
_SECRET_GLUED = re.compile(r"^(-p)(.+)$")


def redact(text: str) -> str:
    """The command or arguments with password-like values replaced by '***' (warnings,
    errors and the stored study never hold a secret written in an inventory)."""
    words = text.split(" ")
    out: list[str] = []
    hide_next = False
    for w in words:
        bare = w.strip("'\"")
        if hide_next and bare:
            hide_next = False
            if not bare.isdigit():  # `ssh -p 2222` is a port, `sshpass -p WORD` a password
                out.append("***")
                continue
        if _SECRET_FLAG.match(bare):
            hide_next = True
            out.append(w)
            continue
        m = _SECRET_ASSIGN.match(bare)
        if m and not m.group(1).lower().startswith(("-o", "identity", "hostkey", "userknownhosts", "pubkey", "kbd")):
            out.append(m.group(1) + "***")
            continue
        m = _SECRET_GLUED.match(bare)
        if m and "sshpass" in text:
            out.append("-p***")
            continue
        out.append(w)
    return " ".join(out)
