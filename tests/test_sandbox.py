"""Run, knob session, restore after kill -9, and failure paths, WITHOUT root.

The hosts are the sandbox test seam (src/nettune/targets/sandbox.py, enabled by
NETTUNE_SANDBOX for a `kind = "local"` study): their /proc/sys and /sys are a directory
tree under tmp_path, while iperf3 really runs on 127.0.0.1, the knob journal is really
written (NETTUNE_STATE_DIR in tmp_path, never /var/lib/nettune) and `nettune restore`
really runs as a new process. These tests pass as a normal user (docs/development.md
says how to check), and as root they change nothing on the machine.
"""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import pytest

from nettune import parse_study
from nettune.store.writer import StoreWriter
from nettune.run.study import run_study
from nettune.knobs.journal import Journal
from nettune.targets.procs import kill_pid, owner_token, start_time, started_by
from nettune.targets.sandbox import SEED

from conftest import needs_iperf3, nettune

pytestmark = needs_iperf3

NAME = "nettune-t-sandbox"
RMEM = "proc/sys/net/core/rmem_max"
CC = "proc/sys/net/ipv4/tcp_congestion_control"
TXQ = "sys/class/net/lo/tx_queue_len"
POINTS = [1000000, 2000000, 3000000]


def study_text(runs: int = 1) -> str:
    return f"""
name = "{NAME}"
[target]
kind = "local"
[workload]
duration = 1
[sweep]
rmem = {POINTS}
[repeat]
runs = {runs}
[knobs]
"sysctl:net.core.rmem_max" = "{{rmem}}"
"cc" = "reno"
"txqueuelen" = 2000
"""


@pytest.fixture()
def sandbox(tmp_path, monkeypatch) -> Path:
    """The tree, the journal and the process records of this test, all under tmp_path."""
    tree = tmp_path / "tree"
    env = {"NETTUNE_SANDBOX": str(tree), "NETTUNE_STATE_DIR": str(tmp_path / "state"), "NETTUNE_RUN_DIR": str(tmp_path / "run")}
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    return tree


def value(tree: Path, host: str, rel: str) -> str:
    return (tree / host / rel).read_text().strip()


def seeded(tree: Path) -> dict[str, dict[str, str]]:
    """Every seeded file of every host, as the tree holds it now."""
    return {h.name: {rel: value(tree, h.name, rel) for rel in SEED} for h in sorted(tree.iterdir()) if h.is_dir()}


def original() -> dict[str, dict[str, str]]:
    return {h: {rel: v.strip() for rel, v in SEED.items()} for h in ("client", "server")}


def no_process_of(owner: str) -> None:
    assert started_by({owner}) == [], "iperf processes of the run are still alive"


def start_run(f: Path, db: Path) -> tuple[subprocess.Popen, str]:
    """`nettune run` as a user starts it, and its owner token (what its processes carry)."""
    p = subprocess.Popen([sys.executable, "-m", "nettune.cli", "run", str(f), "--db", str(db)],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=os.environ)
    return p, f"{p.pid} {start_time(p.pid)}"


