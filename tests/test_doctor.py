"""`nettune doctor` for real: this machine, the lab, and lab hosts over SSH; --fix through
the journal and `nettune restore` putting each value back. Only loopback and 198.18.0.0/15."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

from nettune.doctor.shape import DoctorJson
from nettune.knobs.gate import journal_gate
from nettune.knobs.journal import Journal

from conftest import EXAMPLES, lab_leftovers, needs_iperf3, needs_root, nettune
from sshlab_util import lab_fixture, netns_read, private_state  # noqa: F401 - private_state: autouse fixture

pytestmark = [needs_root, needs_iperf3]
LAB, HOSTS, SUBNET = "t-doctor", ["server", "client"], "198.19.218.0/24"
lab = lab_fixture(LAB, HOSTS, SUBNET)
BACKLOG = Path("/proc/sys/net/core/netdev_max_backlog")


def doctor(*args: str, env: dict | None = None) -> tuple[int, dict]:
    r = nettune("doctor", *args, "--format", "json", env=env)
    assert r.returncode in (0, 1), r.stdout + r.stderr
    return r.returncode, json.loads(r.stdout)


def test_this_machine_prints_the_documented_shape():
    rc, out = doctor()
    DoctorJson.model_validate(out)  # the shape docs/doctor.md documents, nothing more
    assert out["hosts"] == ["this machine"] and not out["errors"]
    assert rc == (1 if out["summary"]["warn"] + out["summary"]["problem"] else 0)
    checks = {f["check"] for f in out["findings"]}
    assert {"cpu.mitigations", "nic.link", "net.somaxconn", "tool.iperf", "net.softnet", "nic.hangs"} <= checks
    for f in out["findings"]:
        assert f["evidence"] and (f["severity"] == "info" or f["why"] or f["severity"] == "cannot_tell")
        assert f["inputs"] if f["severity"] != "cannot_tell" else (f["evidence"].startswith("missing: ") and f["fix"])
        assert all(i.startswith("live: ") for i in f["inputs"])
    # without a study there is no RTT: the buffers against the BDP cannot be told, and say so
    assert any(f["check"] == "net.buffers" and f["severity"] == "cannot_tell" for f in out["findings"])


RMEM, WMEM = Path("/proc/sys/net/core/rmem_max"), Path("/proc/sys/net/core/wmem_max")
SOMAXCONN = Path("/proc/sys/net/core/somaxconn")


def test_fix_is_journaled_kept_out_of_the_way_and_restored(tmp_path):
    """A local study asks for -w 4M and 128 streams: rmem_max/wmem_max at study E's 212992
    cap its window (problem) and somaxconn 128 is too short a listen queue (warn); --fix
    makes both through the journal, `nettune restore` puts them back."""
    study = tmp_path / "local.toml"
    study.write_text('name = "t-doc-local"\n[target]\nkind = "local"\n[workload]\nwindow = "4M"\nparallel = 128\nduration = 1\n')
    before = {p: p.read_text().strip() for p in (RMEM, WMEM, SOMAXCONN)}
    RMEM.write_text("212992\n")
    WMEM.write_text("212992\n")
    SOMAXCONN.write_text("128\n")
    try:
        rc, out = doctor(str(study), "--check", "net.somaxconn", "--check", "net.buffers", "--fix", "net.somaxconn", "--fix", "net.buffers")
        seen = [(f["host"], f["severity"], f["seen"]) for f in out["findings"]]
        assert rc == 1 and ("this machine", "problem", "rmem_max 212992 (208 KiB) caps the study's -w 4.0 MiB") in seen, seen
        assert ("server", "warn", "somaxconn 128 for up to 128 streams connecting at once") in seen, seen
        assert RMEM.read_text().strip() == "4194304" and WMEM.read_text().strip() == "4194304" and SOMAXCONN.read_text().strip() == "4096" and out["fixed"]
        kept = [s for s in Journal().open_sessions() if s.kept]
        assert len(kept) == 1 and {str(c.original) for c in kept[0].changes} >= {"128", "212992"}
        # a study on this machine measures with the fix in force: a note, never a refusal
        notes = journal_gate(True, study=None)
        assert any("doctor --fix" in n for n in notes)
        r = nettune("restore")
        assert r.returncode == 0 and "restored" in r.stdout, r.stdout + r.stderr
        assert RMEM.read_text().strip() == "212992" and SOMAXCONN.read_text().strip() == "128" and not Journal().open_sessions()
    finally:
        for p, v in before.items():
            p.write_text(v + "\n")


def test_fix_names_what_cannot_be_fixed():
    r = nettune("doctor", "--check", "cpu.mitigations", "--fix", "cpu.mitigations")
    assert r.returncode == 2 and "nothing nettune can fix there" in r.stderr and "\n" not in r.stderr.strip()
    r = nettune("doctor", "--fix", "nope")
    assert r.returncode == 2 and "no such check" in r.stderr


def test_lab_study_is_audited_and_removed(tmp_path):
    f = tmp_path / "quick.toml"
    f.write_text((EXAMPLES / "quick.toml").read_text().replace('name = "quick"', 'name = "nettune-t-doclab"'))
    rc, out = doctor(str(f))
    assert out["hosts"] == ["server", "client"] and rc == 1
    seen = {(x["host"], x["check"]): x for x in out["findings"]}
    assert "GRO off" in seen[("server", "nic.offloads")]["seen"]  # the lab's veths start with GRO off
    assert "9000-byte frames pass from client to server" in seen[("client", "path.mtu")]["seen"]
    assert ("this machine", "cpu.mitigations") in seen  # machine-wide checks once, for the machine
    assert not lab_leftovers()


def test_lab_reports_host_wide_findings_once_for_the_machine(tmp_path):
    """The lab's hosts are namespaces of this machine: a setting they cannot have apart
    (rmem_max, read-only there; netdev_max_backlog, missing there) and the installed tools
    are reported once, under "this machine"; per-namespace ones stay per host. A host-wide
    fix found through a lab host is made on the machine and restored."""
    f = tmp_path / "quick.toml"
    f.write_text((EXAMPLES / "quick.toml").read_text().replace('name = "quick"', 'name = "nettune-t-docwide"').replace("[workload]", '[workload]\nwindow = "4M"'))
    before, rmem, wmem = BACKLOG.read_text().strip(), RMEM.read_text().strip(), WMEM.read_text().strip()
    BACKLOG.write_text("1000\n")
    RMEM.write_text("212992\n")
    WMEM.write_text("212992\n")
    try:
        rc, out = doctor(str(f))
        assert rc == 1 and not out["errors"]
        def where(check: str, seen: str) -> list[str]:
            return [x["host"] for x in out["findings"] if x["check"] == check and x["seen"].startswith(seen)]

        assert where("net.buffers", "rmem_max 212992 (208 KiB) caps the study's -w") == ["this machine"]
        assert where("net.backlog", "netdev_max_backlog 1000") == ["this machine"]  # the namespaces have none: the machine's
        assert where("tool.iperf", "") == ["this machine"] * len(where("tool.iperf", ""))
        assert len({x["seen"] for x in out["findings"] if x["check"] == "tool.iperf"}) == len(where("tool.iperf", ""))
        assert sorted(where("net.somaxconn", "")) == ["client", "server"]  # per namespace
        assert sorted(where("nic.offloads", "")) == ["client", "server"]
        assert not lab_leftovers()

        rc, out = doctor(str(f), "--check", "net.buffers", "--fix", "net.buffers")
        assert RMEM.read_text().strip() == "4194304" and len(out["fixed"]) == 2  # rmem_max and wmem_max, once for the machine
        r = nettune("restore")
        assert r.returncode == 0 and RMEM.read_text().strip() == "212992", r.stdout + r.stderr
        assert not Journal().open_sessions() and not lab_leftovers()
    finally:
        BACKLOG.write_text(before + "\n")
        RMEM.write_text(rmem + "\n")
        WMEM.write_text(wmem + "\n")


def test_lab_study_capture_replays_after_the_lab_is_gone(tmp_path):
    f = tmp_path / "quick.toml"
    f.write_text((EXAMPLES / "quick.toml").read_text().replace('name = "quick"', 'name = "nettune-t-doccap"'))
    cap = tmp_path / "quick.tar.gz"
    rc, live = doctor(str(f), "--capture", str(cap))
    assert not lab_leftovers()  # the lab is down: the replay reads only the capture
    rc2, replay = doctor("--from", str(cap))
    assert rc2 == rc
    _same(live, replay)
    r = nettune("doctor", "--from", str(cap), "--fix", "nic.offloads")
    assert r.returncode == 2 and "nothing can be fixed there" in r.stderr


def _study(lab, tmp_path) -> Path:
    f = tmp_path / "s.toml"
    f.write_text(f'name = "t-doctor-ssh"\n[target]\nkind = "ssh"\ninventory = "{lab["inventory"]}"\n'
                 '[workload]\nserver = "server"\nclient = "client"\nduration = 1\n')
    return f


def test_mtu_mismatch_gro_and_buffers_on_lab_hosts_fixed_and_restored(lab, tmp_path):
    lay = lab["layout"]
    dev = {h: lay.ns_if(h) for h in HOSTS}
    mtu = {h: netns_read(lay, h, f"/sys/class/net/{dev[h]}/mtu") for h in HOSTS}
    def set_mtu(h: str, value: str) -> None:
        subprocess.run(["ip", "netns", "exec", lay.ns(h), "ip", "link", "set", "dev", dev[h], "mtu", value], check=True)

    set_mtu("server", "9000")
    set_mtu("client", "1500")
    try:
        rc, out = doctor(str(_study(lab, tmp_path)))
        assert rc == 1
        by = {}
        for x in out["findings"]:
            by.setdefault((x["host"], x["check"]), []).append(x)
        seen = " | ".join(x["seen"] for x in by[("server", "path.mtu")])
        assert "9000-byte frames from server do not reach client; the largest that passes is 1500 bytes" in seen
        assert any("MTU mismatch" in x["seen"] for x in by[("client", "path.mtu")])
        assert all(any("GRO off" in x["seen"] for x in by[(h, "nic.offloads")]) for h in HOSTS)
        # a veth has no physical rate (the 10 Gbit/s it reports is nominal): the buffers are
        # judged against the measured RTT at 100 Gbit/s, never against a "10 Gbit/s link"
        buf = next(x for x in by[("server", "net.buffers")] if x["seen"].startswith("tcp_rmem"))
        assert buf["severity"] == "info" and "fills 100 Gbit/s or more at RTT" in buf["seen"], buf
        assert "no physical rate" in buf["evidence"] and "measured to client" in buf["evidence"] and "10 Gbit/s link" not in buf["evidence"]

        rc, out = doctor(str(_study(lab, tmp_path)), "--fix", "path.mtu", "--fix", "nic.offloads")
        assert netns_read(lay, "client", f"/sys/class/net/{dev['client']}/mtu") == "9000"
        gro = subprocess.run(["ip", "netns", "exec", lay.ns("client"), "ethtool", "-k", dev["client"]], capture_output=True, text=True).stdout
        assert "generic-receive-offload: on" in gro
        r = nettune("restore")
        assert r.returncode == 0, r.stdout + r.stderr
        assert netns_read(lay, "client", f"/sys/class/net/{dev['client']}/mtu") == "1500"
        gro = subprocess.run(["ip", "netns", "exec", lay.ns("client"), "ethtool", "-k", dev["client"]], capture_output=True, text=True).stdout
        assert "generic-receive-offload: off" in gro
    finally:
        for h in HOSTS:
            set_mtu(h, mtu[h])


def _same(a: dict, b: dict) -> None:
    keys = ("check", "host", "severity", "seen", "evidence", "why", "fix", "revert", "knob")
    fa = sorted(json.dumps({k: f[k] for k in keys}, sort_keys=True) for f in a["findings"])
    fb = sorted(json.dumps({k: f[k] for k in keys}, sort_keys=True) for f in b["findings"])
    assert fa == fb
    assert a["summary"] == b["summary"] and a["hosts"] == b["hosts"]


def test_lab_hosts_live_and_through_their_capture_find_the_same(lab, tmp_path):
    """The ssh lab's hosts read live, recorded with --capture, then read back with --from:
    the same findings, each naming the capture as its input."""
    cap = tmp_path / "lab.tar.gz"
    rc, live = doctor(str(_study(lab, tmp_path)), "--capture", str(cap))
    assert live["capture"] == str(cap) and cap.is_file() and not live["errors"]
    rc2, replay = doctor("--from", str(cap))
    assert rc2 == rc and replay["input"] == f"capture {cap}"
    _same(live, replay)
    assert all(i.startswith("capture: ") for f in replay["findings"] for i in f["inputs"])
