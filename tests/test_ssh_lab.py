"""The ssh target for real: a real sshd in each lab namespace (`nettune lab up --ssh`),
real asyncssh, real iperf3. Only loopback and 198.18.0.0/15 lab addresses are used.

The lab is removed with its own LabNet.down() (what `nettune lab down` does per lab),
not with `nettune lab down`, which would also remove labs other tests have up.
"""
import json
import os
import subprocess
import threading
import time
from pathlib import Path

import pytest

from nettune.engines import get_engine
from nettune.errors import NettuneError
from nettune.run.slots import round_totals, run_slot
from nettune.run.workloads import workload_hosts
from nettune.run.study import run_study
from nettune import load_study, parse_study
from nettune.store.writer import StoreWriter
from nettune.targets.ssh import sshlab
from nettune.targets.lab.labnet import LabLayout, LabNet, pids_in_namespace
from nettune.targets.procs import PROC_DIR, start_time
from nettune.targets.ssh.ssh import SshError, SshTarget

from conftest import needs_iperf3, needs_root, nettune
from sshlab_util import run_with_cut_sessions

pytestmark = [needs_root, needs_iperf3]

LAB_NAME = "t-ssh"
HOSTS = ["server", "client", "c", "d", "pve"]
SUBNET = "198.19.201.0/24"
LAB = f"""
name = "{LAB_NAME}"
[target]
kind = "lab"
hosts = {HOSTS!r}
subnet = "{SUBNET}"
[workload]
server = "server"
client = "client"
""".replace("'", '"')


def _ours(layout: LabLayout) -> dict[str, list[str]]:
    """Processes still alive in this lab's namespaces (should be none after teardown)."""
    out = {}
    for h in layout.hosts:
        pids = pids_in_namespace(layout.ns(h))
        if pids:
            out[h] = [Path(f"/proc/{p}/comm").read_text().strip() for p in pids if Path(f"/proc/{p}/comm").exists()]
    return out


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    import ipaddress

    d = tmp_path_factory.mktemp("sshlab")
    (d / "lab.toml").write_text(LAB)
    inv = d / "inventory.toml"
    layout = LabLayout(LAB_NAME, HOSTS, ipaddress.ip_network(SUBNET))
    try:
        r = nettune("lab", "up", str(d / "lab.toml"), "--ssh", "--inventory", str(inv), check=True)
        assert "inventory written" in r.stdout
        yield {"dir": d, "inventory": inv, "layout": layout}
    finally:
        sshd = [sshlab.sshd_pid(LAB_NAME, h) for h in HOSTS]
        LabNet(layout).down()
        sshlab.down(LAB_NAME)
        for pid in sshd:
            assert pid is None or start_time(pid) is None or _zombie(pid), f"sshd {pid} survived the lab"
        assert not _ours(layout)


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


@pytest.fixture(autouse=True)
def tofu_file(tmp_path, monkeypatch):
    monkeypatch.setenv("NETTUNE_KNOWN_HOSTS", str(tmp_path / "nettune_known_hosts"))
    return tmp_path / "nettune_known_hosts"


def study_text(inv: Path, workload: str, extra: str = "", name: str = "t-ssh-study", reconnect: int = 15) -> str:
    # reconnect_timeout bounded so a broken lab fails these tests in seconds, not minutes
    return f"""
name = "{name}"
[target]
kind = "ssh"
inventory = "{inv}"
reconnect_timeout = {reconnect}
{extra}
[target.hosts.pve]
role = "hypervisor"
[workload]
{workload}
"""


def test_inventory_and_sshd_are_what_lab_up_says(lab):
    text = lab["inventory"].read_text()
    for h in HOSTS:
        assert f"[hosts.{h}]" in text
        pid = sshlab.sshd_pid(LAB_NAME, h)
        assert pid and pid in pids_in_namespace(lab["layout"].ns(h))  # inside the host's namespace
        assert (PROC_DIR / str(pid)).exists()  # recorded: `nettune lab down` stops it by PID too
    kh = (sshlab.study_dir(LAB_NAME) / "known_hosts").read_text()
    assert kh.count("ssh-ed25519") == len(HOSTS)


