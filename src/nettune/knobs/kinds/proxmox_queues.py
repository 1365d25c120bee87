"""pve_queues:VMID[/netN] = N  (virtio-net queues of a Proxmox VE VM's NIC; study A)

Runs on the hypervisor: give the knob to it, e.g.
    [knobs]
    "pve_queues:101" = "{queues}"
    "pve_queues:102" = "{queues}"
    [knobs.hosts]
    "pve_queues:101" = ["pve"]
    "pve_queues:102" = ["pve"]

read:  `qm config VMID --current 1` (the value in effect, not a pending one): the netN
       line "virtio=MAC,bridge=vmbr0,...,queues=N"; no queues= means one queue pair.
       The line is read the way qemu-server's property schema reads it: the model is
       `model=virtio`, a model used as key (`virtio=MAC`) or a bare value, anywhere in
       the line (`bridge=vmbr0,virtio=MAC` and `model=virtio,macaddr=MAC` are valid).
       The journal keeps the whole line as read.
apply: `qm set VMID --netN <the same line with queues=N>`: an existing queues= changes in
       place, a new one goes where qemu-server's printer puts it (else last); every
       other byte of the line is kept,
       then `qm pending VMID`: if the change is still pending (hotplug without
       "network", or a running VM that could not hot-plug), `qm reboot VMID` (shuts the
       guest down and starts it again, applying pending changes) and wait until
       `qm status VMID` says running. The guest's own ssh connection then reconnects
       (the ssh target retries for reconnect_timeout seconds while it boots).
Range 1..64 (qemu-server's limit). Proxmox recommends queues = the VM's vCPUs; more
than that is refused by validate. The guest may still need `ethtool -L eth0 combined N`
(a channels knob on the guest) if its driver does not enable every queue by itself.
restore: `qm set VMID --netN <the line as read before>` (and the reboot if pending).
Note: qm set itself rewrites a netN line in qemu-server's canonical form (parse_net +
print_net: `virtio=MAC` first, the other keys sorted, booleans as 0/1). Lines Proxmox
wrote are in that form and come back byte for byte; a hand-written line in another
order comes back with the same meaning in canonical form (validate says so).
Not verified on a real Proxmox host: tested on VM configs from qemu-server's own test
suite (tests/fixtures/hypervisor/real/proxmox, SOURCES.md) through a recorded-command fake.
"""
from __future__ import annotations

import re
import shlex
import time
from typing import Any

from ...targets.base import Host
from ..base import VM_RESTART, Ctx, Disruption, Kind, KnobError, Loc, catalog_row, check_plain, run_ok, whole

_ARG = re.compile(r"^(?P<vmid>[1-9][0-9]{2,8})(?:/(?P<net>net[0-9]{1,2}))?$")
RESTART_TIMEOUT = 300.0


