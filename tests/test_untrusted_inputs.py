"""What nettune reads back is untrusted input (issue 33): a results database or an export
someone sends you, a sweep value in a command string, a study description. Each test is
one defect of the issue, and fails on the code before it was fixed. No root needed."""
from __future__ import annotations

import csv
import io
import sqlite3
import stat
import textwrap
from pathlib import Path

import pytest

from nettune import parse_study
from nettune.engines.result import TestResult as Result
from nettune.errors import SpecError
from nettune.store.writer import StoreWriter
from nettune.studyfile.models import Study

from conftest import nettune


def stored(db: Path, settings: dict, params: dict | None = None, error: str | None = None, description: str = "") -> None:
    """A study of one point and one run, its settings as a crafted database holds them."""
    with StoreWriter(db) as store:
        study = Study.model_validate({"name": "p", "description": description, "target": {"kind": "local"}, "sweep": {"a": [1]}})
        sid = store.begin_study(study, 'name = "p"\n', "p.toml")
        pid = store.add_point(sid, 0, params or {"a": 1})
        ok = error is None
        store.add_run(sid, pid, 0, False, Result(engine="iperf3", tool_version="3.16", ok=ok, error=error, receiver_bps=1e9 if ok else None,
                                                 sender_bps=1e9 if ok else None, duration=1.0), settings)
        store.finish_study(sid, "done")


def persist(tmp_path: Path, point: str = "a=1"):
    return nettune("persist", "p", "--point", point, "--out", str(tmp_path / "out"), "--db", str(tmp_path / "r.db"))


def written(tmp_path: Path) -> list[Path]:
    return [p for p in (tmp_path / "out").rglob("*") if p.is_file()] if (tmp_path / "out").exists() else []


def test_persist_never_writes_outside_its_folder_for_a_host_name_from_the_database(tmp_path):
    stored(tmp_path / "r.db", {"knobs": {"../../escaped": {"sysctl:net.core.rmem_max": "8388608"}}})
    r = persist(tmp_path)
    assert r.returncode != 0 and "'../../escaped': not a host name" in r.stderr, r.stdout + r.stderr
    assert not (tmp_path / "escaped").exists() and written(tmp_path) == []


def test_persist_refuses_a_value_that_would_be_a_second_sysctl_d_line(tmp_path):
    stored(tmp_path / "r.db", {"knobs": {"machine": {"sysctl:net.core.rmem_max": "8388608\nkernel.core_pattern = |/tmp/pwn %p"}}})
    r = persist(tmp_path)
    assert r.returncode != 0 and "more than one line" in r.stderr, r.stdout + r.stderr
    assert written(tmp_path) == []


@pytest.mark.parametrize("key", ["sysctl:kernel.core_pattern", "sysctl:kernel//core_pattern", "sysctl:../../etc/x"])
def test_persist_checks_keys_as_a_study_file_would(tmp_path, key):
    stored(tmp_path / "r.db", {"knobs": {"machine": {key: "5"}, "h/x": {"mtu": 9000}}})
    r = persist(tmp_path)
    refusals = [ln for ln in r.stderr.splitlines() if ln.startswith("error: host ")]
    assert r.returncode != 0 and len(refusals) == 2, r.stderr  # one line per refusal
    assert written(tmp_path) == []


def test_a_point_label_with_a_newline_stays_one_comment_line(tmp_path):
    stored(tmp_path / "r.db", {"knobs": {"machine": {"sysctl:net.core.rmem_max": "8388608"}}}, params={"a": "1\ntouch /tmp/nettune-pwned #"})
    r = persist(tmp_path, "a=1\ntouch /tmp/nettune-pwned #")
    assert r.returncode == 0, r.stderr
    sh = (tmp_path / "out" / "machine" / "apply.sh").read_text().splitlines()
    assert not any(line.startswith("touch") for line in sh), sh
    assert all(line.startswith(("#", "set -e", "IFACE=", "sysctl -w")) for line in sh), sh
    conf = (tmp_path / "out" / "machine" / "99-nettune-p.conf").read_text().splitlines()
    assert all(line.startswith("#") or line == "net.core.rmem_max = 8388608" for line in conf), conf


