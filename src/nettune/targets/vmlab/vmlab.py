"""A study's VM lab: bring it up, find it again, take it down (`nettune lab up FILE --vms`,
`nettune lab down`).

Everything of lab <study> is under STATE_DIR/vmlab/<study>/ (mode 0700): record.json (what
was made, for `lab down` after a crash), the private libvirtd's directories
(hypervisor.py), the SSH keys (one user key, a host key per guest and one for the
hypervisor, and known_hosts holding exactly those: host key checking stays strict), and
per guest its qcow2 overlay, seed archive, domain XML and console log. On this machine's
network: the lab bridge nv<id>br with .1 of the lab's /24, one tap per guest nv<id>t<i>
(libvirt makes them; never named like the namespace lab's nt<id>... links, whose cleanup
must not take a VM lab's bridge away), and an `unreachable` route for the /24 behind the
bridge's own (metric UNREACHABLE_METRIC): should the bridge vanish, traffic to the guests'
addresses fails here instead of leaving through the default route. Addresses come from
lab_layout.LabLayout (the id, the /24, .1 and .(10+i)).
"""
from __future__ import annotations

import ipaddress
import json
import re
import shutil
import socket
import time
from pathlib import Path
from typing import Any, Callable

from pyroute2 import IPRoute
from pyroute2.netlink.exceptions import NetlinkError

from ...errors import NettuneError
from ..lab.lab_layout import LabLayout, default_subnet
from ..lab.labnet import require_root
from ..procs import STATE_DIR, owner_alive, owner_token
from . import domains, guest_files as gf
from .hypervisor import Hypervisor, free_ssh_port, remove_mount_points

VMLAB_DIR = STATE_DIR / "vmlab"
BOOT_TIMEOUT = 300.0  # seconds for every guest to answer on port 22 after `virsh start`
Echo = Callable[[str], None]
UNREACHABLE_METRIC = 4242
VM_LINK = re.compile(r"^nv[0-9a-f]{5}(br|t\d+)$")
HV_KEY = ".hypervisor"  # the hypervisor's host key directory (no guest name has a dot)


def lab_dir(study: str) -> Path:
    return VMLAB_DIR / study


def bridge_of(layout: LabLayout) -> str:
    return f"nv{layout.sid}br"


def tap_of(layout: LabLayout, host: str) -> str:
    return f"nv{layout.sid}t{layout.hosts.index(host)}"


def layout_of(study: Any) -> LabLayout:
    spec = study.target
    subnet = ipaddress.ip_network(spec.subnet) if spec.subnet else default_subnet(study.name)
    return LabLayout(study.name, list(spec.guests), subnet)  # type: ignore[arg-type]


def guests_of(study: Any, layout: LabLayout) -> list[domains.GuestSpec]:
    spec = study.target
    return [domains.GuestSpec(h, layout.address(h), layout.mac(h, "vm"), tap_of(layout, h), spec.hosts[h].vcpus, spec.hosts[h].memory,
                              spec.hosts[h].queues) for h in spec.guests]


def read_record(study: str) -> dict[str, Any] | None:
    try:
        rec = json.loads((lab_dir(study) / "record.json").read_text())
    except (OSError, ValueError):
        return None
    return rec if isinstance(rec, dict) else None


def _write_record(rec: dict[str, Any]) -> None:
    f = lab_dir(rec["study"]) / "record.json"
    tmp = f.with_suffix(".tmp")
    tmp.write_text(json.dumps(rec, indent=1))
    tmp.replace(f)


def _shape(study: Any, layout: LabLayout) -> dict[str, Any]:
    """What the lab is made of (a lab up with another shape is re-created)."""
    return {"subnet": str(layout.subnet), "guests": [g.__dict__ for g in guests_of(study, layout)],
            "hypervisor": study.target.hypervisors[0] if study.target.hypervisors else None}


def running(rec: dict[str, Any]) -> bool:
    """Is the recorded lab whole: its libvirtd and hypervisor sshd up, every guest running?"""
    hv = Hypervisor(lab_dir(rec["study"]))
    if not hv.answering() or hv.sshd_pid() is None:
        return False
    states = {g["name"]: hv.virsh("domstate", g["name"], check=False).stdout.strip() for g in rec["shape"]["guests"]}
    return all(s == "running" for s in states.values())


