"""What a lab leaves on this machine and how it goes: its record (LAB_DIR), finding
leftovers by name, and removing one lab, a killed run's lab or every lab (`nettune lab down`)."""
from __future__ import annotations

import ipaddress
import json
import os
import re
from pathlib import Path

from pyroute2 import IPRoute, netns
from pyroute2.netlink.exceptions import NetlinkError

from ...errors import NettuneError, NotRoot
from .lab_layout import LabLayout, short_id
from ..procs import STATE_DIR, kill_pid, lab_owner, owner_alive, owner_token, stop_dead_runs

LAB_DIR = STATE_DIR / "labs"
NETNS_DIR = Path("/var/run/netns")
LINK_RE = re.compile(r"^nt[0-9a-f]{5}(br|r\d+|u\d+)$")


def require_root(what: str = "the lab target") -> None:
    if os.geteuid() != 0:
        raise NotRoot(
            f"{what} creates network namespaces and needs root: run it with sudo, "
            'or use [target] kind = "local" for loopback tests'
        )


def remove_lab(lay: LabLayout) -> None:
    """Remove one lab: its namespaces (and the processes in them), its links in this
    machine's namespace, and its record."""
    for name in lay.namespaces():
        remove_namespace(name)
    with IPRoute() as ipr:
        for name in lay.root_links():
            for idx in ipr.link_lookup(ifname=name):
                try:
                    ipr.link("del", index=idx)
                except NetlinkError:
                    pass
    (LAB_DIR / f"{lay.study}.json").unlink(missing_ok=True)


def pids_in_namespace(name: str) -> list[int]:
    """PIDs whose network namespace is this named one (processes nettune ran in the lab)."""
    try:
        ino = os.stat(NETNS_DIR / name).st_ino
    except OSError:
        return []
    pids = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                if os.stat(f"/proc/{d}/ns/net").st_ino == ino:
                    pids.append(int(d))
            except OSError:
                continue
    return pids


def remove_namespace(name: str) -> None:
    for pid in pids_in_namespace(name):
        kill_pid(pid)
    if name in netns.listnetns():
        try:
            netns.remove(name)
        except OSError:
            pass


def leftovers() -> dict[str, list[str]]:
    """Everything that looks like ours: namespaces nettune-*, links nt<id>br / nt<id>r<i>."""
    nss = sorted(n for n in netns.listnetns() if n.startswith("nettune-"))
    links = sorted(n for n in os.listdir("/sys/class/net") if LINK_RE.match(n))
    labs = sorted(p.stem for p in LAB_DIR.glob("*.json")) if LAB_DIR.is_dir() else []
    return {"namespaces": nss, "links": links, "labs": labs}


def live_labs() -> dict[str, list[str]]:
    """Labs whose nettune process is still running: study -> its namespaces."""
    live: dict[str, list[str]] = {}
    if not LAB_DIR.is_dir():
        return live
    for f in LAB_DIR.glob("*.json"):
        try:
            st = json.loads(f.read_text())
        except (OSError, ValueError):
            continue
        if owner_alive(st.get("owner", "")):
            live[st["study"]] = [f"nettune-{st['study']}-{h}" for h in st.get("hosts", [])] + [f"nettune-{st['study']}.{n}" for n in st.get("nodes") or {}]
    return live


def _lab_records() -> dict[str, dict]:
    out = {}
    for f in sorted(LAB_DIR.glob("*.json")) if LAB_DIR.is_dir() else []:
        try:
            out[f.stem] = json.loads(f.read_text())
        except (OSError, ValueError):
            continue
    return out


def removal_plan(name: str | None = None, force: bool = False) -> tuple[set[str], list[ipaddress.IPv4Network]]:
    """The namespaces and subnets `nettune lab down` (every lab, or lab `name`) is about to
    remove, so that settings changed on those hosts can be put back first."""
    require_root("nettune lab down")
    records = _lab_records()
    live = {} if force else live_labs()
    if name is not None:
        st = records.get(name)
        if st is None or name in live:
            return set(), []
        return {f"nettune-{name}-{h}" for h in st.get("hosts", [])}, [ipaddress.ip_network(st["subnet"])]
    keep = {n for nss in live.values() for n in nss}
    namespaces = {n for n in leftovers()["namespaces"] if n not in keep}
    subnets = [ipaddress.ip_network(st["subnet"]) for lab, st in records.items() if lab not in live and st.get("subnet")]
    return namespaces, subnets