def parse_config(text: str) -> dict[str, str]:
    """`qm config` output -> {key: value}; stops at the first [snapshot] section."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        if line.startswith("["):
            break
        if not line.strip() or line.lstrip().startswith("#") or ":" not in line:
            continue
        k, v = line.split(":", 1)
        out[k.strip()] = v.strip()
    return out


# qemu-server's NIC models (PVE/QemuServer/Network.pm $nic_model_list): each is also a key
# whose value is the MAC address ("virtio=BC:24:11:..." means model=virtio,macaddr=...)
NIC_MODELS = ("e1000", "e1000-82540em", "e1000-82544gc", "e1000-82545em", "e1000e", "i82551", "i82557b",
              "i82559er", "ne2k_isa", "ne2k_pci", "pcnet", "rtl8139", "virtio", "vmxnet3")


def net_options(value: str) -> list[tuple[str, str | None]]:
    """'virtio=MAC,bridge=vmbr0,queues=4' -> [('virtio', MAC), ('bridge', 'vmbr0'), ('queues', '4')];
    a part without '=' (the default key's bare value) has None as its value."""
    opts: list[tuple[str, str | None]] = []
    for part in value.split(","):
        k, eq, v = part.partition("=")
        opts.append((k.strip(), v.strip() if eq else None))
    return opts


def nic_model(value: str) -> str:
    """The NIC model of a netN value, read the way qemu-server's property schema does: the
    `model` key, a model name used as key (its value is the MAC), or a bare value (model is
    the default key); in any position. '' when the line names none."""
    for k, v in net_options(value):
        if v is None and k:
            return k
        if k == "model" and v:
            return v
        if k in NIC_MODELS and v:
            return k
    return ""


def queues_of(value: str) -> int:
    for k, v in net_options(value):
        if k == "queues" and v and v.isdigit():
            return max(1, int(v))  # 0 and absent both mean a single queue pair
    return 1


def with_queues(value: str, n: int) -> str:
    """The same netN value with queues=n: an existing queues= changes in place; a new one
    goes where qemu-server's printer puts it (keys after the model in alphabetical order)
    when the line is in that order, else last. n == 1: the option removed (Proxmox's
    default). Every other byte of the line stays."""
    if n == 1:
        return without_queues(value)
    parts = value.split(",")
    for i, (k, _v) in enumerate(net_options(value)):
        if k == "queues":
            parts[i] = f"queues={n}"
            return ",".join(parts)
    opts = net_options(value)
    keys = [k for k, _v in opts][1:]
    at = len(parts)
    first, first_value = opts[0]
    if (first in NIC_MODELS or first_value is None) and keys == sorted(keys):  # qemu-server's own order
        at = next((i + 1 for i, k in enumerate(keys) if k > "queues"), len(parts))
    return ",".join(parts[:at] + [f"queues={n}"] + parts[at:])


def without_queues(value: str) -> str:
    """The netN value with its queues= option removed (the inverse of adding one)."""
    return ",".join(p for p, (k, _v) in zip(value.split(","), net_options(value)) if k != "queues")


def net_meaning(value: str) -> dict[str, str]:
    """What a netN value says, independent of how it is written: the model and MAC however
    given, booleans as 0/1, the other options by name (qm set rewrites a line in
    qemu-server's own order, `virtio=MAC,bridge=...` then sorted keys; same meaning)."""
    out: dict[str, str] = {}
    for k, v in net_options(value):
        if v is None:
            out["model"] = k
        elif k in NIC_MODELS:
            out["model"], out["macaddr"] = k, v.upper()
        elif k == "macaddr":
            out["macaddr"] = v.upper()
        elif k in ("firewall", "link_down"):
            out[k] = "1" if v.lower() in ("1", "on", "yes", "true") else "0"
        elif k == "queues":
            out[k] = str(max(1, int(v))) if v.isdigit() else v
        else:
            out[k] = v
    return out


def canonical_net(value: str) -> str:
    """The line as `qm set` stores it (qemu-server print_net): `MODEL=MAC` (or the bare
    model), then the other options sorted by name, booleans as 0/1."""
    model, mac, rest = "", "", {}
    for k, v in net_options(value):
        if v is None:
            model = k
        elif k in NIC_MODELS:
            model, mac = k, v
        elif k == "model":
            model = v
        elif k == "macaddr":
            mac = v
        elif k in ("firewall", "link_down") and v.lower() in ("1", "on", "yes", "true", "0", "off", "no", "false"):
            rest[k] = "1" if v.lower() in ("1", "on", "yes", "true") else "0"
        else:
            rest[k] = v
    head = [f"{model}={mac}" if mac else model] if model else []
    return ",".join(head + [f"{k}={v}" for k, v in sorted(rest.items())])


def queue_count(value: Any) -> int:
    """The queue count of a value: a number (the study's) or a read-back record."""
    return int(value["queues"]) if isinstance(value, dict) else int(value)


def pending_keys(text: str) -> set[str]:
    """Keys with a pending change in `qm pending` output ('new KEY: ...' / 'del KEY: ...')."""
    return {m.group(2) for m in re.finditer(r"^(new|del) ([A-Za-z0-9_]+):", text, re.M)}


def vm_status(text: str) -> str:
    m = re.search(r"status:\s*(\S+)", text)
    return m.group(1) if m else "unknown"


class ProxmoxQueues(Kind):
    name = "pve_queues"
    takes_arg, example_arg = "required", "101"
    host_wide = True  # lives on the hypervisor machine, not in a network namespace
    vm_field = "vmid"  # the study host that is VM 101 says vmid = 101

    def vm_name(self, loc: Loc) -> str:
        return self.target(loc)[0]

    def disruption(self, loc: Loc) -> Disruption:
        vmid = self.target(loc)[0]
        return Disruption(VM_RESTART, "when the change stays pending (the VM runs and its hotplug option lacks network)",
                          f"qm reboot {vmid}: the guest shuts down and starts again")

    def restore_commands(self, loc: Loc) -> list[str]:
        vmid, net = self.target(loc)
        return [f"qm set {vmid} --{net} '<the {net} line as qm config showed it before>'", f"qm reboot {vmid}  # when pending"]

    def target(self, loc: Loc) -> tuple[str, str]:
        m = _ARG.match(loc.arg or "")
        if not m:
            raise KnobError(f"{loc.key}: write 'pve_queues:VMID' or 'pve_queues:VMID/netN' (VMID >= 100), e.g. 'pve_queues:101/net0'")
        return m.group("vmid"), m.group("net") or "net0"

    def parse(self, loc: Loc, raw: Any) -> int:
        self.target(loc)
        return whole(loc, raw, 1, 64)

    def check_loc(self, loc: Loc) -> None:
        self.target(loc)  # VMID[/netN]: its own form (a '/' in it is not a path)

    def check_reading(self, loc: Loc, value: Any) -> None:
        """{"queues", "line": the netN value restore writes back with qm set}: one option
        list of the characters a net line has."""
        check_plain(loc, value)
        if not isinstance(value, dict):
            self.parse(loc, value)
            return
        if set(value) - {"queues", "line"} or not re.fullmatch(r"[A-Za-z0-9=,:._/-]{1,512}", str(value.get("line", ""))):
            raise KnobError(f"{loc.key}: the journaled reading is not a net line nettune reads")

    def _net(self, ex: Host, loc: Loc, current: bool) -> tuple[str, dict[str, str]]:
        vmid, net = self.target(loc)
        cfg = parse_config(run_ok(ex, ["qm", "config", vmid] + (["--current", "1"] if current else []), f"{loc.key}: VM {vmid}"))
        if net not in cfg:
            raise KnobError(f"{loc.key}: VM {vmid} has no {net} (qm config shows {', '.join(k for k in cfg if k.startswith('net')) or 'no NIC'})")
        return cfg[net], cfg

    def validate(self, ex: Host, loc: Loc, value: Any, ctx: Ctx) -> None:
        line, cfg = self._net(ex, loc, current=True)
        model = nic_model(line)
        if model != "virtio":
            raise KnobError(f"{loc.key}: {self.target(loc)[1]} is a {model or 'unknown'} NIC ({line}); multiqueue needs virtio")
        if not net_meaning(line).get("macaddr"):
            ctx.notes.append(f"{loc.key}: {self.target(loc)[1]} has no MAC address ({line}); qm set writes it in qemu-server's own form with a MAC it generates, so the guest's NIC gets a new MAC")
        elif canonical_net(line) != line:
            ctx.notes.append(f"{loc.key}: qm set writes {self.target(loc)[1]} in qemu-server's own form ({canonical_net(line)}); same meaning, but not the bytes of the current line ({line})")
        vcpus = int(cfg.get("vcpus") or 0) or int(cfg.get("cores") or 1) * int(cfg.get("sockets") or 1)
        if int(value) > vcpus:
            raise KnobError(f"{loc.key}: {value} queues for a VM with {vcpus} vCPUs; Proxmox recommends at most one queue per vCPU")

    def vm_macs(self, ex: Host, loc: Loc) -> list[str]:
        mac = net_meaning(self._net(ex, loc, current=True)[0]).get("macaddr")
        return [mac] if mac else []

    def read(self, ex: Host, loc: Loc) -> dict[str, Any]:
        """{"queues": in effect, "line": the netN value as written}: the journal keeps the
        line, so a restore writes back exactly that."""
        line = self._net(ex, loc, current=True)[0]
        return {"queues": queues_of(line), "line": line}

    def apply(self, ex: Host, loc: Loc, value: Any) -> None:
        line, _ = self._net(ex, loc, current=False)  # pending-aware: keep any other pending edit
        self._set(ex, loc, with_queues(line, queue_count(value)))

    def restore(self, ex: Host, loc: Loc, original: Any) -> None:
        if not isinstance(original, dict):  # a journal from before the line was kept
            self.apply(ex, loc, original)
            return
        self._set(ex, loc, str(original["line"]))

    def _set(self, ex: Host, loc: Loc, line: str) -> None:
        vmid, net = self.target(loc)
        run_ok(ex, ["qm", "set", vmid, f"--{net}", line], f"{loc.key}: qm set")
        if net in pending_keys(run_ok(ex, ["qm", "pending", vmid], f"{loc.key}: qm pending")):
            self.restart(ex, loc, vmid)

    def restart(self, ex: Host, loc: Loc, vmid: str, timeout: float = RESTART_TIMEOUT, poll: float = 2.0) -> None:
        """Reboot a running VM so pending changes apply; wait until it runs again."""
        if vm_status(run_ok(ex, ["qm", "status", vmid], f"{loc.key}: qm status")) != "running":
            return  # stopped: the change applies when it is started
        run_ok(ex, ["qm", "reboot", vmid, "--timeout", str(int(timeout))], f"{loc.key}: qm reboot", timeout=timeout + 60)
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if vm_status(run_ok(ex, ["qm", "status", vmid], f"{loc.key}: qm status")) == "running":
                return
            time.sleep(poll)
        raise KnobError(f"{loc.key}: VM {vmid} is not running {timeout:.0f}s after qm reboot; check it (qm status {vmid})")

    def same(self, a: Any, b: Any) -> bool:
        if isinstance(a, dict) and isinstance(b, dict):  # two readings: the rest of the line too
            return net_meaning(str(a["line"])) == net_meaning(str(b["line"]))
        return queue_count(a) == queue_count(b)

    def show(self, value: Any) -> str:
        return str(queue_count(value))

    def commands(self, loc: Loc, value: Any) -> list[str]:
        vmid, net = self.target(loc)
        if isinstance(value, dict):
            return [f"qm set {vmid} --{net} {shlex.quote(str(value['line']))}", f"qm reboot {vmid}"]
        return [f"qm set {vmid} --{net} {shlex.quote('<current ' + net + ' value>,queues=' + str(value))}  # keep the other options", f"qm reboot {vmid}"]

    def catalog(self) -> list[dict[str, str]]:
        return [catalog_row(
            "pve_queues", '"pve_queues:VMID[/netN]" = N', "hypervisor", "virtio-net queues of a Proxmox VM's NIC (qm set --netN ...,queues=N)",
            "1", "= vCPUs", "VM reboot (qm reboot) when not hot-plugged", "guest link drops; the VM restarts", "n/a",
        )]