def test_quick_study_end_to_end_over_ssh(lab, tmp_path):
    # examples/quick.toml, on the lab's sshds: 1-second tests, client via sudo, pve sampled
    f = tmp_path / "quick.toml"
    inv_rel = os.path.relpath(lab["inventory"], tmp_path)  # relative to the study file
    f.write_text(study_text(Path(inv_rel), 'engine = "iperf3"\nserver = "server"\nclient = "client"\nduration = 1\nparallel = "{streams}"\n',
                            '[target.hosts.client]\nsudo = true', name="t-ssh-quick")
                 + "[sweep]\nstreams = [1, 2]\n[repeat]\nruns = 1\n")
    study = load_study(f)
    with StoreWriter(tmp_path / "r.db") as store:
        out = run_study(study, store, f.read_text(), str(f))
        runs = store.runs(out.study_id)
        facts = store.facts(out.study_id)
    assert out.status == "done" and out.failed == 0 and len(runs) == 2
    for r in runs:
        assert r["ok"], r["error"]
        assert r["receiver_bps"] > 1e6
        assert r["cpu_client"] > 0 and r["cpu_server"] > 0 and r["cpu_host"] > 0
        assert r["cpu_extra"]["hypervisor:pve"] > 0  # study A's third CPU column
        # the server's machine, not only its iperf3 process (in a VM most work is softirq)
        assert r["cpu_server_host"] > 0 and r["cpu_server_host_softirq"] is not None
        assert r["cpu_units"]["cpu_server_host"] == "pct_machine"
    assert facts["server"]["iperf3_version"] and facts["pve"]["role"] == "hypervisor"
    assert facts["client"]["sudo"] is True and facts["server"]["address"].startswith("198.19.201.")
    # the servers required the study's credentials, sent over SSH (the client via sudo)
    assert all(r["extra"]["server_access"] == {"bind": facts["server"]["address"], "auth": "iperf3-rsa"} for r in runs)


def test_spawn_env_is_never_a_command_line_word(lab):
    """Host.spawn(env=...) over SSH: the value reaches the process (with and without
    sudo), and no command line on this machine (nettune's, sshd's, the remote shell's:
    the lab's hosts are this machine) ever holds it."""
    study = parse_study(study_text(lab["inventory"], 'server = "server"\nclient = "client"', '[target.hosts.client]\nsudo = true'))
    t = SshTarget(study)
    try:
        for h in (t.hosts["server"], t.hosts["client"]):
            secret = "nt-" + os.urandom(12).hex() + " $(x) 'q'"
            p = h.spawn(["sh", "-c", 'printf "%s" "$NT_SECRET"; sleep 1'], env={"NT_SECRET": secret, "NT_OTHER": "2"})
            leaked = []
            while p.poll() is None:
                for pid in os.listdir("/proc"):
                    try:
                        if pid.isdigit() and secret.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                            leaked.append(pid)
                    except OSError:
                        pass
            assert p.wait(10) == 0 and p.output()[0] == secret and not leaked
            with pytest.raises(ValueError):
                h.spawn(["true"], env={"BAD NAME": "x"})
    finally:
        t.close()


