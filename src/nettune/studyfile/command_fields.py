"""The fields a workload that is any command adds to [workload] (`engine = "command"`), and
how sweep values enter its command strings (the command kind's rules: command_workload.py).

    [workload]
    engine = "command"
    host = "{machine}"                          # which host runs it (sweepable)
    setup = "rm -rf /tmp/b && mkdir /tmp/b"     # before every run, not timed
    run = ["make", "-C", "/tmp/b", "-j{jobs}"]  # timed; a list is an argv: no shell
    cleanup = "..."                             # after every run, not timed
    cwd = "/srv/gdb"
    env = { LC_ALL = "C" }
    timeout = 600                               # seconds each of setup, run, cleanup may take

A list runs as an argv, without a shell. A string runs through `sh -c` because the user
wrote a string, and each sweep value substituted into it is shell-quoted (shlex.quote),
so a value is always one word, never shell syntax. A placeholder inside quotes would
undo that quoting (`'{v}'` becomes `''$(x)''`), so it is refused when the file is read.
"""
from __future__ import annotations

import re
import shlex
from typing import Annotated, Any, Union

from pydantic import BaseModel, Field, StringConstraints

from . import expr

# An argv word may be a whole placeholder ("{jobs}" fills in a number): made text when run.
ArgvWord = Union[str, int, float]
Command = Union[Annotated[str, StringConstraints(min_length=1)], Annotated[list[ArgvWord], Field(min_length=1)]]
COMMAND_FIELDS = ("setup", "run", "cleanup")


class CommandFields(BaseModel):
    """What a command workload adds to [workload] (ignored by the network engines)."""

    host: str | None = Field(default=None, description='engine = "command": the host that runs it (default: the target\'s first host); sweepable, e.g. "{machine}".')
    setup: Command | None = Field(default=None, description='engine = "command": run before every run, not timed. A list is an argv (no shell); a string runs with sh -c, sweep values in it shell-quoted.')
    run: Command | None = Field(default=None, description='engine = "command": the timed command (required). Its wall seconds are the primary metric (lower is better).')
    cleanup: Command | None = Field(default=None, description='engine = "command": run after every run (also after a failed one), not timed.')
    cwd: str | None = Field(default=None, description='engine = "command": working directory of setup, run and cleanup on the host.')
    env: dict[str, str] = Field(default_factory=dict, description='engine = "command": variables added to the environment of setup, run and cleanup.')


def command_field(wl: CommandFields, name: str) -> Any:
    """One of setup/run/cleanup of a workload, by name."""
    return {"setup": wl.setup, "run": wl.run, "cleanup": wl.cleanup}[name]


# a placeholder, or a doubled brace standing for a literal one ("{{" -> "{", as in str.format):
# command text is full of braces (C code, awk, ${VAR}) that are not sweep parameters
TOKEN = re.compile(r"\{\{|\}\}|\{([^{}]+)\}")


def placeholder_in_quotes(text: str) -> str | None:
    """The first {placeholder} of a shell string that sits inside '...' or "..." (None: none).
    A plain scan of sh quoting: backslash escapes outside single quotes, quotes toggle."""
    quote = ""
    i = 0
    while i < len(text):
        m = TOKEN.match(text, i)
        if m:
            if m.group(1) is not None and quote:
                return m.group(0)
            i = m.end()
            continue
        c = text[i]
        if c == "\\" and quote != "'":
            i += 2
            continue
        if quote and c == quote:
            quote = ""
        elif not quote and c in "'\"":
            quote = c
        i += 1
    return None


_HEREDOC = re.compile(r"<<(?!<)(-?)[ \t]*(?:'([^'\n]*)'|\"([^\"\n]*)\"|\\?([A-Za-z0-9_.:+-]+))")


def placeholder_unquotable(text: str) -> tuple[str, str] | None:
    """("here-document" | "comment", the placeholder) of the first placeholder of a shell
    string that no quoting can protect (None: none). A scan of sh syntax as far as it
    matters here: quotes, backslashes, $((...)) (where << is a shift), comments, and
    here-documents (the body runs from the next line to the delimiter line)."""
    quote, arith, i = "", 0, 0
    pending: list[tuple[str, bool]] = []  # here-documents opened on this line: (delimiter, <<- strips tabs)
    at_word = True
    while i < len(text):
        m = TOKEN.match(text, i)
        if m:
            i, at_word = m.end(), False
            continue
        c = text[i]
        if c == "\\" and quote != "'":
            i, at_word = i + 2, False
            continue
        if quote:
            quote = "" if c == quote else quote
            i += 1
            continue
        if c in "'\"":
            quote, i, at_word = c, i + 1, False
            continue
        if text.startswith("$((", i) or (text.startswith("((", i) and at_word):
            arith, i = arith + 1, i + (3 if c == "$" else 2)
            continue
        if arith and text.startswith("))", i):
            arith, i = arith - 1, i + 2
            continue
        if c == "#" and at_word and not arith:
            end = text.find("\n", i)
            end = len(text) if end < 0 else end
            found = _placeholder(text[i:end])
            if found:
                return "comment", found
            i = end
            continue
        h = _HEREDOC.match(text, i) if not arith else None
        if h:
            pending.append((next(g for g in h.groups()[1:] if g is not None), h.group(1) == "-"))
            i, at_word = h.end(), False
            continue
        if c == "\n" and pending:
            i += 1
            for delim, strip in pending:
                while i < len(text):
                    end = text.find("\n", i)
                    end = len(text) if end < 0 else end
                    line = text[i:end]
                    i = end + 1
                    if (line.lstrip("\t") if strip else line) == delim:
                        break
                    found = _placeholder(line)
                    if found:
                        return "here-document", found
            pending, at_word = [], True
            continue
        at_word = c in " \t\n;&|()"
        i += 1
    return None


def _placeholder(text: str) -> str | None:
    return next((m.group(0) for m in TOKEN.finditer(text) if m.group(1) is not None), None)


def _sub(text: str, env: dict[str, Any], quote: Any) -> str:
    def one(m: re.Match[str]) -> str:
        if m.group(1) is None:
            return m.group(0)[0]  # "{{" -> "{", "}}" -> "}"
        return str(quote(expr._fmt(expr.evaluate(m.group(1), env))))

    return TOKEN.sub(one, text)


def fill_command(value: Any, env: dict[str, Any]) -> Any:
    """A setup/run/cleanup value for one point: an argv list filled word by word (no shell
    ever reads it; a word that is one placeholder keeps the value's type); a string with
    every substituted value shell-quoted. "{{" and "}}" stand for literal braces."""
    if isinstance(value, str):
        return _sub(value, env, shlex.quote)
    if isinstance(value, list):
        out = []
        for word in value:
            whole = expr._PLACEHOLDER.fullmatch(word.strip()) if isinstance(word, str) else None
            out.append(expr.evaluate(whole.group(1), env) if whole else _sub(word, env, str) if isinstance(word, str) else word)
        return out
    return value


def fill_workload(raw: dict[str, Any], env: dict[str, Any]) -> dict[str, Any]:
    """The workload section filled for a point: its command strings quoted (fill_command),
    every other field as usual (expr.fill)."""
    out = expr.fill({k: v for k, v in raw.items() if k not in COMMAND_FIELDS}, env)
    for k in COMMAND_FIELDS:
        if k in raw:
            out[k] = fill_command(raw[k], env)
    return out
