"""A kernel command line as its boot loader builds it, every character traced to the
place it comes from, and the edit that sets one parameter there.

Each family (bootloader.py) reads its files the way its boot loader does (grub-mkconfig
sourcing /etc/default/grub and its drop-ins, GRUB's blscfg joining a BLS entry's
`options` lines and expanding grubenv variables, kernel-install skipping comment lines)
into a Traced string: characters that remember their source (a file, a grubenv
variable) and offset there, and zero-width anchors where a new parameter may be added.
`plan` then says what to change, source by source: the word of the parameter where the
loader takes it from (the kernel uses the last occurrence), or a new word at the anchor.
The family applies the changes to its files and reads them again: the edit stands only
if the parameter now has the value and every other word is as before.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .base import KnobError


@dataclass(frozen=True)
class Origin:
    source: str  # a file path, or "grubenv:NAME" for a grubenv variable
    at: int  # offset in that source's text (the file, or the variable's value)
    quote: str = ""  # where a character can be inserted: '"', "'" (inside quotes), "" (a word in the open, a BLS line), "none" (needs new quotes)
    space: bool = False  # an anchor after text of its own: a new word there needs a space before it


@dataclass(frozen=True)
class TChar:
    ch: str  # one character, or "" for an anchor (where a new parameter may go)
    origin: Origin | None  # None: made by the loader (the space between two variables), or the output of a command


@dataclass
class Traced:
    chars: list[TChar] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "".join(c.ch for c in self.chars)

    def add(self, other: "Traced") -> "Traced":
        return Traced(self.chars + other.chars)

    @staticmethod
    def made(text: str) -> "Traced":
        return Traced([TChar(c, None) for c in text])


@dataclass(frozen=True)
class Change:
    source: str
    start: int  # [start, end) of the source's text is replaced by `text`
    end: int
    text: str
    quote: str = ""


def words(t: Traced) -> list[tuple[int, int]]:
    """[start, end) in t.chars of each word before a lone `--` (after it: init's words)."""
    out: list[tuple[int, int]] = []
    i, n = 0, len(t.chars)
    while i < n:
        if t.chars[i].ch == "" or t.chars[i].ch.isspace():
            i += 1
            continue
        j = i
        while j < n and (t.chars[j].ch == "" or not t.chars[j].ch.isspace()):
            j += 1
        w = "".join(c.ch for c in t.chars[i:j])
        if w == "--":
            break
        out.append((i, j))
        i = j
    return out


def same_key(a: str, b: str) -> bool:
    """The kernel treats - and _ in a parameter name alike."""
    return a.replace("-", "_") == b.replace("-", "_")


def occurrences(t: Traced, key: str) -> list[tuple[int, int]]:
    return [(a, b) for a, b in words(t) if same_key("".join(c.ch for c in t.chars[a:b]).partition("=")[0], key)]


def plan(t: Traced, key: str, tok: str | None, anchor: Origin | None, where: str) -> list[Change]:
    """The changes that give `key` the word `tok` (None: no `key` at all) in `t`: the last
    occurrence replaced (the kernel takes the last), or `tok` added at `anchor`; to remove,
    every occurrence goes with one space beside it. `where` names the command line in errors."""
    found = occurrences(t, key)
    if tok is None:
        return [_remove(t, a, b, where) for a, b in found]
    if found:
        a, b = found[-1]
        src, start, end, quote = _span(t, a, b, where)
        return [Change(src, start, end, tok, quote)]
    if anchor is None:
        raise KnobError(f"{where}: no place to add {tok} that the boot loader reads")
    lead = " " if anchor.space else ""
    if anchor.quote == "none":  # a word in the open: the new words go in quotes of their own
        return [Change(anchor.source, anchor.at, anchor.at, f'"{lead}{tok}"', anchor.quote)]
    return [Change(anchor.source, anchor.at, anchor.at, lead + tok, anchor.quote)]


def _span(t: Traced, a: int, b: int, where: str) -> tuple[str, int, int, str]:
    """Where word t[a:b] is written: one source, one run of characters written as they read."""
    cs = [c for c in t.chars[a:b] if c.ch]
    origins = [c.origin for c in cs]
    word = "".join(c.ch for c in cs)
    if any(o is None for o in origins):
        raise KnobError(f"{where}: {word!r} is made by a command or by the boot loader itself, not written in a file; nettune cannot edit it")
    src = {o.source for o in origins if o is not None}
    if len(src) != 1:
        raise KnobError(f"{where}: {word!r} is put together from {' and '.join(sorted(src))}; nettune edits a parameter written in one place")
    first, last = origins[0], origins[-1]
    assert first is not None and last is not None
    if [o.at for o in origins if o is not None] != list(range(first.at, first.at + len(origins))) or first.quote != last.quote:
        raise KnobError(f"{where}: {word!r} is written with quotes or escapes inside it; nettune edits a parameter written plainly")
    return first.source, first.at, last.at + 1, first.quote


def _remove(t: Traced, a: int, b: int, where: str) -> Change:
    """The word and one space next to it in the same source (the one before, else after)."""
    src, start, end, quote = _span(t, a, b, where)
    chars = t.chars
    for i in (a - 1, b):
        j = i
        while 0 <= j < len(chars) and chars[j].ch == "":
            j += -1 if i < a else 1  # anchors are zero-width
        if 0 <= j < len(chars) and chars[j].ch in " \t" and chars[j].origin is not None and chars[j].origin.source == src:
            at = chars[j].origin.at
            if at == start - 1:
                return Change(src, at, end, "", quote)
            if at == end:
                return Change(src, start, at + 1, "", quote)
    return Change(src, start, end, "", quote)


def apply(text: str, changes: list[Change]) -> str:
    """One source's text with its changes made (from the end, so offsets stay valid)."""
    for c in sorted(changes, key=lambda c: c.start, reverse=True):
        text = text[:c.start] + c.text + text[c.end:]
    return text


def check(before: Traced, after: Traced, key: str, tok: str | None, where: str) -> None:
    """The edit gave `key` its new word and left every other word as it was."""
    def others(t: Traced) -> list[str]:
        return [w for a, b in words(t) if not same_key((w := "".join(c.ch for c in t.chars[a:b])).partition("=")[0], key)]

    got = [("".join(c.ch for c in after.chars[a:b])) for a, b in occurrences(after, key)]
    want_ok = (not got) if tok is None else (bool(got) and got[-1] == tok)
    if not want_ok or others(before) != others(after):
        raise KnobError(f"{where}: nettune's edit would not give the boot loader {tok or 'no ' + key} alone "
                        f"(it would read {' '.join(got) or 'nothing'} for {key}); edit it by hand")