def test_hostile_values_never_reach_a_shell(lab, tmp_path):
    marker = Path(f"/tmp/nettune-pwned-{os.getpid()}")
    marker.unlink(missing_ok=True)
    hostile = [f"$(touch {marker})", f"`touch {marker}`", f"1G; touch {marker}", f"1K\ntouch {marker}", f"x' ; touch {marker}; '", f"| touch {marker}"]
    f = tmp_path / "h.toml"
    # congestion: iperf3 checks it after connecting, so the one-off server ends at once (a
    # value refused before connecting would leave it waiting out session's 10 s grace)
    sweep = "[sweep]\nv = [" + ", ".join(json.dumps(v) for v in hostile) + "]\n"  # JSON strings are TOML strings
    f.write_text(study_text(lab["inventory"], 'server = "server"\nclient = "client"\nduration = 1\ncongestion = "{v}"\n',
                            '[target.hosts.client]\nsudo = true', name="t-ssh-hostile") + sweep)
    study = load_study(f)
    with StoreWriter(tmp_path / "r.db") as store:
        out = run_study(study, store, f.read_text(), str(f))
        runs = store.runs(out.study_id)
    assert out.status == "done" and len(runs) == len(hostile)
    assert all(not r["ok"] for r in runs)  # iperf3 refuses these values: they arrived as plain words
    assert not marker.exists()
    # the same through every Host method, with and without sudo
    study = parse_study(study_text(lab["inventory"], 'server = "server"\nclient = "client"', '[target.hosts.client]\nsudo = true'))
    t = SshTarget(study)
    try:
        for h in (t.hosts["server"], t.hosts["client"]):
            for v in hostile:
                assert h.run(["printf", "%s", v]).stdout == v
                p = h.spawn(["printf", "%s", v])
                assert p.wait(10) == 0 and p.output()[0] == v
            rel = marker.name  # a path cannot hold the marker's "/": touch it relative to the cwd
            odd = str(tmp_path / f"f;touch {rel};$(touch {rel})`touch {rel}`\nx")
            h.write_text(odd, f"a'b\"c$(touch {rel})\n")
            assert h.read_text(odd) == f"a'b\"c$(touch {rel})\n"
            assert not any((d / rel).exists() for d in (Path("/root"), Path("/"), tmp_path, Path.cwd()))
            assert h.which(f"iperf3; touch {marker}") is None
    finally:
        t.close()
    assert not marker.exists()
    # a key path is a local file for asyncssh, never a command
    bad = parse_study(study_text(lab["inventory"], 'server = "server"\nclient = "client"', f'[target.hosts.c]\nkey = "/tmp/$(touch {marker})"'))
    with pytest.raises(SshError):
        SshTarget(bad)
    assert not marker.exists()


def test_command_workload_over_ssh_hostile_values_and_timeout(lab, tmp_path):
    """engine = "command" on an ssh host: hostile sweep values in a string command arrive as
    data (shell-quoted), CPU and peak RSS of the tree come from the helper that starts the
    command there (python3 on the host: nettune's size never in it), and a timeout stops the
    remote process group (a background child included)."""
    marker = Path(f"/tmp/nettune-pwned-cmd-{os.getpid()}")
    marker.unlink(missing_ok=True)
    hostile = [f"$(touch {marker})", f"`touch {marker}`", f"1; touch {marker}", f"1\ntouch {marker}", f"x' ; touch {marker}; '", f"| touch {marker}"]
    f = tmp_path / "c.toml"
    sweep = "[sweep]\nv = [" + ", ".join(json.dumps(v) for v in hostile) + "]\n"
    f.write_text(study_text(lab["inventory"], 'engine = "command"\nhost = "client"\nrun = "printf %s {v}"\nsetup = ["printf", "%s", "{v}"]\n',
                            name="t-ssh-cmd") + sweep)
    with StoreWriter(tmp_path / "r.db") as store:
        out = run_study(load_study(f), store, f.read_text(), str(f))
        runs = store.runs(out.study_id)
        raw = [store.raw_outputs(r.id) for r in runs]
    assert out.status == "done" and out.failed == 0 and len(runs) == len(hostile)
    assert [sides[0]["stdout"] for sides in raw] == hostile and not marker.exists()
    assert all(r.wall_s > 0 and r.cpu_s is not None and r.exit_code == 0 for r in runs)
    assert all(r.peak_rss_kb < 4 * 1024 and r.peak_rss_method == "rusage-time" for r in runs)  # printf: a shell's size
    secs = f"{41 + os.getpid() % 1000 / 1000:.3f}"
    f.write_text(study_text(lab["inventory"], f'engine = "command"\nhost = "client"\nrun = "sleep {secs} & sleep {secs}; wait"\ntimeout = 2\n',
                            name="t-ssh-cmd-timeout"))
    with StoreWriter(tmp_path / "r.db") as store:
        out = run_study(load_study(f), store, f.read_text(), str(f))
        r = store.runs(out.study_id)[0]
    assert out.status == "done" and not r.ok and "did not finish within 2s" in r.error
    alive = []
    for pid in os.listdir("/proc"):
        try:
            if pid.isdigit() and secs.encode() in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0"):
                alive.append(pid)
        except OSError:
            pass
    assert alive == []


