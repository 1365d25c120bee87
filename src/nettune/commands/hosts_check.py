"""`nettune hosts STUDY`: each host as nettune will connect to it, then whether it answers
and has its tools, without running a test (connections are made one host at a time, so
one host that is down is reported as that host, with its reason). Each target kind
describes and checks its own hosts (targets/target_kind.py)."""
from __future__ import annotations

from ..studyfile.models import Study
from ..targets import target_kind
from ..targets.target_kind import TOOLS as TOOLS, HostCheck as HostCheck


def describe_hosts(study: Study) -> list[HostCheck]:
    """How each host of the study's target is reached (nothing is connected)."""
    return target_kind(study).describe_hosts(study)


def check_hosts(study: Study) -> list[HostCheck]:
    """describe_hosts, then connect to each (through its jump hosts) and look for its tools."""
    rows = describe_hosts(study)
    target_kind(study).check_hosts(study, rows)
    return rows


def left_out(study: Study) -> dict[str, str]:
    """Hosts the study's inventory names that its target does not reach, and why."""
    return target_kind(study).left_out(study)


def inventory_read(study: Study) -> str | None:
    """How the study's inventory was read (ansible-inventory, or nettune's reader)."""
    return target_kind(study).inventory_read(study)


def resolution_notes(study: Study) -> list[str]:
    """What reading the study's hosts ran or did not run, one line each."""
    return target_kind(study).resolution_notes(study)