def up(study: Any, echo: Echo = print) -> tuple[dict[str, Any], bool]:
    """The study's VM lab, brought up (or found up with the same shape, and used as it is).
    It stays up until `nettune lab down`: booting guests costs minutes, and settings a run
    could not put back stay reachable for `nettune restore`. The caller (a run, or `lab
    up`) becomes its owner: `lab down` leaves it alone while that process lives.
    Returns (record, made now)."""
    require_root("the VM lab")
    layout = layout_of(study)
    shape = _shape(study, layout)
    rec = read_record(study.name)
    if rec is not None:
        owner = str(rec.get("owner", ""))
        if owner != owner_token() and owner_alive(owner):
            raise NettuneError(f"the VM lab of study {study.name!r} is in use by a nettune run still going (pid {owner.split()[0]}); "
                               "wait for it to end, or give this study another name")
        if rec.get("shape") == shape and running(rec):
            rec["owner"] = owner_token()
            _write_record(rec)
            return rec, False
        echo(f"VM lab {study.name}: " + ("its shape changed" if rec.get("shape") != shape else "not whole any more") + "; re-creating it")
        down(study.name, force=True)
    from .accel import accelerator, guest_image  # noqa: PLC0415

    image = guest_image(echo)
    acc = accelerator(echo)
    d = lab_dir(study.name)
    d.mkdir(parents=True, exist_ok=True)
    d.chmod(0o700)
    rec = {"study": study.name, "shape": shape, "bridge": bridge_of(layout), "bridge_address": layout.bridge_address,
           "owner": owner_token(), "created": time.time(), "accel": {"name": acc.name, "why": acc.why},
           "image": {"release": image.release, "package": image.package, "disk": str(image.disk)}}
    _write_record(rec)  # first: a crash from here on leaves a lab `lab down` knows
    try:
        _bridge_up(layout)
        hv_port = free_ssh_port(layout.bridge_address)
        keys = _keys(d, layout, [g["name"] for g in shape["guests"]], hv_port)
        hv = Hypervisor(d)
        _hypervisor_sshd(hv, layout, keys, hv_port)
        rec["hypervisor"] = {"name": shape["hypervisor"], "address": layout.bridge_address, "port": hv_port}
        rec["keys"] = {"user": str(keys["user"]), "known_hosts": str(keys["known_hosts"])}
        rec["libvirtd_pid"] = hv.start()
        _write_record(rec)
        for g in guests_of(study, layout):
            _define(hv, d, g, acc.domain_type, image.disk, layout, keys)
        for g in guests_of(study, layout):
            hv.virsh("start", g.name)
        echo(f"VM lab {study.name}: {len(shape['guests'])} guest(s) booting ({acc.name}: {acc.why})")
        wait_ssh([(g.name, g.address, d / f"console-{g.name}.log") for g in guests_of(study, layout)], BOOT_TIMEOUT)
    except BaseException:
        down(study.name, force=True)
        raise
    return rec, True


def release(study: str) -> None:
    """A run that used the lab is over: nobody owns it until the next run or `lab up`."""
    rec = read_record(study)
    if rec is not None and rec.get("owner") == owner_token():
        rec["owner"] = ""
        _write_record(rec)


def _bridge_up(layout: LabLayout) -> None:
    name = bridge_of(layout)
    with IPRoute() as ipr:
        _unreachable(ipr, str(layout.subnet), "add")
        if not ipr.link_lookup(ifname=name):
            ipr.link("add", ifname=name, kind="bridge")
        br = ipr.link_lookup(ifname=name)[0]
        ipr.link("set", index=br, state="up")
        if layout.bridge_address not in {a.get_attr("IFA_ADDRESS") for a in ipr.get_addr(index=br)}:
            ipr.addr("add", index=br, address=layout.bridge_address, prefixlen=layout.subnet.prefixlen)


def _unreachable(ipr: IPRoute, subnet: str, op: str) -> None:
    try:
        ipr.route(op, dst=subnet, type="unreachable", priority=UNREACHABLE_METRIC)
    except NetlinkError as e:
        if not (op == "add" and e.code == 17) and not (op == "del" and e.code in (2, 3)):  # EEXIST; ENOENT/ESRCH
            raise


