"""The ssh target's study-file forms, inventories, pairs and rounds (no network)."""
import pytest

from nettune.errors import SpecError
from nettune.plan.pairs import check_rounds, expand_pairs, greedy_rounds, mesh_rounds, plan_rounds
from nettune import load_study, parse_study
from nettune.probes.freebsd_cpu import cp_time_as_proc_stat
from nettune.probes.machine_cpu import machine_percent, parse_proc_stat

SSH = """
name = "t"
[target]
kind = "ssh"
[target.hosts.vm1]
address = "192.0.2.10"
user = "root"
key = "~/.ssh/id_ed25519"
[target.hosts.vm2]
address = "vm2.example.test"
port = 2222
sudo = true
[target.hosts.pve]
address = "192.0.2.1"
role = "hypervisor"
[workload]
server = "vm1"
client = "vm2"
duration = 1
"""


def err(text: str) -> SpecError:
    with pytest.raises(SpecError) as e:
        parse_study(text, "s.toml")
    assert "\n" not in str(e.value)
    return e.value


def test_inline_hosts_roles_and_names():
    s = parse_study(SSH)
    t = s.target
    assert list(t.hosts) == ["vm1", "vm2", "pve"]
    assert t.test_hosts == ["vm1", "vm2"] and t.hypervisors == ["pve"]
    assert t.hosts["vm2"].port == 2222 and t.hosts["vm2"].sudo and t.hosts["vm1"].port == 22
    assert t.trust_on_first_use is False


def test_hypervisor_cannot_carry_traffic():
    e = err(SSH.replace('client = "vm2"', 'client = "pve"'))
    assert e.field.startswith("workload") or "pve" in str(e)
    assert "not a target host that runs tests" in str(e)


@pytest.mark.parametrize("field,value", [
    ("address", "$(touch /tmp/nettune-pwned)"),
    ("address", "-oProxyCommand=touch"),
    ("address", "a b"),
    ("user", "root; rm -rf /"),
    ("user", "`id`"),
    ("interface", "eth0; reboot"),
])
def test_hostile_host_fields_are_refused(field, value):
    if field == "address":
        text = SSH.replace('address = "192.0.2.10"', f'address = "{value}"')
    elif field == "user":
        text = SSH.replace('user = "root"', f'user = "{value}"')
    else:
        text = SSH.replace('user = "root"', f'user = "root"\n{field} = "{value}"')
    e = err(text)
    assert "vm1" in e.field and field in e.field


def test_inventory_merge_relative_paths_and_overrides(tmp_path):
    (tmp_path / "keys").mkdir()
    (tmp_path / "inv.toml").write_text(
        '[hosts.a]\naddress = "198.18.9.10"\nuser = "root"\nkey = "keys/id"\nknown_hosts = "keys/kh"\n'
        '[hosts.b]\naddress = "198.18.9.11"\n[hosts.pve]\naddress = "198.18.9.12"\n'
    )
    f = tmp_path / "study.toml"
    f.write_text('name = "t"\n[target]\nkind = "ssh"\ninventory = "inv.toml"\n[target.hosts.pve]\nrole = "hypervisor"\n'
                 '[target.hosts.b]\nsudo = true\n[workload]\nserver = "a"\nclient = "b"\n')
    s = load_study(f)
    t = s.target
    assert t.inventory == str(tmp_path / "inv.toml")
    assert t.hosts["a"].key == str(tmp_path / "keys" / "id") and t.hosts["a"].known_hosts == str(tmp_path / "keys" / "kh")
    assert t.hosts["b"].sudo and t.hosts["b"].address == "198.18.9.11"  # partial override keeps the inventory's fields
    assert t.hypervisors == ["pve"] and t.test_hosts == ["a", "b"]
    # re-validating the dumped model (what each point does) gives the same hosts
    from nettune.plan import expand, resolve

    assert resolve(s, expand(s)[0]).target.hosts == t.hosts


def test_inventory_problems_are_one_line_errors(tmp_path):
    base = 'name = "t"\n[target]\nkind = "ssh"\ninventory = "{}"\n[workload]\nserver = "a"\nclient = "b"\n'
    e = err(base.format(tmp_path / "missing.toml"))
    assert "does not exist" in str(e) and "lab up" in str(e)
    bad = tmp_path / "bad.toml"
    bad.write_text('[hosts.a]\naddress = "198.18.9.10"\nadress = "x"\n')
    e = err(base.format(bad))
    assert "hosts.a.adress" in str(e) and str(bad) in str(e)


def test_no_hosts_and_all_hypervisors_refused():
    assert "no hosts" in str(err('name = "t"\n[target]\nkind = "ssh"\n'))
    text = SSH.replace('address = "192.0.2.10"', 'address = "192.0.2.10"\nrole = "hypervisor"').replace(
        'port = 2222', 'port = 2222\nrole = "hypervisor"')
    assert "at least one must run tests" in str(err(text))