def down_one(name: str, force: bool = False) -> dict[str, list[str]]:
    """Remove one lab (`nettune lab down NAME`), leaving every other lab alone. A lab whose
    study is still running is kept unless force (then its run finds its hosts gone)."""
    require_root("nettune lab down")
    st = _lab_records().get(name)
    if st is None:
        labs = ", ".join(_lab_records()) or "none"
        raise NettuneError(f"no lab named {name!r} on this machine (labs: {labs}); `nettune lab status` lists what is there")
    if not force and owner_alive(st.get("owner", "")):
        return {"kept (study still running; --force removes it)": [name]}
    layout = LabLayout(name, list(st.get("hosts", [])), ipaddress.ip_network(st["subnet"]), st.get("nodes"))
    # the run that made it, by its owner mark (in and out of its namespaces), and its sshds
    stop_dead_runs(force, {str(st.get("owner", "")), lab_owner(name)}, labs=True)
    present = set(netns.listnetns())
    links = set(os.listdir("/sys/class/net"))
    namespaces = [n for n in layout.namespaces() if n in present]
    gone_links = [n for n in layout.root_links() if n in links]
    remove_lab(layout)
    return {"namespaces": namespaces, "links": gone_links, "labs": [name]}


def clear_dead_lab(study: str) -> list[str]:
    """Remove the lab a killed run of `study` left on this machine (its namespaces with
    the processes in them, its bridge and veths), as recorded when it was created; a new
    run would otherwise reuse those namespaces, a dead run's iperf3 server still bound
    in them. Refuses when the run that owns the lab is still alive. Returns the
    namespaces removed."""
    f = LAB_DIR / f"{study}.json"
    try:
        st = json.loads(f.read_text())
        layout = LabLayout(study, list(st["hosts"]), ipaddress.ip_network(st["subnet"]), st.get("nodes"))
    except FileNotFoundError:
        return []
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise NettuneError(f"lab state {f} is unreadable ({e}); run `nettune lab down` to remove what is left") from None
    owner = str(st.get("owner", ""))
    if owner == owner_token():
        return []  # this process made it (e.g. `lab up` from Python): it is ours to use
    if owner_alive(owner):
        raise NettuneError(f"the lab of study {study!r} belongs to a nettune run still going (pid {owner.split()[0]}); wait for it to end, or give this study another name")
    if st.get("kept"):
        return []  # `nettune lab up` made it: the user's, used as it is, removed only by `nettune lab down`
    found = [n for n in layout.namespaces() if n in netns.listnetns()]
    remove_lab(layout)
    return found


def down_all(force: bool = False) -> dict[str, list[str]]:
    """Remove every lab left behind (by a killed run, or `nettune lab up`). Labs of a
    study still running are kept unless force. Returns what was removed or kept."""
    require_root("nettune lab down")
    found = leftovers()
    live = {} if force else live_labs()
    keep_ns = {n for nss in live.values() for n in nss}
    keep_links = {f"nt{short_id(study)}" for study in live}
    stopped = stop_dead_runs(force, labs=True)  # recorded or found by owner mark: before their namespaces and ports go
    for n in found["namespaces"]:
        if n not in keep_ns:
            remove_namespace(n)
    with IPRoute() as ipr:
        for name in found["links"]:
            if name[:7] in keep_links:
                continue
            for idx in ipr.link_lookup(ifname=name):
                try:
                    ipr.link("del", index=idx)
                except NetlinkError:
                    pass
    for lab in found["labs"]:
        if lab not in live:
            (LAB_DIR / f"{lab}.json").unlink(missing_ok=True)
    removed = {
        "namespaces": [n for n in found["namespaces"] if n not in keep_ns],
        "links": [n for n in found["links"] if n[:7] not in keep_links],
        "labs": [lab for lab in found["labs"] if lab not in live],
        "processes": [str(p) for p in stopped],
    }
    if live:
        removed["kept (study still running; --force removes it)"] = sorted(live)
    return removed
