"""The notebook walk-through of docs/api.md, executed headless in a real Jupyter kernel
(nbclient + ipykernel), so it cannot rot (issue 35). It runs two lab studies, one from the
cell's thread (which runs an asyncio event loop, as every Jupyter cell does) and one from
a worker thread, loads runs and series as tidy frames, draws a plot and compares the two
studies, using only `import nettune`. Needs root (the lab) and iperf3; ~40 s: two studies
of 2 points x 2 runs of 1 s each."""
from __future__ import annotations

import sqlite3
from pathlib import Path

import nbclient  # with ipykernel: the test extra (pyproject.toml), installed by scripts/env.sh
import nbformat
import pytest

from conftest import lab_leftovers, needs_iperf3, needs_root

pytestmark = [needs_root, needs_iperf3]

NOTEBOOK = Path(__file__).resolve().parents[1] / "examples" / "walkthrough.ipynb"


def _texts(cell) -> list[str]:
    """Everything a cell showed: its streams, results and errors, as text."""
    out = []
    for o in cell.get("outputs", []):
        if o["output_type"] == "stream":
            out.append(o["text"])
        elif o["output_type"] in ("execute_result", "display_data"):
            out.append(o["data"].get("text/plain", ""))
        elif o["output_type"] == "error":
            out.append("\n".join(o["traceback"]))
    return out


def test_the_walkthrough_runs_in_jupyter_and_from_a_thread_without_a_warning(tmp_path, monkeypatch):
    nb = nbformat.read(NOTEBOOK, as_version=4)
    monkeypatch.setenv("NETTUNE_WALKTHROUGH_DIR", str(tmp_path))  # the kernel inherits both
    # the kernel's own records (credentials, labs): a concurrent nettune in another PID
    # namespace would take this run's records for a dead run's and remove its files
    monkeypatch.setenv("NETTUNE_RUN_DIR", str(tmp_path / "run"))
    client = nbclient.NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    code = [c for c in nb.cells if c.cell_type == "code"]
    shown = "\n".join(t for c in code for t in _texts(c))
    # no warning of any kind (the coroutine-never-awaited ones pyroute2 printed in a cell), no error
    assert "Warning" not in shown and "Traceback" not in shown, shown
    assert "['Analysis', 'NettuneError', 'Outcome'" in _texts(code[0])[0]  # dir(nettune): the public names
    ran = "\n".join(_texts(code[1]))
    assert "done 4 tests, 0 failed" in ran and "Gbit/s" in ran  # from the cell's own thread (an event loop runs there)
    assert any(o["output_type"] == "display_data" and "<progress" in o["data"].get("text/html", "")
               for o in code[1]["outputs"])  # progress=True: the HTML bar in the cell
    assert "done 4 tests, 0 failed" in "\n".join(_texts(code[2]))  # from a worker thread
    frames = "\n".join(_texts(code[3]))
    for dtype in ("category", "datetime64[ns, UTC]", "Float64", "Int64"):
        assert dtype in frames
    assert "bit/s" in frames
    assert (tmp_path / "throughput.png").stat().st_size > 10_000  # the plot was drawn
    compared = "\n".join(_texts(code[5]))
    assert "1500" in compared and "9000" in compared and "streams=1" in compared and "streams=4" in compared
    db = sqlite3.connect(tmp_path / "results.db")
    assert db.execute("SELECT name, status FROM studies ORDER BY id").fetchall() == [("before", "done"), ("after", "done")]
    assert lab_leftovers() == {}


STOPPABLE = """
name = "stopme"
[target]
kind = "lab"
hosts = ["server", "client"]
[workload]
engine = "iperf3"
duration = 1
[sweep]
streams = [1, 2, 4]
"""


def test_an_interrupt_in_a_cell_stops_the_study_cleanly(tmp_path, monkeypatch):
    """A cell's thread runs an event loop, so the study runs on its own thread; an
    interrupt in the cell (here: raised by the progress callback the cell runs, as the stop
    button raises it between two bytecodes) ends it after the test in flight: the study
    is marked interrupted, the lab removed, KeyboardInterrupt raised in the cell."""
    import asyncio
    import threading

    import nettune

    monkeypatch.setenv("NETTUNE_RUN_DIR", str(tmp_path / "run"))
    db = tmp_path / "r.db"
    seen: list[tuple[str, str]] = []

    def stop_after_the_first(u: nettune.ProgressUpdate) -> None:
        seen.append((u.event, threading.current_thread().name))
        if u.event == "test_end":
            raise KeyboardInterrupt

    async def cell() -> None:  # what Jupyter runs a cell in
        nettune.run_study(STOPPABLE, db=db, progress=stop_after_the_first, doctor=False)

    with pytest.raises(KeyboardInterrupt):
        asyncio.run(cell())
    assert {name for _, name in seen} == {threading.current_thread().name}  # the callback ran in the "cell"
    with nettune.Store(db) as store:
        (study,) = store.studies()
        assert study["status"] == "interrupted" and 1 <= study["runs"] < 3
    assert lab_leftovers() == {}
