"""Issue 34: every example measures the path, not the tool. A throughput example never pins
iperf3 with several streams in one process (before 3.16 that is one thread: its verdict would
be "the tool was the bottleneck", which engine = "auto" or processes avoid), and every example
dry-runs as shipped (those that need an SSH lab run against one in tests/test_examples.py)."""
import tomllib

import pytest
from typer.testing import CliRunner

from nettune.cli.main import app

from conftest import EXAMPLES

NEEDS_LAB_UP = {"ssh-lab.toml", "bastion-lab.toml"}  # hosts written by `nettune lab up --ssh`: test_examples.py runs them
ALL = sorted(p.name for p in EXAMPLES.glob("*.toml"))


def several_streams(parallel) -> bool:
    """Whether a test of the workload may run more than one stream (a template may)."""
    return parallel is not None and (isinstance(parallel, str) or parallel > 1)


@pytest.mark.parametrize("name", ALL)
def test_no_example_pins_a_one_thread_iperf3(name):
    wl = tomllib.loads((EXAMPLES / name).read_text()).get("workload", {})
    if wl.get("engine", "auto") != "iperf3" or not several_streams(wl.get("parallel")) or wl.get("processes"):
        return
    pytest.fail(f'{name}: engine = "iperf3" with parallel = {wl["parallel"]!r} and no processes: on iperf3 before 3.16 '
                'every stream shares one thread and the verdict is the tool, not the path; use engine = "auto"')


def test_the_rule_catches_a_pinned_iperf3(tmp_path, monkeypatch):
    (tmp_path / "x.toml").write_text('[workload]\nengine = "iperf3"\nparallel = "{streams}"\n')
    monkeypatch.setattr("test_examples_dry_run.EXAMPLES", tmp_path)
    with pytest.raises(pytest.fail.Exception, match='use engine = "auto"'):
        test_no_example_pins_a_one_thread_iperf3("x.toml")


@pytest.mark.parametrize("name", [n for n in ALL if n not in NEEDS_LAB_UP])
def test_every_example_dry_runs(name, tmp_path):
    # in process (a subprocess per example costs seconds of CI each); the CLI as a user calls it
    r = CliRunner().invoke(app, ["run", str(EXAMPLES / name), "--dry-run", "--db", str(tmp_path / "r.db")],
                           env={"KUBECONFIG": str(tmp_path / "none"), "COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    assert "Traceback" not in r.output and "error:" not in r.output
    assert not (tmp_path / "r.db").exists()
