"""--help shows every word of a help text: a study-file section named in one ("[target]",
"[search]") is no rich markup tag to drop ("Study file whose  kind = \"lab\"")."""
from __future__ import annotations

import re

import typer
from typer.testing import CliRunner

from nettune.cli.main import app


def _commands(cmd, path: list[str]):
    yield path, cmd
    if isinstance(cmd, typer.core.TyperGroup):
        for name, sub in cmd.commands.items():
            yield from _commands(sub, [*path, name])


def test_every_bracketed_word_of_a_help_text_is_shown():
    root = typer.main.get_command(app)
    checked = 0
    for path, cmd in _commands(root, []):
        texts = [cmd.help or ""] + [p.help or "" for p in cmd.params if isinstance(p, (typer.core.TyperOption, typer.core.TyperArgument))]
        words = {w for t in texts for w in re.findall(r"\[[a-z][a-z._]*\]", t)}
        if not words:
            continue
        out = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "300"}, prog_name="nettune").output
        missing = [w for w in words if w not in out]
        assert not missing, (path, missing)
        checked += 1
    assert checked >= 4  # persist --best, lab up, hosts, kubernetes name study-file sections