def test_a_placeholder_inside_a_heredoc_is_refused_with_the_fix():
    text = textwrap.dedent('''
        name = "h"
        [target]
        kind = "local"
        [workload]
        engine = "command"
        run = """cat > /tmp/x <<EOF
        value {v}
        EOF"""
        [sweep]
        v = ["$(id >/tmp/nettune-pwned)"]
        ''')
    with pytest.raises(SpecError) as e:
        parse_study(text, "h.toml")
    msg = str(e.value)
    assert "here-document" in msg and 'env = { V = "{v}" }' in msg and "\n" not in msg


def test_a_placeholder_in_a_comment_is_refused():
    text = 'name = "h"\n[target]\nkind = "local"\n[workload]\nengine = "command"\nrun = "true # {v}"\n[sweep]\nv = ["a"]\n'
    with pytest.raises(SpecError, match="inside a comment"):
        parse_study(text, "h.toml")


def test_csv_cells_a_spreadsheet_would_run_are_neutralised_and_import_gets_them_back(tmp_path):
    db = tmp_path / "r.db"
    stored(db, {}, error="=HYPERLINK(\"http://198.18.0.1/x\",\"click\")")
    out = tmp_path / "e.csv"
    assert nettune("export", "p", "--db", str(db), "--out", str(out)).returncode == 0
    row = next(csv.DictReader(io.StringIO(out.read_text())))
    assert row["error"].startswith("'=HYPERLINK")
    raw = tmp_path / "raw.csv"
    assert nettune("export", "p", "--db", str(db), "--format", "csv-raw", "--out", str(raw)).returncode == 0
    assert next(csv.DictReader(io.StringIO(raw.read_text())))["error"].startswith("=HYPERLINK")
    r = nettune("import", str(out), "--study", "back", "--db", str(tmp_path / "b.db"))
    assert r.returncode == 0, r.stderr
    with StoreWriter(tmp_path / "b.db") as store:
        (run,) = store.runs(store.find_study("back")["id"])
    assert run["error"].startswith("=HYPERLINK")  # the guard is taken off again, exactly


def test_report_md_shows_html_from_the_description_never_renders_it(tmp_path):
    db = tmp_path / "r.db"
    stored(db, {}, description="<script>alert(1)</script> & <img src=x onerror=alert(2)>")
    assert nettune("report", "p", "--db", str(db), "--out", str(tmp_path / "rep")).returncode == 0
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "<script>" not in md and "<img" not in md and "&lt;script>" in md


def test_the_database_exports_and_reports_are_private_files(tmp_path):
    db = tmp_path / "r.db"
    stored(db, {})
    assert stat.S_IMODE(db.stat().st_mode) == 0o600
    for extra in ("-wal", "-shm"):
        side = Path(str(db) + extra)
        if side.exists():
            assert stat.S_IMODE(side.stat().st_mode) == 0o600
    out = tmp_path / "e.json"
    assert nettune("export", "p", "--db", str(db), "--format", "json", "--out", str(out)).returncode == 0
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    assert nettune("report", "p", "--db", str(db), "--out", str(tmp_path / "rep")).returncode == 0
    assert stat.S_IMODE((tmp_path / "rep" / "report.md").stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "rep").stat().st_mode) == 0o700


def test_the_dry_run_refuses_a_denied_sysctl_and_says_danger_for_the_override(tmp_path):
    f = tmp_path / "s.toml"
    f.write_text('name = "d"\n[target]\nkind = "local"\n[workload]\nduration = 1\n[knobs]\n"sysctl:kernel.core_pattern" = "core"\n')
    r = nettune("run", str(f), "--dry-run")
    assert r.returncode == 2 and "never changed automatically" in r.stderr and "sysctl_unsafe" in r.stderr
    f.write_text(f.read_text().replace("sysctl:", "sysctl_unsafe:"))
    r = nettune("run", str(f), "--dry-run")
    assert r.returncode == 0 and "DANGER: sysctl_unsafe:kernel.core_pattern" in " ".join(r.stdout.split())


def test_a_crafted_database_is_refused_for_its_study_name(tmp_path):
    db = tmp_path / "r.db"
    stored(db, {"knobs": {"machine": {"sysctl:net.core.rmem_max": "8388608"}}})
    with sqlite3.connect(db) as c:
        c.execute("UPDATE studies SET name = '../../p'")
    r = nettune("persist", "../../p", "--point", "a=1", "--out", str(tmp_path / "out"), "--db", str(db))
    assert r.returncode != 0 and "not a study name" in r.stderr, r.stdout + r.stderr
    assert written(tmp_path) == [] and not any(p.name.startswith("99-nettune") for p in tmp_path.rglob("*"))