def _keys(d: Path, layout: LabLayout, guests: list[str], hv_port: int) -> dict[str, Any]:
    from ..ssh.sshlab import keygen, public_key  # noqa: PLC0415

    ssh = d / "ssh"
    ssh.mkdir(exist_ok=True)
    ssh.chmod(0o700)
    user = ssh / "id_ed25519"
    keygen(user, f"nettune-vmlab-{layout.study}")
    hosts = {}
    lines = []
    for h in [*guests, HV_KEY]:
        (ssh / h).mkdir(exist_ok=True)
        key = ssh / h / "ssh_host_ed25519_key"
        keygen(key, f"nettune-vmlab-{layout.study}-{h}")
        hosts[h] = key
        where = layout.address(h) if h != HV_KEY else f"[{layout.bridge_address}]:{hv_port}" if hv_port != 22 else layout.bridge_address
        lines.append(f"{where} {public_key(key)}")
    known = ssh / "known_hosts"
    known.write_text("\n".join(lines) + "\n")
    net = str(layout.subnet.network_address).rsplit(".", 1)[0]
    authorized = f'from="{net}.*" {public_key(user)}\n'  # only from the lab's own /24
    return {"user": user, "hosts": hosts, "known_hosts": known, "authorized": authorized}


def _hypervisor_sshd(hv: Hypervisor, layout: LabLayout, keys: dict[str, Any], port: int) -> None:
    from ..ssh.sshlab import PRIVSEP_DIR, sshd_version, sshd_config, sshd_path  # noqa: PLC0415

    hv.sshd_dir.mkdir(parents=True, exist_ok=True)
    PRIVSEP_DIR.mkdir(mode=0o755, exist_ok=True)
    auth = hv.sshd_dir / "authorized_keys"
    auth.write_text(keys["authorized"])
    text = sshd_config(layout.bridge_address, port, keys["hosts"][HV_KEY], auth, hv.sshd_dir / "sshd.pid", sshd_version(sshd_path()))
    (hv.sshd_dir / "sshd_config").write_text(text)


def _define(hv: Hypervisor, d: Path, g: domains.GuestSpec, domain_type: str, image: Path, layout: LabLayout, keys: dict[str, Any]) -> None:
    from ..ssh.sshlab import sshd_version, sshd_config, sshd_path  # noqa: PLC0415

    disk, seed, console = d / f"{g.name}.qcow2", d / f"{g.name}.seed.tar", d / f"console-{g.name}.log"
    disk.unlink(missing_ok=True)
    console.unlink(missing_ok=True)
    domains.overlay(image, disk)
    host_key = keys["hosts"][g.name]
    sshd = sshd_config(g.address, 22, Path("/etc/ssh/ssh_host_ed25519_key"), Path("/root/.ssh/authorized_keys"), Path("/run/sshd.pid"),
                       sshd_version(sshd_path()))
    domains.seed(seed, {
        "etc/hostname": (g.name + "\n", 0o644),
        gf.SEED_CONF: (gf.seed_conf(g.name, g.address, layout.subnet.prefixlen), 0o644),
        "etc/ssh/ssh_host_ed25519_key": (host_key.read_text(), 0o600),
        "etc/ssh/ssh_host_ed25519_key.pub": (host_key.with_suffix(".pub").read_text(), 0o644),
        "etc/ssh/sshd_config": (sshd, 0o644),
        "root/.ssh/authorized_keys": (keys["authorized"], 0o600),
    })
    xml = d / f"{g.name}.xml"
    xml.write_text(domains.domain_xml(g, domain_type, disk, seed, bridge_of(layout), console))
    hv.virsh("define", str(xml))


def ssh_banner(address: str, port: int = 22, timeout: float = 3.0) -> bool:
    try:
        with socket.create_connection((address, port), timeout=timeout) as s:
            return s.recv(64).startswith(b"SSH-")
    except OSError:
        return False