def test_pairs_forms_validate():
    s = parse_study(SSH.replace("duration = 1", 'duration = 1\npairs = "mesh"\nparallel_pairs = true'))
    assert s.workload.pairs == "mesh" and s.workload.parallel_pairs
    s = parse_study(SSH.replace("duration = 1", 'duration = 1\npairs = "star:vm1"'))
    assert s.workload.pairs == "star:vm1"
    s = parse_study(SSH.replace("duration = 1", 'duration = 1\npairs = [["vm1", "vm2"], ["vm2", "vm1"]]'))
    assert s.workload.pairs == [["vm1", "vm2"], ["vm2", "vm1"]]
    assert "not a target host" in str(err(SSH.replace("duration = 1", 'duration = 1\npairs = "star:pve"')))
    assert "two different hosts" in str(err(SSH.replace("duration = 1", 'duration = 1\npairs = [["vm1", "vm1"]]')))
    err(SSH.replace("duration = 1", 'duration = 1\npairs = "ring"'))
    # with pairs, server/client are ignored (they may even name no host)
    parse_study(SSH.replace('server = "vm1"', 'server = "x"').replace("duration = 1", 'duration = 1\npairs = "mesh"'))


@pytest.mark.parametrize("n", [2, 3, 4, 5, 6, 7, 8])
def test_mesh_rounds_cover_every_pair_once_without_overlap(n):
    hosts = [f"h{i}" for i in range(n)]
    rounds = mesh_rounds(hosts)
    check_rounds(rounds)
    pairs = [frozenset(p) for rnd in rounds for p in rnd]
    assert len(pairs) == n * (n - 1) // 2 == len(set(pairs))
    assert len(rounds) == (n - 1 if n % 2 == 0 else n)
    assert all(len(rnd) == n // 2 for rnd in rounds)
    # server is the host listed first
    assert all(hosts.index(a) < hosts.index(b) for rnd in rounds for a, b in rnd)


def test_four_host_mesh_is_six_pairs_in_three_rounds():
    rounds = plan_rounds("mesh", ["a", "b", "c", "d"])
    assert len(rounds) == 3 and sum(len(r) for r in rounds) == 6


def test_star_and_explicit_pairs():
    assert plan_rounds("star:b", ["a", "b", "c"]) == [[("b", "a")], [("b", "c")]]
    r = plan_rounds([["a", "b"], ["c", "d"], ["a", "c"], ["b", "d"]], list("abcd"))
    assert r == [[("a", "b"), ("c", "d")], [("a", "c"), ("b", "d")]]
    check_rounds(greedy_rounds([("a", "b"), ("b", "a"), ("a", "b")]))
    with pytest.raises(ValueError, match="not a test host"):
        expand_pairs([["a", "z"]], ["a", "b"])
    with pytest.raises(ValueError, match="at least two"):
        plan_rounds("mesh", ["a"])


def test_freebsd_cp_time_reads_like_proc_stat():
    # kern.cp_time: user nice sys intr idle (ticks); kern.cp_times: the same per CPU
    a = parse_proc_stat(cp_time_as_proc_stat("100 0 50 10 840", "50 0 25 5 420 50 0 25 5 420"), 0.0)
    b = parse_proc_stat(cp_time_as_proc_stat("200 0 100 20 1680", "100 0 50 10 840 100 0 50 10 840"), 1.0)
    assert a.ncpu == 2
    busy, _ = machine_percent(a, b)
    assert busy == pytest.approx(100 * 160 / 1000)


def test_sudo_refusals_name_the_user_and_the_fix():
    """What `sudo -n true` says, as sshtrust.sudo_problem words it (the lab tests run as
    root; these are the other users' forms, from sudo 1.9's messages)."""
    from nettune.targets.ssh.sshtrust import sudo_problem

    w = "vm (deploy@192.0.2.1:22)"
    assert sudo_problem(w, "deploy", 0, "") is None
    asks = sudo_problem(w, "deploy", 1, "sudo: a password is required\n")
    assert asks == (f"{w}: sudo = true but sudo asks deploy for a password (`sudo -n true`: sudo: a password is required); allow deploy "
                    "to use it without one ('deploy ALL=(ALL) NOPASSWD: ALL' in /etc/sudoers.d/nettune, via visudo), or log in as root with sudo = false")
    assert "not installed" in sudo_problem(w, "deploy", 127, "sh: 1: sudo: not found\n")
    tty = sudo_problem(w, "deploy", 1, "sudo: sorry, you must have a tty to run sudo\n")
    assert "wants a terminal for deploy" in tty and "Defaults:deploy !requiretty" in tty
    other = sudo_problem(w, "deploy", 1, "deploy is not in the sudoers file.\n")
    assert "fails for deploy (deploy is not in the sudoers file.)" in other
