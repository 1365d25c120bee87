"""Ansible inventories as a host source: read as Ansible reads them (the static reader is
compared with the real `ansible-inventory --list`), each host reached as Ansible's ssh
command reaches it, what is not honoured named without its value. Each defect of issue 36
(and the secrets part of issue 33) has its test here. No root, no network."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from nettune.errors import SpecError
from nettune.plan.study_file import parse_study
from nettune.studyfile.ansible_inventory import static_list

try:
    from nettune.studyfile.local_commands import allow_local_commands
except ImportError:  # the code before issue 36
    from contextlib import nullcontext as allow_local_commands  # type: ignore[assignment]

FIX = Path(__file__).parent / "fixtures" / "ansible"
EXE = shutil.which("ansible-inventory")
needs_ansible = pytest.mark.skipif(EXE is None, reason="ansible-inventory (ansible-core, in the test extra) is not installed")


def real_list(path: Path) -> dict:
    r = subprocess.run([EXE, "-i", str(path), "--list"], capture_output=True, text=True, check=True, stdin=subprocess.DEVNULL)
    data = json.loads(r.stdout)
    data["_meta"].pop("profile", None)
    return data


def _groups(listing: dict) -> dict:
    return {g: {k: sorted(v) for k, v in body.items()} for g, body in listing.items() if g != "_meta"}


@needs_ansible
@pytest.mark.parametrize("name", ["fleet.ini", "fleet.yml"])
def test_static_reader_agrees_with_ansible_inventory(name):
    real, ours = real_list(FIX / name), static_list(FIX / name)
    hostvars = ours["_meta"]["hostvars"]
    # ansible-inventory lists only hosts that have variables; every other host has none
    assert {h: v for h, v in hostvars.items() if v} == real["_meta"]["hostvars"]
    assert _groups(ours) == _groups(real)


def study(tmp_path: Path, inventory: Path, extra: str = "", hosts: str = "") -> str:
    (tmp_path / "ssh_config").write_text("Host bastion\n  HostName 198.18.0.9\n")  # -F: what ssh knows besides the inventory
    return (f'name = "t"\n[target]\nkind = "ssh"\ninventory = "{inventory}"\nssh_config = "{tmp_path / "ssh_config"}"\n{extra}\n'
            f'{hosts}\n[workload]\nserver = "a"\nclient = "b"\n')


def hosts_of(text: str, allowed: bool = False):
    with allow_local_commands(allowed):  # False: as a dry run reads it
        return parse_study(text.replace('server = "a"\nclient = "b"', 'pairs = "mesh"'), "s.toml").target


def test_ranges_children_and_variables_as_ansible_reaches_them(tmp_path, monkeypatch):
    t = hosts_of(study(tmp_path, FIX / "fleet.ini", 'group = "prod"'))
    assert sorted(t.hosts) == ["db-a", "db-b", "web-a.lab", "web-b.lab", "web01", "web02", "web03"]
    assert (t.hosts["web02"].user, t.hosts["web02"].port) == ("deploy", 2222)  # host var over group var
    a, b = t.hosts["db-a"], t.hosts["db-b"]
    assert (a.user, a.sudo, a.role, a.connect_timeout, a.address) == ("dba", True, "hypervisor", 7.0, "198.18.1.5")
    assert b.port == 2200 and b.key is None and b.agent  # keys/db_key (from where nettune runs, as for Ansible) does not exist: ssh offers agent keys
    monkeypatch.chdir(tmp_path)
    (tmp_path / "keys").mkdir()
    (tmp_path / "keys" / "db_key").write_text("stand-in\n")
    b = hosts_of(study(tmp_path, FIX / "fleet.ini", 'group = "prod"')).hosts["db-b"]
    assert b.key == str(tmp_path / "keys" / "db_key")
    assert any("ansible_password" in x for x in b.ignored) and not any("secret" in x for x in b.ignored)
    assert a.known_hosts is None and "/tmp/nettune-kh" in a.more_known_hosts
    # -o ProxyJump=bastion: ssh resolves `bastion` through its config (here the -F file), not the inventory
    assert [(j.name, j.address) for j in a.jump] == [("bastion", "198.18.0.9")]
    assert t.hosts["web01"].connect_timeout == 10.0  # Ansible always passes ConnectTimeout (default 10)


def test_yaml_form_become_user_and_local_connection(tmp_path):
    t = hosts_of(study(tmp_path, FIX / "fleet.yml", 'group = "prod"'))
    assert sorted(t.hosts) == ["db-a", "web1", "web3", "web5"]
    assert t.left_out == {"db-b": "ansible_connection=local: not reached over SSH"}
    assert t.hosts["web3"].user == "everyone" and t.hosts["db-a"].user == "dba"
    assert not t.hosts["db-a"].sudo and any("ansible_become" in x for x in t.hosts["db-a"].ignored)  # become_user postgres
    assert [(j.name, j.address, j.user, j.port) for j in t.hosts["web1"].jump] == [("bastion", "198.18.0.9", "jump", 2022)]


def test_group_errors_name_the_groups(tmp_path):
    with pytest.raises(SpecError) as e:
        hosts_of(study(tmp_path, FIX / "fleet.ini", 'group = "nope"'))
    assert "no group 'nope'" in str(e.value) and "db, prod, web" in str(e.value) and "\n" not in str(e.value)


# -- issue 36 ----------------------------------------------------------------------------
@pytest.fixture
def no_ssh_config(tmp_path, monkeypatch):
    """A home with no ~/.ssh/config (passwd's home for nettune, $HOME for older code)."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    try:
        from nettune.studyfile import ssh_config, ssh_config_read, ssh_resolve, ssh_words

        for mod in (ssh_words, ssh_resolve, ssh_config_read, ssh_config):
            if hasattr(mod, "passwd_home"):
                monkeypatch.setattr(mod, "passwd_home", lambda: str(home))
        monkeypatch.setattr(ssh_config_read, "SYSTEM_CONFIG", tmp_path / "no-system-config")
        monkeypatch.setattr(ssh_resolve, "SYSTEM_CONFIG", tmp_path / "no-system-config")
    except ImportError:
        pass
    return home


def test_hosts_without_address_on_a_machine_without_ssh_config(tmp_path, no_ssh_config):
    inv = tmp_path / "hosts.ini"
    inv.write_text("[web]\nweb1\nweb2 ansible_user=deploy\n")
    text = f'name = "t"\n[target]\nkind = "ssh"\ninventory = "{inv}"\n[workload]\nserver = "web1"\nclient = "web2"\n'
    t = parse_study(text, "s.toml").target  # ssh and Ansible simply connect to the inventory name
    assert (t.hosts["web1"].address, t.hosts["web2"].address, t.hosts["web2"].user) == ("web1", "web2", "deploy")


@needs_ansible
def test_hosts_without_variables_are_hosts_too(tmp_path):
    inv = tmp_path / "hosts.ini"
    inv.write_text("[web]\nw1 ansible_host=198.18.0.1\nw2\n[db]\nd1\n")
    for allowed in (False, True):  # the static reader and ansible-inventory (which lists w2, d1 without variables)
        t = hosts_of(study(tmp_path, inv), allowed)
        assert sorted(t.hosts) == ["d1", "w1", "w2"], allowed


GROUPS = """
[a]
h1
[b]
h1
[parent:children]
child
[child]
h1
[a:vars]
ansible_user=from_a
ansible_port=2001
[b:vars]
ansible_user=from_b
ansible_port=2002
nettune_interface=eth_b
[parent:vars]
nettune_interface=eth_parent
[child:vars]
nettune_interface=eth_child
"""


@pytest.mark.parametrize("allowed", [False, True])
def test_variable_precedence_across_groups_is_ansibles(tmp_path, allowed):
    if allowed and EXE is None:
        pytest.skip("ansible-inventory is not installed")
    inv = tmp_path / "hosts.ini"
    inv.write_text(GROUPS + "[x]\nh2 ansible_user=own\n[x:vars]\nansible_user=group\n")
    t = hosts_of(study(tmp_path, inv), allowed)
    # same depth: alphabetical, b after a wins; deeper child beats parent; host var beats group var
    assert (t.hosts["h1"].user, t.hosts["h1"].port, t.hosts["h1"].interface, t.hosts["h2"].user) == ("from_b", 2002, "eth_child", "own")
    inv.write_text(GROUPS.replace("[a:vars]\n", "[a:vars]\nansible_group_priority=10\n") + "[x]\nh2\n")
    t = hosts_of(study(tmp_path, inv), allowed)
    assert (t.hosts["h1"].user, t.hosts["h1"].port) == ("from_a", 2001)  # a higher priority applies later
    if EXE:
        real = real_list(inv)["_meta"]["hostvars"]["h1"]
        assert (real["ansible_user"], real["ansible_port"]) == ("from_a", 2001)


def test_proxycommand_in_common_args_is_refused_as_in_ssh_config(tmp_path):
    inv = tmp_path / "hosts.ini"
    inv.write_text("[web]\nweb1 ansible_host=198.18.0.1 ansible_ssh_common_args='-o ProxyCommand=\"nc -X 5 -x proxy:1080 %h %p\"'\nweb2\n")
    with pytest.raises(SpecError) as e:
        hosts_of(study(tmp_path, inv))
    assert "nettune cannot honour ProxyCommand" in str(e.value) and "use ProxyJump" in str(e.value) and "web1" in str(e.value)
    (tmp_path / "cfg").write_text("Host web1\n  ProxyCommand nc -X 5 -x proxy:1080 %h %p\n")
    with pytest.raises(SpecError) as e2:  # the same words for the same directive from ssh_config
        parse_study(f'name = "t"\n[target]\nkind = "ssh"\nssh_config = "{tmp_path / "cfg"}"\n[target.hosts.web1]\n'
                    '[target.hosts.web2]\n[workload]\nserver = "web1"\nclient = "web2"\n', "s.toml")
    assert "nettune cannot honour ProxyCommand" in str(e2.value)


def test_proxycommand_ssh_w_is_a_jump_host(tmp_path):
    inv = tmp_path / "hosts.ini"
    inv.write_text("[web]\nweb1 ansible_host=198.18.0.1 ansible_ssh_common_args='-o ProxyCommand=\"ssh -W %h:%p -q ops@bastion\"'\nweb2\n")
    t = hosts_of(study(tmp_path, inv))
    assert [(j.name, j.address, j.user) for j in t.hosts["web1"].jump] == [("bastion", "bastion", "ops")]  # default config for the inner ssh


def test_local_connection_hosts_are_left_out(tmp_path):
    inv = tmp_path / "hosts.yml"
    inv.write_text("all:\n  hosts:\n    localhost:\n      ansible_connection: local\n    a:\n    b:\n")
    t = hosts_of(study(tmp_path, inv))
    assert sorted(t.hosts) == ["a", "b"] and "localhost" in t.left_out


@needs_ansible
@pytest.mark.parametrize("name,text,words", [
    ("tabs.yml", "all:\n  hosts:\n    a:\n  \tb: 1\n", "Tabs"),
    ("bad.ini", "[web:children]\nnope\n", "undefined group"),
])
def test_ansible_inventory_errors_show_its_own_reason_and_the_file(tmp_path, name, text, words):
    inv = tmp_path / name
    inv.write_text(text)
    with pytest.raises(SpecError) as e:
        hosts_of(study(tmp_path, inv), allowed=True)
    msg = str(e.value)
    assert words.lower() in msg.lower() and str(inv) in msg and "has no hosts" not in msg and "\n" not in msg


def test_an_ini_inventory_saved_as_yml_is_read(tmp_path, monkeypatch):
    inv = tmp_path / "hosts.yml"
    inv.write_text("[web]\na ansible_host=198.18.0.1\nb ansible_host=198.18.0.2\n")
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # nettune's own reader, as without ansible-core
    t = hosts_of(study(tmp_path, inv))
    monkeypatch.undo()
    assert (t.hosts["a"].address, t.hosts["b"].address) == ("198.18.0.1", "198.18.0.2")
    if EXE:
        assert sorted(real_list(inv)["_meta"]["hostvars"]) == ["a", "b"]


def test_an_inventory_script_is_not_run_by_a_dry_run(tmp_path):
    ran = tmp_path / "ran"
    inv = tmp_path / "inventory.sh"
    inv.write_text(f"#!/bin/sh\ntouch {ran}\necho '{{\"web\": {{\"hosts\": [\"a\", \"b\"]}}}}'\n")
    inv.chmod(0o755)
    with pytest.raises(SpecError) as e:
        hosts_of(study(tmp_path, inv))
    assert "inventory script" in str(e.value) and "--run-config-commands" in str(e.value) and not ran.exists()
    if EXE:
        t = hosts_of(study(tmp_path, inv), allowed=True)
        assert ran.exists() and sorted(t.hosts) == ["a", "b"] and "ran the inventory script" in t.inventory_read


# -- issue 33: no secret in warnings or the stored study -----------------------------------
def test_passwords_in_inventory_arguments_are_never_copied(tmp_path):
    inv = tmp_path / "hosts.ini"
    inv.write_text("[web]\na ansible_host=198.18.0.1 ansible_password=hunter2 ansible_ssh_common_args='-q -o ServerAliveInterval=30'\n"
                   "b ansible_host=198.18.0.2 ansible_ssh_common_args='-o ProxyCommand=\"sshpass -p hunter2 ssh -W %h:%p gw\"'\n")
    with pytest.raises(SpecError) as e:
        hosts_of(study(tmp_path, inv))
    assert "ProxyCommand" in str(e.value) and "hunter2" not in str(e.value)
    inv.write_text(inv.read_text().splitlines()[0] + "\n" + inv.read_text().splitlines()[1] + "\nb\n")
    s = parse_study(study(tmp_path, inv).replace('server = "a"\nclient = "b"', 'pairs = "mesh"'), "s.toml")
    warnings = [f"{n}: inventory setting not honoured: {x}" for n, h in s.target.hosts.items() for x in h.ignored]
    assert any("ansible_password" in w for w in warnings) and any("-q" in w for w in warnings)  # named, as SshTarget.warnings says them
    assert not any("hunter2" in w or "ServerAlive" in w for w in warnings)
    assert "hunter2" not in s.model_dump_json()  # what the results database stores (store.begin_study)


def test_redact_hides_password_like_words():
    from nettune.studyfile.local_commands import redact

    assert redact("sshpass -p hunter2 ssh -W %h:%p gw") == "sshpass -p *** ssh -W %h:%p gw"
    assert redact("ssh -p 2222 -W %h:%p gw") == "ssh -p 2222 -W %h:%p gw"
    assert redact("tool --password=hunter2 x") == "tool --password=*** x" and "hunter2" not in redact("x TOKEN=hunter2")


def test_an_inventory_host_named_by_an_ipv6_address_is_left_out_not_the_whole_study(tmp_path):
    """Found by tests/test_reach_differential.py: one host named 2001:db8::2 anywhere in the
    inventory refused every study using it ("host name ...: use letters, digits ..."), even
    one that tests other hosts. It is left out with the way to use it; naming it in the
    study is still refused in one line."""
    inv = tmp_path / "hosts.ini"
    inv.write_text("[web]\na ansible_host=198.18.0.1\nb ansible_host=198.18.0.2\n[v6]\n2001:db8::2\n")
    t = hosts_of(study(tmp_path, inv))
    assert sorted(t.hosts) == ["a", "b"] and "ansible_host=2001:db8::2" in t.left_out["2001:db8::2"]
    with pytest.raises(SpecError, match=r"no hosts.*left out: 2001:db8::2: .* is not a name nettune can give a host"):
        hosts_of(study(tmp_path, inv, extra='group = "v6"'))


def test_naming_a_host_the_inventory_reaches_locally_is_an_error(tmp_path):
    inv = tmp_path / "hosts.ini"
    inv.write_text("localhost ansible_connection=local\n[web]\na\nb\n")
    with pytest.raises(SpecError) as e:
        hosts_of(study(tmp_path, inv, hosts="[target.hosts.localhost]\nrole = \"test\""))
    assert "ansible_connection=local" in str(e.value) and 'kind = "local"' in str(e.value)


def test_ansible_ssh_spellings_win_as_in_ansibles_ssh_plugin(tmp_path, no_ssh_config):
    """Found by tests/test_reach_differential.py: where a host has both spellings (say
    ansible_user from a group, ansible_ssh_user from another), Ansible's ssh plugin uses the
    ansible_ssh_ one (its option's vars list ends with it: the last one set wins; for the
    timeout PlayContext's magic-variable order puts ansible_ssh_timeout first). nettune took
    ansible_user, ansible_port, ansible_host, ansible_timeout."""
    from nettune.studyfile.ansible_inventory import to_host
    from nettune.studyfile.ssh_config import resolve

    hv = {"ansible_user": "deploy", "ansible_ssh_user": "bob", "ansible_port": 2201, "ansible_ssh_port": 2022,
          "ansible_host": "198.18.0.1", "ansible_ssh_host": "198.18.0.2", "ansible_timeout": 5, "ansible_ssh_timeout": 7}
    fields = to_host("h", hv, tmp_path / "hosts.ini")
    cl, dest = fields.pop("_ssh")
    got = resolve("h", None, fields, cl, dest)
    assert (got["address"], got["user"], got["port"], got["connect_timeout"]) == ("198.18.0.2", "bob", 2022, 7.0)
    only = {"ansible_user": "deploy", "ansible_port": 2201, "ansible_host": "198.18.0.1", "ansible_timeout": 5}
    fields = to_host("h", only, tmp_path / "hosts.ini")
    cl, dest = fields.pop("_ssh")
    got = resolve("h", None, fields, cl, dest)
    assert (got["address"], got["user"], got["port"], got["connect_timeout"]) == ("198.18.0.1", "deploy", 2201, 5.0)


def test_ungrouped_made_a_child_loses_hosts_as_in_ansible(tmp_path):
    """Found by tests/test_reach_differential.py: Ansible takes a host out of `ungrouped` when
    it is in any other group, counting the groups above `ungrouped` when an inventory makes it
    a child; a host then in no group is gone, and one still written in another group keeps
    only the variables of the groups left (Host.remove_group). nettune's own reader listed
    h1 and gave web9 the variables of `web`."""
    inv = tmp_path / "hosts"
    inv.write_text("[web]\nweb9\n[web:vars]\nansible_user=webuser\n[web:children]\nweb-east\n[web-east]\nx1\n"
                   "[web-east:children]\nungrouped\n[ungrouped]\nweb9\nh1\n[all:vars]\ncolor=blue\n")
    got = static_list(inv)
    assert sorted(got["_meta"]["hostvars"]) == ["web9", "x1"]
    assert got["_meta"]["hostvars"]["web9"] == {"color": "blue"}
    assert got["_meta"]["hostvars"]["x1"] == {"color": "blue", "ansible_user": "webuser"}
    assert got["web"]["hosts"] == ["web9"] and "hosts" not in got.get("ungrouped", {})
    if EXE:
        assert real_list(inv) == json.loads(json.dumps(got))
