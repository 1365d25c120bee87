"""README's sample `nettune run` transcript is what the current code prints: its results table,
re-rendered from the transcript's own numbers at the width it names, must give the same lines,
so a changed header (the CPU units of issue 12) fails here until the README is regenerated."""
from __future__ import annotations

import io
import re
from pathlib import Path

from rich.console import Console

from nettune.engines.result import TestResult as Result
from nettune.plan.study_file import parse_study
from nettune.report.table import rich_table
from nettune.store.writer import StoreWriter

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"


def transcript() -> tuple[int, list[str]]:
    """(the width the transcript was taken at, the lines of its results table with title)."""
    text = README.read_text()
    block = text[text.index("# nettune run examples/quick.toml"):]
    block = block[: block.index("```")]
    said = re.search(r"(\d+) columns\)", block.splitlines()[0])  # the comment line names the terminal width
    width = int(said.group(1)) if said else 100
    lines = block.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("quick (study #1)"))
    end = next(i for i, ln in enumerate(lines) if ln.startswith("└"))
    return width, lines[start:end + 1]


def test_readme_results_table_is_what_run_prints(tmp_path):
    width, shown = transcript()
    rows = [[c.strip() for c in ln.strip("│").split("│")] for ln in shown if ln.startswith("│")]
    assert len(rows) == 6  # examples/quick.toml: 2 x 3 points
    text = (ROOT / "examples" / "quick.toml").read_text()
    with StoreWriter(tmp_path / "r.db") as s:
        sid = s.begin_study(parse_study(text), text, "quick.toml")
        for i, (q, m, streams, gbps, client, server, host, softirq, retrans, status) in enumerate(rows):
            assert status == "ok"
            pid = s.add_point(sid, i, {"queues": int(q), "mult": int(m), "streams": int(streams)})
            s.add_run(sid, pid, 0, False, Result(engine="iperf3", tool_version="3.12", receiver_bps=float(gbps) * 1e9,
                                                  sender_bps=float(gbps) * 1e9, cpu_client=float(client), cpu_server=float(server),
                                                  cpu_host=float(host), cpu_host_softirq=float(softirq), retransmits=int(retrans)))
        runs = s.runs(sid)
    out = Console(width=width, file=io.StringIO(), record=True, color_system=None)
    out.print(rich_table("quick (study #1)", runs, width).table, crop=False)
    assert [ln.rstrip() for ln in out.export_text().splitlines()] == [ln.rstrip() for ln in shown]


def test_readme_transcript_ends_with_the_summary():
    """After the table the run prints the analysis' summary (analysis/digest.py): best, what
    mattered, the recommended point, how sure, and next with the commands, in that order."""
    text = README.read_text()
    block = text[text.index("# nettune run examples/quick.toml"):]
    block = block[: block.index("```")]
    tail = block[block.index("\n└"):].splitlines()[2:]  # after the table and the "N tests; results in" line
    starts = [ln.split(":")[0] for ln in tail if ln.startswith(("best:", "mattered:", "recommended:", "how sure:", "next:"))]
    assert starts == ["best", "mattered", "recommended", "how sure", "next"]
    assert "nettune analyze quick" in " ".join(tail)
