"""The `nettune` command: the app lives in cli/app.py; each group of commands lives in
its own cli/ module and is registered here by importing it."""
from __future__ import annotations

import sys

from .app import app


def _register() -> None:
    # one import per command group; each module adds its commands to `app`
    from . import analysis_commands, check_commands, doctor_commands, hosts_commands, knobs_commands, lab_commands, results_commands, run_commands  # noqa: F401
    from . import ceiling_commands  # noqa: F401
    from . import k8s_commands  # noqa: F401
    from . import history_commands  # noqa: F401


_register()


def _one_line_summaries(typer_app: object) -> None:
    """The command lists (`nettune --help`, `nettune lab --help`) show each command's first
    paragraph; in rich markup mode typer keeps that paragraph's line breaks, so a docstring
    wrapped at 100 columns printed as broken lines ("the fix / and the revert"). Give each
    command a short help of its first paragraph with the breaks joined; the command's own
    --help (which joins them itself) is unchanged."""
    import inspect

    for info in typer_app.registered_commands:  # type: ignore[attr-defined]
        doc = info.help or (inspect.getdoc(info.callback) if info.callback else None)
        if doc and not info.short_help:
            info.short_help = " ".join(doc.split("\n\n")[0].split())
    for group in typer_app.registered_groups:  # type: ignore[attr-defined]
        _one_line_summaries(group.typer_instance)


_one_line_summaries(app)


def main() -> None:  # pragma: no cover - entry point
    app(prog_name="nettune")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