def _keygen(path: Path) -> str:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True)
    return " ".join(path.with_suffix(".pub").read_text().split()[:2])


def test_strict_host_keys_and_trust_on_first_use(lab, tmp_path, tofu_file):
    addr = parse_study(study_text(lab["inventory"], 'server = "server"\nclient = "client"')).target.hosts["server"].address
    wrong = tmp_path / "wrong_kh"
    wrong.write_text(f"{addr} {_keygen(tmp_path / 'other')}\n")
    empty = tmp_path / "empty_kh"
    empty.write_text("")

    def study(kh: Path, tofu: bool = False):
        extra = f"trust_on_first_use = {str(tofu).lower()}\n[target.hosts.server]\nknown_hosts = \"{kh}\""
        return parse_study(study_text(lab["inventory"], 'server = "server"\nclient = "client"', extra))

    with pytest.raises(NettuneError, match="does NOT match"):
        SshTarget(study(wrong))
    with pytest.raises(NettuneError, match="host key unknown"):
        SshTarget(study(empty))
    with pytest.raises(NettuneError, match="does NOT match"):
        SshTarget(study(wrong, tofu=True))  # a changed key is never trusted
    assert not tofu_file.exists()

    t = SshTarget(study(empty, tofu=True))
    try:
        assert t.hosts["server"].run(["true"]).returncode == 0
        assert t.warnings and "server" in t.warnings[0]
        assert "trusted on first use" in t.facts()["server"]["host_key"]
    finally:
        t.close()
    assert tofu_file.read_text().startswith(addr + " ssh-ed25519 ")
    t = SshTarget(study(empty))  # recorded: now strict checking accepts it
    t.close()


def test_cut_connection_fails_that_test_and_the_study_goes_on(lab, tmp_path):
    f = tmp_path / "cut.toml"
    f.write_text(study_text(lab["inventory"], 'server = "server"\nclient = "client"\nduration = 2\n', name="t-ssh-cut") + "[repeat]\nruns = 3\n")
    out, runs, cut = run_with_cut_sessions(lab["layout"], f, tmp_path / "r.db", "client")
    assert cut, "no ssh session was cut"
    assert out.status == "done" and [r["ok"] for r in runs] == [False, True, True]
    assert "connection lost" in runs[0]["error"] and "client" in runs[0]["error"]
    assert all(r["receiver_bps"] > 1e6 for r in runs[1:])
    # nothing of the cut test survives in the namespace (the reconnect killed leftovers)
    assert not [p for p in pids_in_namespace(lab["layout"].ns("client")) if Path(f"/proc/{p}/comm").read_text().strip() == "iperf3"]


