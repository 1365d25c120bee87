"""Which pending changes block which study, and which a host name or a lab selects
(knobs/gate.py), on journals written as a killed run leaves them. No network: nothing here
connects anywhere (the journal gate decides from the journal and the study file alone).
The SSH side for real is tests/test_ssh_restore.py."""
import ipaddress

import pytest

from nettune.errors import NettuneError
from nettune.knobs.gate import for_host, in_labs, journal_gate, pending_hosts
from nettune.knobs.journal import Journal
from nettune.knobs.restore import restore_pending
from nettune import parse_study

LOC = {"key": "sysctl:net.core.somaxconn", "kind": "sysctl", "arg": "net.core.somaxconn", "device": None}


@pytest.fixture(autouse=True)
def state_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("NETTUNE_STATE_DIR", str(tmp_path / "state"))


def killed(session: str, places: list[dict]) -> Journal:
    """A session whose runner died after changing one value at each place."""
    j = Journal()
    j.append({"op": "begin", "session": session, "study": "s", "pid": 999999999, "pid_start": "1", "time": 1.0})
    for seq, place in enumerate(places, 1):
        j.change(session, seq, "s", place["label"], LOC, place, "4096", "1000")
    return j


def remote(label: str, address: str, port: int | None = 22) -> dict:
    reach = {"address": address, "port": port, "user": "root", "host_key": "ssh-ed25519 AAAA"} if port else None
    rec = {"type": "remote", "label": label, "key": f"remote:{label}", "address": address}
    return rec | ({"reach": reach} if reach else {})


def ssh_study(*hosts: tuple[str, str, int], knobs: bool = False) -> object:
    text = 'name = "x"\n[target]\nkind = "ssh"\n'
    for name, address, port in hosts:
        text += f'[target.hosts.{name}]\naddress = "{address}"\nport = {port}\n'
    text += f'[workload]\nserver = "{hosts[0][0]}"\nclient = "{hosts[-1][0]}"\n'
    return parse_study(text + ('[knobs]\n"sysctl:net.core.somaxconn" = 1000\n' if knobs else ""))


LOCAL = parse_study('name = "l"\n[target]\nkind = "local"\n')
VM1 = remote("vm1", "198.19.215.10")


def test_a_remote_hosts_changes_block_only_studies_that_use_it():
    killed("r", [VM1])
    for study in (LOCAL, ssh_study(("a", "198.19.215.11", 22), ("b", "198.19.215.12", 22), knobs=True),
                  ssh_study(("a", "198.19.215.10", 2222), ("b", "198.19.215.12", 22))):  # same address, other sshd
        notes = journal_gate(bool(study.knobs), study=study)
        assert len(notes) == 1 and "left settings changed on vm1 (198.19.215.10); this study does not use them" in notes[0]
        assert "nettune restore --forget HOST" in notes[0]
    for study in (ssh_study(("a", "198.19.215.10", 22), ("b", "198.19.215.12", 22)), ssh_study(("b", "198.19.215.12", 22), ("a", "198.19.215.10", 22), knobs=True)):
        with pytest.raises(NettuneError, match=r"left settings changed on vm1 \(198\.19\.215\.10\), which this study uses .*nettune restore"):
            journal_gate(bool(study.knobs), study=study)
    assert len(Journal().open_sessions()) == 1  # refusing or noting never settles anything


def test_changes_on_this_machine_block_local_and_lab_studies_only(tmp_path):
    killed("m", [{"type": "machine", "label": "machine", "key": "machine"},
                 {"type": "netns", "label": "server", "key": "netns:nettune-l-server", "netns": "nettune-l-server", "ino": 1}])
    with pytest.raises(NettuneError, match=r"on this machine, which this study uses"):
        journal_gate(False, study=LOCAL)  # loopback runs on this machine, in no lab namespace
    lab = parse_study('name = "l"\n[target]\nkind = "lab"\n')
    with pytest.raises(NettuneError, match=r"on server \(namespace nettune-l-server\), this machine, which this study uses"):
        journal_gate(False, study=lab)
    notes = journal_gate(False, study=ssh_study(("a", "198.19.215.10", 22), ("b", "198.19.215.12", 22)))
    assert "this study does not use them" in notes[0]


def test_another_labs_namespace_blocks_no_other_study():
    killed("n", [{"type": "netns", "label": "server", "key": "netns:nettune-l-server", "netns": "nettune-l-server", "ino": 1}])
    for other in (parse_study('name = "other"\n[target]\nkind = "lab"\n'), LOCAL):
        notes = journal_gate(False, study=other)
        assert len(notes) == 1 and "this study does not use them" in notes[0]
    with pytest.raises(NettuneError, match="which this study uses"):
        journal_gate(False, study=parse_study('name = "l"\n[target]\nkind = "lab"\n'))


def test_a_lab_hosts_reached_over_ssh_belong_to_that_lab():
    killed("s", [remote("server", "198.19.44.10")])
    lab = parse_study('name = "l"\n[target]\nkind = "lab"\nsubnet = "198.19.44.0/24"\n')
    with pytest.raises(NettuneError, match="which this study uses"):
        journal_gate(False, study=lab)
    assert "does not use them" in journal_gate(False, study=LOCAL)[0]


def test_a_record_without_port_matches_its_address():
    killed("old", [remote("vm1", "198.19.215.10", port=None)])  # written before `reach` existed
    with pytest.raises(NettuneError, match="which this study uses"):
        journal_gate(False, study=ssh_study(("a", "198.19.215.10", 2222), ("b", "198.19.215.12", 22)))


def test_host_names_and_labs_select_their_changes():
    ns = {"type": "netns", "label": "server", "key": "netns:nettune-lab1-server", "netns": "nettune-lab1-server", "ino": 1}
    j = killed("h", [VM1, remote("vm2", "192.0.2.7"), ns, {"type": "machine", "label": "machine", "key": "machine"}])
    (s,) = j.open_sessions()
    by = {c.host: c for c in s.changes}
    assert [h for h, c in by.items() if for_host("vm1")(c)] == ["vm1"]
    assert [h for h, c in by.items() if for_host("198.19.215.10")(c)] == ["vm1"]
    assert [h for h, c in by.items() if for_host("nettune-lab1-server")(c)] == ["server"]
    assert [h for h, c in by.items() if for_host("machine")(c)] == ["machine"]
    chosen = in_labs({"nettune-lab1-server"}, [ipaddress.ip_network("198.19.215.0/24")])
    assert sorted(h for h, c in by.items() if chosen(c)) == ["server", "vm1"]
    assert pending_hosts(j, for_host("vm2")) == ["vm2 (192.0.2.7)"]


def test_restore_ends_a_session_that_died_before_changing_anything():
    Journal().append({"op": "begin", "session": "empty", "study": "x", "pid": 999999999, "pid_start": "1", "time": 1.0})
    out, alive = restore_pending()
    assert out.lines == [] and not alive and Journal().open_sessions() == []
