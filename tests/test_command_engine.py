"""engine = "command": real commands on the local and lab targets, through run_study and
the CLI: wall/CPU/RSS/exit per run, a failing run recorded and the study going on, a
timeout that stops the whole process group, hostile sweep values that never run
anything, and lower-is-better verdicts."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from conftest import needs_root, nettune
from nettune import parse_study
from nettune.store.writer import StoreWriter
from nettune.run.study import run_study
from nettune.errors import SpecError


def local_study(workload: str, sweep: str = "", repeat: str = "", name: str = "nettune-t-cmd") -> str:
    return (f'name = "{name}"\n[target]\nkind = "local"\nhosts = ["local"]\n'
            f'[workload]\nengine = "command"\n{workload}\n' + (f"[sweep]\n{sweep}\n" if sweep else "")
            + (f"[repeat]\n{repeat}\n" if repeat else ""))


def run(text: str, tmp_path: Path):
    with StoreWriter(tmp_path / "r.db") as store:
        out = run_study(parse_study(text), store)
        return out, store.runs(out.study_id), [store.raw_outputs(r.id) for r in store.runs(out.study_id)]


@pytest.fixture(autouse=True)
def private_state(tmp_path, monkeypatch):
    monkeypatch.setenv("NETTUNE_STATE_DIR", str(tmp_path / "state"))


def test_wall_cpu_rss_and_exit_are_stored_and_adaptive_repeats_stop(tmp_path):
    busy = "i=0; while [ $i -lt 30000 ]; do i=$((i+1)); done"
    text = local_study(f'run = ["sh", "-c", "{busy}"]\nsetup = "mkdir -p {tmp_path}/w"\ncleanup = ["rm", "-rf", "{tmp_path}/w"]',
                       repeat="min_runs = 2\nmax_runs = 4\ntarget_margin = 0.5")
    out, runs, _ = run(text, tmp_path)
    assert out.status == "done" and out.failed == 0
    assert 2 <= len(runs) <= 4  # adaptive: stopped on the wall time's margin, not at max on a missing value
    for r in runs:
        assert r.ok and r.engine == "command" and r.exit_code == 0
        assert r.wall_s > 0 and r.duration == r.wall_s
        assert r.cpu_s > 0 and r.cpu_user_s is not None and r.cpu_sys_s is not None
        assert 0 < r.peak_rss_kb < 20 * 1024 and r.cpu_host is not None  # a shell's size, never nettune's ~130 MiB
        assert r.extra["command"]["setup"]["exit_code"] == 0 and r.extra["command"]["cleanup"]["exit_code"] == 0
    assert not (tmp_path / "w").exists()


def test_cpu_of_the_whole_process_tree_is_counted(tmp_path):
    # the CPU is burned by a grandchild (sh -> sh -> loop), reaped by its parent: wait4 counts it
    busy = "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done"
    out, runs, _ = run(local_study(f"run = [\"sh\", \"-c\", \"sh -c '{busy}'; sleep 0.2\"]"), tmp_path)
    r = runs[0]
    assert r.ok and r.cpu_s > 0.05 and r.wall_s >= 0.2  # without the grandchild: ~0.003 s of two shells


def test_a_failing_run_is_recorded_with_stderr_and_the_study_goes_on(tmp_path):
    text = local_study('run = "echo building >&2; echo boom at step {code} >&2; exit {code}"', sweep="code = [0, 3]",
                       repeat="runs = 2")
    out, runs, _ = run(text, tmp_path)
    assert out.status == "done" and out.failed == 2 and len(runs) == 4
    bad = [r for r in runs if r.point["code"] == 3]
    assert all(not r.ok and r.exit_code == 3 and "exited with code 3" in r.error and "boom at step 3" in r.error for r in bad)
    assert bad[0].extra["command"]["stderr_tail"] == ["building", "boom at step 3"]
    assert all(r.ok for r in runs if r.point["code"] == 0)
    with StoreWriter(tmp_path / "r.db") as store:  # analyze and compare go by the ok point; the failure is counted
        from nettune.analysis.analyze import analyze
        from nettune.analysis.data import load

        a = analyze(load(store, out.study_id))
    assert a.metric == "wall" and not a.higher_is_better and [p.failed for p in a.points] == [0, 2]


def test_a_failing_setup_skips_the_run_but_cleanup_runs(tmp_path):
    marker = tmp_path / "cleaned"
    text = local_study(f'setup = "echo no disk >&2; exit 4"\nrun = ["true"]\ncleanup = ["touch", "{marker}"]')
    out, runs, raw = run(text, tmp_path)
    assert out.status == "done" and not runs[0].ok and "setup exited with code 4: no disk" in runs[0].error
    assert runs[0].wall_s is None and raw[0] == [] and marker.exists()


def _alive_with(arg: str) -> list[int]:
    found = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                if arg.encode() in Path(f"/proc/{d}/cmdline").read_bytes().split(b"\0") and \
                        Path(f"/proc/{d}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
                    found.append(int(d))
            except OSError:
                pass
    return found


def test_timeout_stops_the_whole_process_group(tmp_path):
    secs = f"{37 + os.getpid() % 1000 / 1000:.3f}"  # an argument no other process has
    text = local_study(f'run = "sleep {secs} & sleep {secs}; wait"\ntimeout = 1')
    out, runs, _ = run(text, tmp_path)
    assert out.status == "done" and not runs[0].ok and "did not finish within 1s" in runs[0].error
    assert runs[0].extra["command"]["timed_out"] and runs[0].wall_s is None
    assert _alive_with(secs) == []  # the background sleep (same group) was stopped too


HOSTILE = ["$(touch {m})", "`touch {m}`", "1; touch {m}", "x\ntouch {m}", "x' ; touch {m}; '", "| touch {m}", "a b"]


def test_hostile_values_never_run_anything(tmp_path):
    marker = tmp_path / "pwned"
    values = [v.format(m=marker) for v in HOSTILE]
    sweep = "v = [" + ", ".join(json.dumps(v) for v in values) + "]"
    # a string command (sh -c, values shell-quoted), an argv list, the environment and cwd
    text = local_study(f'setup = ["printf", "%s", "{{v}}"]\nrun = "printf %s {{v}}; printf %s \\"$NT_V\\" >&2"\n'
                       f'env = {{ NT_V = "{{v}}" }}\ncleanup = "rm -f {tmp_path}/x{{v}}"', sweep=sweep)
    out, runs, raw = run(text, tmp_path)
    assert out.status == "done" and out.failed == 0 and len(runs) == len(values)
    for r, sides in zip(runs, raw):
        assert sides[0]["stdout"] == r.point["v"] and sides[0]["stderr"] == r.point["v"]
    assert not marker.exists() and not any(p.name == "pwned" for p in Path.cwd().iterdir())


def test_a_placeholder_inside_quotes_is_refused(tmp_path):
    for cmd in ["echo '{v}'", 'echo "x{v}"']:
        with pytest.raises(SpecError, match="inside quotes"):
            parse_study(local_study(f"run = {json.dumps(cmd)}", sweep='v = ["a"]'))
    # doubled braces are literal braces, never placeholders
    s = parse_study(local_study('run = "awk \'BEGIN {{ print 1 }}\'"'))
    assert s.workload.run == "awk 'BEGIN {{ print 1 }}'"


def test_bad_command_workloads_are_one_line_errors(tmp_path):
    for wl, why in [("", "needs run"), ('run = ["true"]\nprocesses = 2', "processes"), ('run = ["true"]\nhost = "nope"', "not a target host"),
                    ('run = ["true"]\nenv = { "A B" = "1" }', "not a variable name")]:
        f = tmp_path / "s.toml"
        f.write_text(local_study(wl))
        r = nettune("run", str(f), "--db", str(tmp_path / "x.db"))
        assert r.returncode != 0 and why in r.stderr + r.stdout and "Traceback" not in r.stderr
    f.write_text(local_study('run = ["nettune-no-such-program"]'))
    r = nettune("run", str(f), "--db", str(tmp_path / "x.db"))
    assert r.returncode != 0 and "nettune-no-such-program is not installed on local" in r.stderr + r.stdout


def test_cli_analyze_compare_report_say_lower_is_better(tmp_path):
    f = tmp_path / "s.toml"
    f.write_text(local_study('run = ["sleep", "{t}"]', sweep="t = [0.3, 0.1]", repeat="runs = 3", name="nettune-t-cmd-cli"))
    db = str(tmp_path / "c.db")
    r = nettune("run", str(f), "--db", db, "--doctor", "off", check=True)
    assert "best: 0.1" in r.stdout and "seconds at t=0.1" in r.stdout
    r = nettune("analyze", "nettune-t-cmd-cli", "--db", db, check=True)
    for col in ("N", "seconds", "± 95%", "sd", "min to max"):
        assert col in r.stdout
    r = nettune("compare", "nettune-t-cmd-cli", "--a", "t=0.3", "--b", "t=0.1", "--db", db, check=True)
    assert "% faster (less time, 95% CI" in r.stdout
    r = nettune("compare", "nettune-t-cmd-cli", "--a", "t=0.1", "--b", "t=0.3", "--db", db, check=True)
    assert "% slower (more time, 95% CI" in r.stdout
    nettune("report", "nettune-t-cmd-cli", "--db", db, "--out", str(tmp_path / "rep"), check=True)
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "## Timed command" in md and "margin %" in md and "% slower (more time, 95% CI" in md  # t=0.3 vs the baseline t=0.1


@needs_root
def test_lab_runs_the_command_inside_the_host_namespace(tmp_path):
    text = ('name = "nettune-t-cmdlab"\n[target]\nkind = "lab"\nhosts = ["a", "b"]\nsubnet = "198.18.63.0/24"\n'
            '[workload]\nengine = "command"\nhost = "{h}"\nrun = ["readlink", "/proc/self/ns/net"]\n[sweep]\nh = ["a", "b"]\n')
    out, runs, raw = run(text, tmp_path)
    assert out.status == "done" and out.failed == 0
    mine = os.readlink("/proc/self/ns/net")
    seen = [sides[0]["stdout"].strip() for sides in raw]
    assert all(s.startswith("net:[") and s != mine for s in seen) and seen[0] != seen[1]
    assert [r.extra["command"]["host"] for r in runs] == ["a", "b"] and all(r.wall_s and r.cpu_s is not None for r in runs)
    # `ip netns exec` is forked by nettune, but the helper it execs forks the command: nettune's size is never in the peak
    assert all(r.peak_rss_kb < 4 * 1024 and r.peak_rss_method == "rusage-time" for r in runs)


def test_a_missing_setup_program_fails_the_run_not_the_study(tmp_path):
    out, runs, _ = run(local_study('setup = ["nettune-no-such-setup"]\nrun = ["true"]\ncleanup = ["nettune-no-such-cleanup"]'), tmp_path)
    r = runs[0]
    assert out.status == "done" and not r.ok and "setup could not start" in r.error and "nettune-no-such-setup" in r.error
    assert any("cleanup could not start" in w for w in r.warnings)