def test_four_host_mesh_runs_in_three_parallel_rounds(lab, tmp_path):
    study = parse_study(study_text(lab["inventory"], 'pairs = "mesh"\nparallel_pairs = true\nduration = 1\n'))
    t = SshTarget(study)
    stored = []
    try:
        assert sorted(workload_hosts(study.workload, t)) == ["c", "client", "d", "server"]  # not pve
        results = run_slot(get_engine("iperf3"), study.workload, t, "3.12", on_result=stored.append)
    finally:
        t.close()
    assert stored == results and len(results) == 6
    rounds: dict[int, list] = {}
    for r in results:
        rounds.setdefault(r.extra["round"], []).append(r)
    assert sorted(rounds) == [0, 1, 2] and all(len(v) == 2 for v in rounds.values())
    for rnd in rounds.values():
        used = [h for r in rnd for h in (r.extra["server"], r.extra["client"])]
        assert len(set(used)) == 4  # no host in two tests at once
    assert {frozenset((r.extra["server"], r.extra["client"])) for r in results} == {
        frozenset(p) for p in [("server", "client"), ("server", "c"), ("server", "d"), ("client", "c"), ("client", "d"), ("c", "d")]}
    assert all(r.ok and r.total_bps > 1e6 for r in results), [r.error for r in results]
    assert all("hypervisor:pve" in r.cpu_extra for r in results) and "pve" not in {r.extra["client"] for r in results}
    totals = round_totals(results)
    assert all(totals[i] == pytest.approx(rounds[i][0].extra["round_total_bps"]) for i in totals)


def test_lab_down_stops_the_sshds(tmp_path):
    import ipaddress

    name = "t-sshdown"
    f = tmp_path / "lab.toml"
    f.write_text(f'name = "{name}"\n[target]\nkind = "lab"\nhosts = ["a", "b"]\nsubnet = "198.19.202.0/24"\n[workload]\nserver = "a"\nclient = "b"\n')
    layout = LabLayout(name, ["a", "b"], ipaddress.ip_network("198.19.202.0/24"))
    try:
        nettune("lab", "up", str(f), "--ssh", check=True)
        pids = [sshlab.sshd_pid(name, h) for h in ("a", "b")]
        assert all(pids)
        assert name not in sshlab.down_all_ssh()  # `lab down` keeps the sshds of a lab it keeps
        assert all(start_time(p) for p in pids)
    finally:
        LabNet(layout).down()  # remove_namespace: kills every PID in the namespace, sshd too
    assert all(start_time(p) is None or _zombie(p) for p in pids)
    assert name in sshlab.down_all_ssh()  # then `lab down` removes the keys and PID records
    assert not sshlab.study_dir(name).exists() and not any((PROC_DIR / str(p)).exists() for p in pids)


def _reboot_lab_host(layout: LabLayout, host: str) -> None:
    """A VM restart, played by re-creating a lab host: its sshd and ssh sessions go and its
    NIC is re-created (sshd is started again by the caller)."""
    from nettune.targets.procs import kill_pid

    sessions = sshlab.session_pids(LAB_NAME, host)
    sshlab.stop_sshd(LAB_NAME, host)
    for pid in sessions:
        kill_pid(pid)
    with LabNet(layout) as net:
        net.recreate_veth(host, 1500, 1)
    # the re-created veth has a new MAC (a rebooted VM keeps its own): forget the old one
    subprocess.run(["ip", "neigh", "flush", "to", layout.address(host)], check=True)


def test_restarted_host_is_waited_for_then_used(lab):
    """The next command after a host restart waits until the host answers again."""
    from nettune.run.driver import run_test

    study = parse_study(study_text(lab["inventory"], 'server = "server"\nclient = "client"\nduration = 1\n', reconnect=30))
    layout = lab["layout"]
    t = SshTarget(study)
    try:
        client = t.hosts["client"]
        assert client.run(["true"]).returncode == 0
        _reboot_lab_host(layout, "client")
        timer = threading.Timer(2.0, sshlab.start_sshd, args=(layout, "client"))
        timer.start()
        r = client.run(["cat", "/proc/loadavg"])  # blocks until the host answers again
        timer.join()
        assert r.returncode == 0 and client.connects == 2
        res = run_test(get_engine("iperf3"), study.workload, t.hosts["server"], client, "3.12")
        assert res.ok and res.total_bps > 1e6, res.error

        # a host that stays down: the wait ends (reconnect_timeout), then later calls fail fast
        client._reconnect_timeout = 2.0
        _reboot_lab_host(layout, "client")
        try:
            t0 = time.monotonic()
            with pytest.raises(SshError, match="cannot connect"):
                client.run(["true"])
            res = run_test(get_engine("iperf3"), study.workload, t.hosts["server"], client, "3.12")
            assert not res.ok and "client" in res.error
            assert time.monotonic() - t0 < 20
        finally:
            sshlab.start_sshd(layout, "client")
        assert client.run(["true"]).returncode == 0  # back: one attempt is enough
    finally:
        t.close()


