"""A study file loaded for running: the spec stage (spec.load: TOML checked against the
models), then every point of its sweep expanded and resolved here, and every knob of
every point checked as far as it can be without a connection (knobs/offline.py), so that
a file that loads has no bad expression, out-of-range filled-in value or refused knob
left to fail mid-run, and the dry run refuses what the run refuses."""
from __future__ import annotations

from pathlib import Path

from ..studyfile.load import parse_spec, read_study_text
from ..studyfile.models import Study
from .points import MAX_POINTS, check_point_count, expand_and_check


def load_study(path: str | Path, max_points: int | None = None) -> Study:
    """Read, validate and expand a study file. max_points: refuse a sweep of more points
    (default MAX_POINTS; `nettune run --max-points` raises it). A bad file raises
    `SpecError` naming the line and field. Example::

        study = nettune.load_study("examples/quick.toml")
        study.name, study.target.kind, study.sweep   # 'quick', 'lab', {...}
    """
    return parse_study(read_study_text(path), str(path), max_points)


def parse_study(text: str, file: str = "<study>", max_points: int | None = None) -> Study:
    """Validate a study's TOML text and expand every point (see load_study); `file` names
    it in error messages. Example::

        study = nettune.parse_study('''
        name = "quick"
        [target]
        kind = "lab"
        hosts = ["server", "client"]
        [workload]
        engine = "iperf3"
        duration = 2
        ''')
    """
    study = parse_spec(text, file)
    # Count the points first (refused at once if too many), then expand them: that checks
    # every sweep expression and every filled-in value now, before any host is touched.
    check_point_count(study, MAX_POINTS if max_points is None else max_points, text, file)
    resolved = expand_and_check(study, text, file)
    # the knobs layer's offline checks (a later stage, asked from here like the [knobs]
    # section asks the registry for its key shapes: tests/test_layering.py LATE_IMPORTS)
    from ..knobs.offline import check_offline  # noqa: PLC0415

    check_offline(study, resolved, text, file)
    return study
