"""Which place a host's knob values are journaled under: decided by Host.on_this_machine,
never by reach() happening to return None. No root: hosts are constructed directly."""
from __future__ import annotations

from typing import Any

import pytest

from nettune.knobs.places import place_for
from nettune.targets.base import HostBase
from nettune.targets.lab.lab import LabHost
from nettune.targets.local import LocalHost


class ForgetfulRemote(HostBase):
    """A new remote target member that forgot to implement reach()."""

    def __init__(self) -> None:
        self.name, self.address = "k8s-node", "192.0.2.20"


class Remote(ForgetfulRemote):
    def reach(self) -> dict[str, Any]:
        return {"address": self.address}


def test_a_host_not_on_this_machine_gets_a_remote_place_never_machine():
    host = Remote()
    assert host.on_this_machine is False  # HostBase's default: remote
    for scope in ("ns", "machine"):
        place = place_for(host, scope)
        assert place.type == "remote" and place.key == "remote:k8s-node"
        assert place.record()["reach"] == {"address": "192.0.2.20"}


def test_a_forgotten_reach_fails_loudly_instead_of_meaning_this_machine():
    host = ForgetfulRemote()
    place = place_for(host, "machine")
    assert place.type == "remote"
    with pytest.raises(NotImplementedError, match="must implement reach"):
        place.record()  # what the journal writes before any change


def test_hosts_of_this_machine_say_so():
    assert LocalHost("a").on_this_machine and LocalHost("a").reach() is None
    assert place_for(LocalHost("a"), "ns").type == "machine"
    lab = LabHost("a", "nettune-x-a", "198.18.0.11", "eth0")
    assert lab.on_this_machine and lab.reach() is None
    assert place_for(lab, "ns").type == "netns" and place_for(lab, "machine").type == "machine"