def wait_ssh(guests: list[tuple[str, str, Path]], timeout: float) -> None:
    """Until every guest's sshd answers; else one line naming the guest and its console's last line."""
    end = time.monotonic() + timeout
    waiting = list(guests)
    while waiting and time.monotonic() < end:
        waiting = [g for g in waiting if not ssh_banner(g[1])]
        if waiting:
            time.sleep(1.0)
    if waiting:
        name, address, console = waiting[0]
        raise NettuneError(f"VM lab guest {name} ({address}) did not answer on port 22 within {timeout:.0f}s; its console "
                           f"({console}) ends: {_last_line(console)}")


def _last_line(path: Path) -> str:
    try:
        lines = [ln.strip() for ln in path.read_text(errors="replace").replace("\r", "").splitlines() if ln.strip()]
    except OSError:
        return "(no console output)"
    return lines[-1][-200:] if lines else "(empty)"


def down(study: str, force: bool = False) -> dict[str, list[str]]:
    """Remove VM lab `study`: domains (destroyed, undefined), its libvirtd and sshd, any
    QEMU it left, its bridge and taps, its files. A lab whose run is still going is kept
    unless force."""
    rec = read_record(study)
    d = lab_dir(study)
    if rec is not None and not force and owner_alive(str(rec.get("owner", ""))) and rec.get("owner") != owner_token():
        return {"kept (study still running; --force removes it)": [study]}
    gone = Hypervisor(d).stop() if d.is_dir() else []
    links = []
    if rec is not None:
        with IPRoute() as ipr:
            for name in [rec.get("bridge", "")] + [g.get("tap", "") for g in (rec.get("shape") or {}).get("guests", [])]:
                for idx in ipr.link_lookup(ifname=name) if VM_LINK.match(str(name)) else []:
                    try:
                        ipr.link("del", index=idx)
                        links.append(name)
                    except NetlinkError:
                        pass
            if (rec.get("shape") or {}).get("subnet"):
                _unreachable(ipr, rec["shape"]["subnet"], "del")
    shutil.rmtree(d, ignore_errors=True)
    if not any(p.is_dir() for p in VMLAB_DIR.glob("*")):
        remove_mount_points(VMLAB_DIR)
    return {"VM lab domains": [f"{study}/{g}" for g in gone], "VM lab links": links, "VM labs": [study] if rec or gone else []}


def labs() -> list[str]:
    return sorted(p.name for p in VMLAB_DIR.iterdir() if p.is_dir()) if VMLAB_DIR.is_dir() else []


def down_all(force: bool = False) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for name in labs():
        for k, v in down(name, force).items():
            out.setdefault(k, []).extend(v)
    if not labs():
        remove_mount_points(VMLAB_DIR)
    return out


def subnets(name: str | None = None, force: bool = False) -> list[Any]:
    """The subnets of the VM labs `lab down` (NAME, or all) is about to remove, so that
    settings changed on their guests and hypervisor are put back first (not those of a
    run still going, unless force)."""
    out = []
    for study in [name] if name else labs():
        rec = read_record(study) if study else None
        if rec is None or not (rec.get("shape") or {}).get("subnet"):
            continue
        if force or not owner_alive(str(rec.get("owner", ""))) or rec.get("owner") == owner_token():
            out.append(ipaddress.ip_network(rec["shape"]["subnet"]))
    return out



def ssh_hosts(rec: dict[str, Any], spec: Any) -> dict[str, dict[str, Any]]:
    """The lab's hosts as ssh target hosts (inventory fields): the guests, then the hypervisor."""
    keys = rec["keys"]
    out: dict[str, dict[str, Any]] = {}
    for g in rec["shape"]["guests"]:
        h = spec.hosts[g["name"]] if spec is not None and g["name"] in spec.hosts else None
        out[g["name"]] = {"address": g["address"], "port": 22, "user": "root", "key": keys["user"], "known_hosts": keys["known_hosts"],
                          "interface": gf.GUEST_IF, "allow_reboot": h.allow_reboot if h is not None else True,
                          "reboot_timeout": h.reboot_timeout if h is not None else 300.0}
    hv = rec.get("hypervisor") or {}
    if hv.get("name"):
        out[hv["name"]] = {"address": hv["address"], "port": hv["port"], "user": "root", "key": keys["user"],
                           "known_hosts": keys["known_hosts"], "role": "hypervisor"}
    return out