def test_proxmox_queue_knob_restart_then_the_guest_is_used(lab):
    """pve_queues on a (fake) Proxmox host whose `qm reboot` really restarts a lab host:
    the knob waits for `qm status` running, the guest's ssh waits for its sshd."""
    from hypervisor_fakes import FakePve

    from nettune.run.driver import run_test
    from nettune.knobs.base import Loc
    from nettune.knobs.kinds.proxmox_queues import ProxmoxQueues

    layout = lab["layout"]
    study = parse_study(study_text(lab["inventory"], 'server = "server"\nclient = "client"\nduration = 1\n', reconnect=30))
    t = SshTarget(study)
    timers = []

    def reboot() -> None:
        _reboot_lab_host(layout, "client")
        timers.append(threading.Timer(1.5, sshlab.start_sshd, args=(layout, "client")))
        timers[-1].start()

    try:
        assert t.hosts["client"].run(["true"]).returncode == 0
        pve, knob, loc = FakePve(on_restart=reboot), ProxmoxQueues(), Loc("pve_queues:101", "pve_queues", "101")
        knob.apply(pve, loc, 16)
        assert knob.read(pve, loc)["queues"] == 16 and timers  # read() gives the netN line and its queues
        res = run_test(get_engine("iperf3"), study.workload, t.hosts["server"], t.hosts["client"], "3.12")
        assert res.ok and res.total_bps > 1e6, res.error
        assert t.hosts["client"].connects == 2
    finally:
        for tm in timers:
            tm.join()
        t.close()


def test_preflight_reads_the_hosts_and_changes_nothing(lab, tmp_path, monkeypatch):
    """`nettune run --preflight` (issue 32): the tool's version, every knob checked against
    its host as the run checks it, the value in force beside the study's, and nothing
    changed: the sysctl keeps its value, no journal is written, no study stored."""
    from nettune.commands.preflight import preflight_report

    monkeypatch.setenv("NETTUNE_STATE_DIR", str(tmp_path / "state"))
    ns = lab["layout"].ns("server")
    read = lambda: subprocess.run(["ip", "netns", "exec", ns, "cat", "/proc/sys/net/ipv4/tcp_rmem"],  # noqa: E731
                                  capture_output=True, text=True, check=True).stdout.split()
    before = read()
    text = study_text(lab["inventory"], 'engine = "iperf3"\nserver = "server"\nclient = "client"\nduration = 1\n', name="t-ssh-preflight")
    text += ('[sweep]\nmax = [6291456, 8388608]\n[knobs]\n"sysctl:net.ipv4.tcp_rmem" = "4096 131072 {max}"\n'
             '[knobs.hosts]\n"sysctl:net.ipv4.tcp_rmem" = ["server"]\n')
    lines = preflight_report(parse_study(text, str(tmp_path / "p.toml")), text, str(tmp_path / "p.toml"))
    assert any(ln.startswith("iperf3: 3.") for ln in lines), lines
    now = " ".join(before)
    assert f"sysctl:net.ipv4.tcp_rmem on server: {now} now; the run would set 4096 131072 6291456, 4096 131072 8388608, and put {now} back at the end" in lines
    assert lines[-1] == "preflight: nothing was changed on any host"
    assert read() == before and not list((tmp_path / "state").rglob("*journal*"))
    # what the run would refuse, the preflight refuses, reading the host: no such sysctl there
    bad = text.replace("net.ipv4.tcp_rmem", "net.ipv4.tcp_nonexistent")
    with pytest.raises(NettuneError, match="net.ipv4.tcp_nonexistent"):
        preflight_report(parse_study(bad, str(tmp_path / "p.toml")), bad, str(tmp_path / "p.toml"))