def wait_until(p: subprocess.Popen, done: Callable[[], bool], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while p.poll() is None and time.monotonic() < deadline and not done():
        time.sleep(0.02)
    assert p.poll() is None, p.stderr.read() if p.stderr else ""


def second_point(tree: Path) -> Callable[[], bool]:
    """Mid-sweep: the second point's value is in force."""
    return lambda: (tree / "server" / RMEM).exists() and value(tree, "server", RMEM) == str(POINTS[1])


def kill_9(p: subprocess.Popen, owner: str) -> None:
    """SIGKILL the run, then stop what it left running: only the processes that carry its
    owner token (never anyone else's)."""
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    for pid in started_by({owner}):
        kill_pid(pid)


class Watch:
    """A Progress that reads the tree as each test starts: what the knobs set for it."""

    def __init__(self, tree: Path):
        self.tree, self.seen = tree, []

    def start(self, study, total_tests, expected_seconds): ...
    def test_end(self, slot, result, seconds): ...
    def message(self, text): ...

    def eta(self, tests_left, seconds_left): ...

    def test_start(self, slot, index):
        self.seen.append((slot.point.params["rmem"], value(self.tree, "server", RMEM), value(self.tree, "client", CC), value(self.tree, "client", TXQ)))


def test_study_runs_into_the_store(sandbox, tmp_path):
    study = parse_study(study_text(runs=2))
    with StoreWriter(tmp_path / "r.db") as store:
        out = run_study(study, store, study_text(runs=2), "sandbox.toml")
        runs = store.runs(out.study_id)
        facts = store.facts(out.study_id)
        status = store.find_study(NAME)["status"]
    assert out.status == "done" and status == "done" and out.tests == 6 and out.failed == 0 and not out.warnings
    assert all(r["ok"] and r["receiver_bps"] > 0 for r in runs)
    assert sorted(r["point"]["rmem"] for r in runs) == sorted(POINTS * 2)
    for r in runs:  # what each point set, stored with its run
        assert r["settings"]["knobs"]["server"] == {"sysctl:net.core.rmem_max": str(r["point"]["rmem"]), "cc": "reno", "txqueuelen": 2000}
    assert facts["server"]["tcp_congestion_control"] == "reno"  # read from the tree, once the first point is set
    assert facts["server"]["iperf3_version"] and facts["server"]["interface"] == {"name": "lo", "mtu": 65536}
    assert seeded(sandbox) == original()
    no_process_of(owner_token())


def test_knob_session_applies_per_point_journals_and_restores(sandbox, tmp_path):
    watch = Watch(sandbox)
    with StoreWriter(tmp_path / "r.db") as store:
        out = run_study(parse_study(study_text()), store, progress=watch)
    assert out.status == "done"
    # during each test the tree held that point's values
    assert watch.seen == [(p, str(p), "reno", "2000") for p in POINTS]
    recs = Journal().records()
    changes = [r for r in recs if r["op"] == "change"]
    # per host: rmem once per point, cc and txqueuelen once (kept between points)
    assert len(changes) == 2 * (len(POINTS) + 2)
    first = {(r["host"], r["knob"]): r for r in reversed(changes)}
    assert first[("server", "sysctl:net.core.rmem_max")]["original"] == "212992"
    assert first[("client", "cc")]["original"] == "cubic" and first[("client", "txqueuelen")]["original"] == 1000
    assert all(r["place"]["reach"]["sandbox"] == str(sandbox / r["host"]) for r in changes)
    assert [r["op"] for r in recs][-1] == "end" and Journal().open_sessions() == []
    assert seeded(sandbox) == original()


def test_restore_after_kill_9_mid_sweep(sandbox, tmp_path):
    f = tmp_path / "s.toml"
    f.write_text(study_text(runs=2))
    db = tmp_path / "r.db"
    p, owner = start_run(f, db)
    try:
        wait_until(p, second_point(sandbox))
    finally:
        kill_9(p, owner)
    assert value(sandbox, "server", RMEM) == str(POINTS[1]) and value(sandbox, "client", CC) == "reno"
    (session,) = Journal().open_sessions()
    assert session.pid == p.pid and session.changes
    r = nettune("restore", check=True)
    # the second point's value straight back to the original: one write, never the first point's value in between
    assert "restored: server: sysctl:net.core.rmem_max: 2000000 -> 212992" in r.stdout
    assert "-> 1000000" not in r.stdout and "1000000 ->" not in r.stdout
    assert "restored: client: cc: reno -> cubic" in r.stdout
    assert seeded(sandbox) == original()
    assert Journal().open_sessions() == []
    assert "nothing to restore" in nettune("restore", check=True).stdout
    with StoreWriter(db) as store:
        assert store.find_study(NAME)["status"] == "running"  # killed: nobody could mark it


def test_restore_finds_the_tree_without_the_environment(sandbox, tmp_path):
    """The journal alone says where the tree is: a restore with NETTUNE_SANDBOX unset
    (as a user would run it) still puts the values back there, not on this machine."""
    f = tmp_path / "s.toml"
    f.write_text(study_text(runs=3))
    p, owner = start_run(f, tmp_path / "r.db")
    try:
        wait_until(p, lambda: any(r["op"] == "actual" for r in Journal().records()))
    finally:
        kill_9(p, owner)
    assert Journal().open_sessions()
    env = {k: v for k, v in os.environ.items() if k != "NETTUNE_SANDBOX"}
    r = subprocess.run([sys.executable, "-m", "nettune.cli", "restore"], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "restored:" in r.stdout and "this machine" not in r.stdout
    assert seeded(sandbox) == original()
    assert Journal().open_sessions() == []


def test_failing_client_is_recorded_and_the_study_goes_on(sandbox, tmp_path):
    sandbox.mkdir()
    (sandbox / "faults.json").write_text(json.dumps({"fail_clients": [2]}))
    with StoreWriter(tmp_path / "r.db") as store:
        out = run_study(parse_study(study_text()), store)
        runs = store.runs(out.study_id)
    assert out.status == "done" and out.tests == 3 and out.failed == 1
    (bad,) = [r for r in runs if not r["ok"]]
    assert bad["point"]["rmem"] == POINTS[1] and bad["error"]
    assert all(r["ok"] for r in runs if r is not bad)
    assert seeded(sandbox) == original()
    assert Journal().open_sessions() == []
    no_process_of(owner_token())


def test_exception_inside_a_test_restores_and_marks_the_study_failed(sandbox, tmp_path):
    sandbox.mkdir()
    (sandbox / "faults.json").write_text(json.dumps({"raise_in_client": 2}))
    with StoreWriter(tmp_path / "r.db") as store, pytest.raises(RuntimeError, match="injected"):
        run_study(parse_study(study_text()), store)
    with StoreWriter(tmp_path / "r.db") as store:
        st = store.find_study(NAME)
        assert st["status"] == "failed"
        assert len(store.runs(st["id"])) == 1  # the first test was stored before the failure
    assert seeded(sandbox) == original()
    assert Journal().open_sessions() == []
    no_process_of(owner_token())


def test_sigterm_mid_sweep_restores_and_marks_interrupted(sandbox, tmp_path):
    f = tmp_path / "s.toml"
    f.write_text(study_text(runs=2))
    db = tmp_path / "r.db"
    p, owner = start_run(f, db)
    wait_until(p, second_point(sandbox))
    p.send_signal(signal.SIGTERM)
    p.wait(timeout=60)
    assert p.returncode != 0
    assert seeded(sandbox) == original()
    assert Journal().open_sessions() == []
    no_process_of(owner)  # it stopped its own processes
    with StoreWriter(db) as store:
        assert store.find_study(NAME)["status"] == "interrupted"


def test_the_sandbox_never_changes_this_machine(tmp_path):
    """Paths under /proc/sys and /sys are the tree's; `ip link set` is emulated on it; a
    command that could change the machine is refused, even as root."""
    from nettune.targets.sandbox import SandboxHost, seed_tree

    seed_tree(tmp_path / "a")
    host = SandboxHost("a", tmp_path / "a")
    mtu = Path("/sys/class/net/lo/mtu").read_text()
    assert host.run(["ip", "link", "set", "dev", "lo", "mtu", "9000"]).returncode == 0
    assert host.read_text("/sys/class/net/lo/mtu").strip() == "9000" and Path("/sys/class/net/lo/mtu").read_text() == mtu
    for argv in (["ip", "link", "set", "dev", "lo", "down"], ["tc", "qdisc", "del", "dev", "lo", "root"], ["ethtool", "-K", "lo", "gro", "off"], ["sysctl", "-w", "net.core.rmem_max=1"]):
        r = host.run(argv)
        assert r.returncode != 0 and "sandbox" in r.stderr
    assert host.run(["test", "-w", "/proc/sys/net/core/rmem_max"]).returncode == 0
    with pytest.raises(OSError):
        host.write_text("/proc/sys/net/core/no_such_sysctl", "1")  # the kernel's files cannot be created
    assert host.reach() == {"sandbox": str(tmp_path / "a"), "address": "127.0.0.1"}


IRQ = "proc/irq/38/smp_affinity_list"  # seeded in the tree (SEED)


def real_file(path: str) -> str | None:
    """This machine's own file, or None where it does not exist here."""
    try:
        return Path(path).read_text()
    except OSError:
        return None


def test_credentials_prefix_is_the_runs():
    from nettune.run.credentials import DIR_PREFIX
    from nettune.targets.sandbox import CREDENTIALS_PREFIX

    assert CREDENTIALS_PREFIX == DIR_PREFIX  # targets may not import run: kept equal here


def test_irq_affinity_knob_sets_the_tree_not_this_machine(sandbox, tmp_path):
    """A host-wide knob on a kernel path other than /proc/sys and /sys (its place is the
    sandbox host): set in the tree during the test, restored after; the real
    /proc/irq/38 is never written, even as root."""
    real = "/" + IRQ
    before = real_file(real)
    text = study_text().replace('[sweep]\nrmem = [1000000, 2000000, 3000000]\n', "").replace(
        '"sysctl:net.core.rmem_max" = "{rmem}"\n', '"irq_affinity:38" = "0"\n')
    seen: list[tuple[str, str | None]] = []

    class WatchIrq(Watch):
        def test_start(self, slot, index):
            seen.append((value(self.tree, "server", IRQ), real_file(real)))

    with StoreWriter(tmp_path / "r.db") as store:
        out = run_study(parse_study(text), store, progress=WatchIrq(sandbox))
    assert out.status == "done" and out.failed == 0, out.warnings
    assert seen == [("0", before)]  # the tree held the value; this machine's file did not change
    assert value(sandbox, "server", IRQ) == "0-3" and real_file(real) == before  # restored
    assert seeded(sandbox) == original()


def test_irq_affinity_kind_on_a_sandbox_host(tmp_path):
    from nettune.knobs.base import KnobError, Loc
    from nettune.knobs.registry import KINDS
    from nettune.targets.sandbox import SandboxHost, seed_tree

    seed_tree(tmp_path / "a")
    host, kind = SandboxHost("a", tmp_path / "a"), KINDS["irq_affinity"]
    real = real_file("/proc/irq/39/smp_affinity_list")
    loc = Loc("irq_affinity:38,39", "irq_affinity", "38,39")
    kind.apply(host, loc, "1")
    assert kind.read(host, loc) == {"38": "1", "39": "1"}
    assert (tmp_path / "a" / "proc/irq/39/smp_affinity_list").read_text() == "1"
    assert real_file("/proc/irq/39/smp_affinity_list") == real
    with pytest.raises(KnobError, match="no IRQ 40"):  # not in the tree: not looked up on this machine
        kind.read(host, Loc("irq_affinity:40", "irq_affinity", "40"))
    assert not (tmp_path / "a" / "proc/irq/40").exists()


def test_writes_outside_the_tree_are_refused(tmp_path):
    from nettune.targets.sandbox import SandboxHost, seed_tree

    seed_tree(tmp_path / "a")
    host = SandboxHost("a", tmp_path / "a")
    outside = tmp_path / "outside.txt"  # a real file of this machine, not the tree's
    for path in (str(outside), "/etc/nettune-t-sandbox", "/proc/sys/../../" + str(outside).lstrip("/"),
                 "/tmp/nettune-auth.x/../" + outside.name, "/proc/sysrq-trigger"):
        with pytest.raises(OSError, match="refused by the nettune sandbox"):
            host.write_text(path, "1")
    assert not outside.exists() and not Path("/etc/nettune-t-sandbox").exists()
    (tmp_path / "a" / "escape").symlink_to(outside)  # a symlink out of the tree is outside it
    with pytest.raises(OSError, match="refused"):
        host.write_text(str(tmp_path / "a" / "escape"), "1")
    assert not outside.exists()
    with pytest.raises(FileNotFoundError):  # mapped: the tree's, and the kernel's files cannot be created
        host.write_text("/proc/irq/default_smp_affinity", "1")
    mtu = real_file("/sys/class/net/lo/mtu")
    r = host.run(["ip", "link", "set", "dev", "../../../../../../../../sys/class/net/lo", "mtu", "1280"])
    assert r.returncode != 0 and real_file("/sys/class/net/lo/mtu") == mtu
    r = host.run(["iperf3", "--logfile", str(outside), "--version"])
    assert r.returncode != 0 and "sandbox" in r.stderr and not outside.exists()
    with pytest.raises(OSError, match="sandbox"):
        host.spawn(["iperf3", "-s", "-I", str(outside)])
    assert not outside.exists()


def test_file_commands_only_in_the_tree_and_the_credentials_dirs(tmp_path):
    import secrets
    import tempfile

    from nettune.run.credentials import DIR_PREFIX
    from nettune.targets.sandbox import SandboxHost, seed_tree

    seed_tree(tmp_path / "a")
    host = SandboxHost("a", tmp_path / "a")
    real = Path(tempfile.mkdtemp(prefix="nettune-t-sandbox-", dir="/tmp"))
    try:
        (real / "f").write_text("keep")
        for argv in (["rm", "-rf", str(real)], ["rm", "-f", "--", str(real / "f")], ["chmod", "000", str(real)],
                     ["mkdir", "-p", str(real / "new")], ["rm", "-rf", "--no-preserve-root", str(tmp_path / "a" / "x")],
                     ["rm", "-rf", DIR_PREFIX + "x/../" + real.name], ["mkdir", "/tmp/nettune-t-sandbox-new"]):
            r = host.run(argv)
            assert r.returncode != 0 and "sandbox" in r.stderr, argv
        assert (real / "f").read_text() == "keep" and oct(real.stat().st_mode & 0o777) != "0o0"
        assert not (real / "new").exists() and not Path("/tmp/nettune-t-sandbox-new").exists()
    finally:
        (real / "f").unlink()
        real.rmdir()
    # what a run does: its credentials directory, then files in the tree
    d = DIR_PREFIX + secrets.token_hex(6)
    try:
        assert host.run(["mkdir", "-m", "700", "--", d]).returncode == 0
        host.write_text(f"{d}/users.csv", "u")
        assert host.run(["chmod", "600", f"{d}/users.csv"]).returncode == 0
        assert host.run(["rm", "-rf", "--", d]).returncode == 0 and not Path(d).exists()
    finally:
        if Path(d).exists():
            (Path(d) / "users.csv").unlink(missing_ok=True)
            Path(d).rmdir()
    assert host.run(["mkdir", "-p", "/sys/nettune-t"]).returncode == 0 and (tmp_path / "a/sys/nettune-t").is_dir()
    assert host.run(["rm", "-rf", "/sys/nettune-t"]).returncode == 0 and not (tmp_path / "a/sys/nettune-t").exists()


def test_a_write_is_all_or_nothing(tmp_path):
    """As the kernel takes a write to /proc/sys: a write that stops midway (here: text that
    cannot be encoded; in a run, kill -9) leaves the old value, never an empty file that
    `nettune restore` would take for someone else's value and leave."""
    from nettune.targets.sandbox import SandboxHost, seed_tree

    seed_tree(tmp_path / "a")
    host = SandboxHost("a", tmp_path / "a")
    with pytest.raises(UnicodeEncodeError):
        host.write_text("/proc/sys/net/core/rmem_max", "4194304\udc80")
    assert host.read_text("/proc/sys/net/core/rmem_max").strip() == "212992"
    assert [f.name for f in (tmp_path / "a/proc/sys/net/core").iterdir() if f.name.startswith(".")] == []
    host.write_text("/proc/sys/net/core/rmem_max", "4194304\n")
    assert host.read_text("/proc/sys/net/core/rmem_max") == "4194304\n"
