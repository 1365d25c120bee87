"""Ansible inventories as a host source: the static reader agrees with ansible-inventory,
variables map to nettune's host fields, what is not honoured is named."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from nettune.errors import SpecError
from nettune.plan.study_file import parse_study
from nettune.studyfile.ansible_inventory import load_ansible, static_list

FIX = Path(__file__).parent / "fixtures" / "ansible"


def _groups(listing: dict) -> dict:
    return {g: {k: sorted(v) for k, v in body.items()} for g, body in listing.items() if g != "_meta"}


@pytest.mark.parametrize("name", ["fleet.ini", "fleet.yml"])
def test_static_reader_agrees_with_ansible_inventory(name):
    exe = shutil.which("ansible-inventory")
    if exe is None:
        pytest.skip("ansible-inventory (ansible-core, in the test extra) is not installed")
    real = json.loads(subprocess.run([exe, "-i", str(FIX / name), "--list"], capture_output=True, text=True, check=True).stdout)
    real["_meta"].pop("profile", None)
    ours = static_list(FIX / name)
    assert ours["_meta"] == real["_meta"]  # every host, every variable, group precedence included
    assert _groups(ours) == _groups(real)


def test_ranges_children_and_variables(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")  # the static reader
    hosts = load_ansible(FIX / "fleet.ini", "prod")
    assert sorted(hosts) == ["db-a", "db-b", "web-a.lab", "web-b.lab", "web01", "web02", "web03"]
    assert hosts["web02"]["user"] == "deploy" and hosts["web02"]["port"] == 2222  # host var over group var
    a, b = hosts["db-a"], hosts["db-b"]
    assert a["user"] == "dba" and a["sudo"] is True and a["role"] == "hypervisor" and a["connect_timeout"] == 7
    assert b["port"] == 2200 and b["key"] == str((FIX / "keys/db_key").resolve())
    assert "ansible_password" in b["ignored"]  # named, never silently used or dropped
    assert a["known_hosts"] == "/tmp/nettune-kh"
    # the jump host is a host of the inventory: its address and user come from there
    assert a["jump"] == [{"name": "bastion", "address": "198.18.0.9", "user": "jump", "port": 22, "known_hosts": "/tmp/nettune-kh"}]
    assert sorted(load_ansible(FIX / "fleet.ini", "db")) == ["db-a", "db-b"]


def test_yaml_form_and_ignored_connection_settings(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    hosts = load_ansible(FIX / "fleet.yml", "prod")
    assert sorted(hosts) == ["db-a", "db-b", "web1", "web3", "web5"]
    assert hosts["web3"]["user"] == "everyone" and hosts["db-a"]["user"] == "dba"
    assert hosts["db-a"].get("sudo") is None and any("ansible_become" in x for x in hosts["db-a"]["ignored"])  # become_user postgres
    assert any("ansible_connection=local" in x for x in hosts["db-b"]["ignored"])
    assert hosts["web1"]["jump"] == [{"name": "bastion", "address": "198.18.0.9", "user": "jump", "port": 2022}]


def test_group_errors_name_the_groups(tmp_path):
    f = tmp_path / "s.toml"
    f.write_text(f'name = "t"\n[target]\nkind = "ssh"\ninventory = "{FIX / "fleet.ini"}"\ngroup = "nope"\n[workload]\nserver = "a"\nclient = "b"\n')
    with pytest.raises(SpecError) as e:
        parse_study(f.read_text(), str(f))
    assert "no group 'nope'" in str(e.value) and "db, prod, web" in str(e.value) and "\n" not in str(e.value)
