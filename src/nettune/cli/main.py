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


_register()


def main() -> None:  # pragma: no cover - entry point
    app(prog_name="nettune")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
