"""/etc/default/grub and /etc/default/grub.d/*.cfg read as grub-mkconfig reads them: shell
files it sources (in that order), whose GRUB_CMDLINE_LINUX and GRUB_CMDLINE_LINUX_DEFAULT
10_linux puts on each normal entry's `linux` line, in that order.

What is evaluated, with POSIX sh's rules: assignments (`export` allowed), their values in
double quotes, single quotes or none, backslash escapes and backslash-newline
continuations, `$VAR`/`${VAR}` of variables set earlier, comments after a value, several
assignments on a line split by `;`. Refused, naming the file and line: a command's output
in GRUB_CMDLINE_LINUX* (`$(...)`, backquotes, `${VAR:-...}`), an assignment to them inside
if/case/a loop, or any other command that names them (`unset`, `+=`): nettune cannot tell
what grub-mkconfig gets from those. Every character of the two variables is traced to
where it is written (boot_trace.py), so an edit changes that place only, in the file's
own quoting, and keeps everything else (a trailing comment, the other variable's comment,
the continuation lines) byte for byte.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .base import KnobError
from .boot_trace import Origin, TChar, Traced

GRUB_DEFAULT = "/etc/default/grub"
DROPINS = "/etc/default/grub.d"
VARS = ("GRUB_CMDLINE_LINUX", "GRUB_CMDLINE_LINUX_DEFAULT")
_ASSIGN = re.compile(r"(?:export[ \t]+)?(?P<var>[A-Za-z_][A-Za-z0-9_]*)=")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_OPEN = re.compile(r"(?:if|case|for|while|until|select)\b|\{(?=[ \t\n])|[A-Za-z_][A-Za-z0-9_]*[ \t]*\(\)")
_CLOSE = re.compile(r"(?:fi|esac|done)\b|\}")
_HEREDOC = re.compile(r"<<(?P<dash>-?)[ \t]*(?P<q>['\"]?)(?P<word>[A-Za-z_][A-Za-z0-9_]*)(?P=q)")
UNKNOWN = "\ufffd"  # a character nettune cannot know: a command's output


@dataclass
class Assignment:
    path: str
    line: int  # 1-based, where the assignment starts
    var: str
    value: Traced  # ends with its anchor: where a new word would go
    unknown: str  # why its value is not fully known ("" when it is)


def evaluate(texts: list[tuple[str, str]]) -> tuple[dict[str, Traced], list[Assignment]]:
    """Source each (path, text) in order, as grub-mkconfig does: the variables' values
    and every assignment made."""
    env: dict[str, Traced] = {}
    done: list[Assignment] = []
    for path, text in texts:
        done += _source(path, text, env)
    return env, done


def cmdline(env: dict[str, Traced]) -> Traced:
    """What 10_linux passes a normal entry: "${GRUB_CMDLINE_LINUX} ${GRUB_CMDLINE_LINUX_DEFAULT}"."""
    return env.get(VARS[0], Traced()).add(Traced.made(" ")).add(env.get(VARS[1], Traced()))


def _source(path: str, text: str, env: dict[str, Traced]) -> list[Assignment]:
    out: list[Assignment] = []
    i, n, depth = 0, len(text), 0
    while i < n:
        c = text[i]
        if c in " \t\n;":
            i += 1
            continue
        if c == "\\" and text[i + 1:i + 2] == "\n":
            i += 2
            continue
        if c == "#":
            i = _eol(text, i)
            continue
        line = text.count("\n", 0, i) + 1
        if _CLOSE.match(text, i):
            depth = max(0, depth - 1)
        elif _OPEN.match(text, i):
            depth += 1
        m = _ASSIGN.match(text, i)
        if m is None:
            end = _command_end(text, i)
            if any(v in text[i:end] for v in VARS):
                raise KnobError(f"{path} line {line}: {text[i:end].strip()[:60]!r} uses GRUB_CMDLINE_LINUX* in a command "
                                "nettune does not evaluate; simplify it to VAR=\"...\" lines, or edit the file by hand")
            i = _heredoc_end(text, i, end)
            continue
        var = m["var"]
        value, j, unknown = _word(path, text, m.end(), env)
        if var in VARS:
            if depth:
                raise KnobError(f"{path} line {line}: {var} is set inside an if/case/loop; nettune cannot tell which value "
                                "grub-mkconfig gets (edit it by hand)")
            after = _command_end(text, j) if text[j:j + 1] not in ("", "\n", ";") else j
            rest = text[j:after].strip()
            if rest and not rest.startswith("#"):
                raise KnobError(f"{path} line {line}: {var}=... is followed by {rest[:40]!r} on its line; nettune edits an "
                                "assignment that stands alone (a comment after it is fine)")
        env[var] = value
        out.append(Assignment(path, line, var, value, unknown))
        i = j
    return out


def _word(path: str, text: str, i: int, env: dict[str, Traced]) -> tuple[Traced, int, str]:
    """The value of the word at i (an assignment's right side), traced; where it ends; and
    why it is not fully known."""
    chars: list[TChar] = []
    unknown = ""
    last = "none"  # the quoting of the word's last part: where its anchor goes
    anchor_at = i
    n = len(text)
    while i < n:
        c = text[i]
        if c in " \t\n;&|<>()":
            break
        if c == "\\":
            if text[i + 1:i + 2] == "\n":
                i += 2
                continue
            if i + 1 < n:
                chars.append(TChar(text[i + 1], Origin(path, i + 1, "\\")))
            i += 2
            last, anchor_at = "none", i
            continue
        if c == "'":
            j = text.find("'", i + 1)
            if j < 0:
                raise KnobError(f"{path} line {text.count(chr(10), 0, i) + 1}: a quote ' that is never closed")
            chars += [TChar(text[k], Origin(path, k, "'")) for k in range(i + 1, j)]
            last, anchor_at, i = "'", j, j + 1
            continue
        if c == '"':
            i, why = _double(path, text, i + 1, env, chars)
            unknown = unknown or why
            last, anchor_at = '"', i - 1
            continue
        if c == "$" or c == "`":
            i, why = _dollar(path, text, i, env, chars, "")
            unknown = unknown or why
            last, anchor_at = "none", i
            continue
        chars.append(TChar(c, Origin(path, i, "")))
        i += 1
        last, anchor_at = "none", i
    text_so_far = "".join(c.ch for c in chars)
    space = bool(text_so_far) and not text_so_far[-1].isspace()
    chars.append(TChar("", Origin(path, anchor_at, last, space)))
    return Traced(chars), i, unknown


def _double(path: str, text: str, i: int, env: dict[str, Traced], chars: list[TChar]) -> tuple[int, str]:
    """The inside of "...", from i (after the opening quote); returns after the closing one."""
    unknown = ""
    n = len(text)
    while i < n:
        c = text[i]
        if c == '"':
            return i + 1, unknown
        if c == "\\" and text[i + 1:i + 2] in ('"', "\\", "$", "`", "\n"):
            if text[i + 1] != "\n":
                chars.append(TChar(text[i + 1], Origin(path, i + 1, "\\")))
            i += 2
            continue
        if c in "$`":
            i, why = _dollar(path, text, i, env, chars, '"')
            unknown = unknown or why
            continue
        chars.append(TChar(c, Origin(path, i, '"')))
        i += 1
    raise KnobError(f"{path}: a quote \" that is never closed")


def _dollar(path: str, text: str, i: int, env: dict[str, Traced], chars: list[TChar], quote: str) -> tuple[int, str]:
    """$NAME, ${NAME}: the variable's value as set so far, characters traced to where they
    are written; $(...), `...`, ${NAME:-...}: a command's output or more, not known."""
    if text[i] == "`":
        j = text.find("`", i + 1)
        if j < 0:
            j = len(text) - 1
        chars.append(TChar(UNKNOWN, None))
        return j + 1, f"the output of `{text[i + 1:j][:30]}`"
    if text[i + 1:i + 2] == "(":
        depth, j = 0, i + 1
        while j < len(text):
            depth += {"(": 1, ")": -1}.get(text[j], 0)
            if depth == 0:
                break
            j += 1
        chars.append(TChar(UNKNOWN, None))
        return j + 1, f"the output of {text[i:j + 1][:30]}"
    if text[i + 1:i + 2] == "{":
        j = text.find("}", i + 2)
        name = text[i + 2:j] if j > 0 else ""
        if not _NAME.fullmatch(name):
            chars.append(TChar(UNKNOWN, None))
            return (j + 1 if j > 0 else len(text)), f"${{{name[:30]}}}"
        chars += env.get(name, Traced()).chars
        return j + 1, ""
    m = _NAME.match(text, i + 1)
    if m is None:  # a lone $ (or $1, $?): the shell keeps a lone one as it is
        if text[i + 1:i + 2].isdigit() or text[i + 1:i + 2] in "?#*@!-$":
            chars.append(TChar(UNKNOWN, None))
            return i + 2, f"${text[i + 1]}"
        chars.append(TChar("$", Origin(path, i, quote)))
        return i + 1, ""
    chars += env.get(m.group(), Traced()).chars
    return m.end(), ""


def _heredoc_end(text: str, i: int, end: int) -> int:
    """After a command with a here-document (`cat <<-EOF ... EOF`), where its body ends:
    the body is data, not assignments."""
    m = _HEREDOC.search(text, i, end)
    if m is None:
        return end
    pos = _eol(text, end) + 1
    while pos < len(text):
        stop = _eol(text, pos)
        body = text[pos:stop]
        if (body.lstrip("\t") if m["dash"] else body) == m["word"]:
            return stop
        pos = stop + 1
    return len(text)


def _eol(text: str, i: int) -> int:
    j = text.find("\n", i)
    return len(text) if j < 0 else j


def _command_end(text: str, i: int) -> int:
    """Where the command at i ends: its line's end, past quotes and continuations."""
    n, q = len(text), ""
    while i < n:
        c = text[i]
        if q:
            if c == "\\" and q == '"':
                i += 2
                continue
            if c == q:
                q = ""
        elif c in "'\"`":
            q = c
        elif c == "\\":
            i += 2
            continue
        elif c in "\n;":
            return i
        elif c == "#" and (i == 0 or text[i - 1] in " \t"):
            return _eol(text, i)
        i += 1
    return n
