"""Help texts render without stray line breaks: a docstring wrapped in the source must not
print as a sentence broken mid-line ("the fix / and the revert") in `nettune --help`, a
group's help or a command's own help."""
from __future__ import annotations

import re

from typer.testing import CliRunner

from nettune.cli.main import app

GROUPS = {"knobs", "lab", "k8s"}


def help_text(*args: str) -> str:
    """`nettune ARGS --help` at 250 columns, in this process (about 40 screens: a
    subprocess each would take a minute)."""
    result = CliRunner().invoke(app, [*args, "--help"], env={"COLUMNS": "250"}, prog_name="nettune")
    assert result.exit_code == 0, result.output
    return result.output


def commands_panel(text: str) -> list[str]:
    """The rows of the Commands panel, continuation rows included."""
    panel = text.split("─ Commands ─", 1)[1].split("╰", 1)[0]
    return [ln.strip("│ ") for ln in panel.splitlines()[1:] if ln.strip("│ ")]


def room_after(raw: str, width: int = 250) -> int:
    """Columns left free at the end of a rendered line: the padding before a panel's closing
    bar, or what is left of the terminal's width."""
    body = raw.rstrip()
    if body.endswith("│"):
        inner = body[:-1]
        return len(inner) - len(inner.rstrip())
    return width - len(body)


def broken_sentences(text: str) -> list[str]:
    """Adjacent lines where a sentence continues on the next line although its next word
    would have fitted on the line before (a list wrapped at the panel's edge is not broken)."""
    raw = text.splitlines()
    lines = [ln.strip(" │") for ln in raw]
    return [f"{a[-50:]} / {b[:50]}" for ra, a, b in zip(raw, lines, lines[1:])
            if a and b and re.search(r"[a-z,]$", a) and re.match(r"[a-z(]", b) and not a.startswith("-")
            and len(b.split()[0]) + 1 < room_after(ra)]


def all_commands() -> list[list[str]]:
    top = help_text()
    found = []
    for row in commands_panel(top):
        name = row.split()[0]
        if name in GROUPS:
            found += [[name, sub.split()[0]] for sub in commands_panel(help_text(name))]
        else:
            found.append([name])
    return found


def test_command_lists_give_each_command_one_line():
    # at 250 columns every summary fits, so a second line can only be a stray break
    for group in ([], *([g] for g in sorted(GROUPS))):
        rows = commands_panel(help_text(*group))
        names = [r.split()[0] for r in rows]
        assert all(re.fullmatch(r"[a-z][\w-]*", n) for n in names), (group, rows)
        assert len(rows) >= 2, (group, rows)


def test_no_help_text_breaks_a_sentence():
    commands = all_commands()
    assert ["doctor"] in commands and ["lab", "up"] in commands
    bad = {" ".join(c): broken for c in commands if (broken := broken_sentences(help_text(*c)))}
    assert bad == {}
