"""Stand-ins for a Proxmox host (`qm`) and a libvirt host (`virsh`) as knob executors.

Each is driven by a configuration file: a Proxmox VM config (VMID.conf: `key: value`
lines, comments, [snapshot] sections) or a libvirt domain XML. The default ones are
tests/fixtures/hypervisor (written from qm(1), qm.conf(5) and libvirt's domain XML
documentation); the real ones come from qemu-server's and libvirt's own test suites
(tests/fixtures/hypervisor/real, SOURCES.md). The fakes keep state and record every
command, so apply -> read -> restore round trips can be compared with the original file
byte for byte (`conf_text()`, `inactive`), and restart sequences can be checked.
`on_restart` lets a test make a "reboot" do something real (re-create a lab host).

What they model of the real tools:
- `qm set VMID --netN VALUE` stores VALUE (with canonical=True: rewritten the way
  qemu-server's parse_net + print_net do, MODEL=MAC first then the other keys sorted);
  a running VM without network hotplug keeps it pending until `qm reboot`.
- `virsh define FILE` stores the file as the persistent definition; `virsh start` makes
  it the live one. `virsh vcpupin DOM V CPUS --config` writes <vcpupin vcpu='V'
  cpuset='CPUS'/> into <cputune> (creating it after <vcpu> as libvirt's formatter does,
  replacing the cpuset of an existing pin); `--live` changes the running affinity only.
  Without a flag `virsh vcpupin DOM` prints the running affinity (a vCPU without a pin:
  every host CPU). The fake's XML edits are plain string edits of its own, not nettune's.
"""
from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Callable

from nettune.targets.base import CommandResult

FIX = Path(__file__).parent / "fixtures" / "hypervisor"
REAL = FIX / "real"
NIC_MODELS = ("e1000", "e1000-82540em", "e1000-82544gc", "e1000-82545em", "e1000e", "i82551", "i82557b",
              "i82559er", "ne2k_isa", "ne2k_pci", "pcnet", "rtl8139", "virtio", "vmxnet3")


class _Fake:
    os = "linux"
    name = "hv"
    address = "198.18.0.1"

    def __init__(self) -> None:
        self.calls: list[list[str]] = []
        self.files: dict[str, str] = {}

    def ok(self, argv: list[str], out: str = "", err: str = "", rc: int = 0) -> CommandResult:
        return CommandResult(argv, rc, out, err)

    def write_text(self, path: str, text: str) -> None:
        self.files[path] = text

    def read_text(self, path: str) -> str:
        return self.files[path]


def print_net(value: str) -> str:
    """What qemu-server stores for a netN value given to `qm set` (parse_net, print_net)."""
    model = mac = ""
    rest: dict[str, str] = {}
    for part in value.split(","):
        k, eq, v = part.partition("=")
        if not eq:
            model = k
        elif k in NIC_MODELS:
            model, mac = k, v
        elif k == "model":
            model = v
        elif k == "macaddr":
            mac = v
        elif k in ("firewall", "link_down"):
            rest[k] = "1" if v in ("1", "on", "yes", "true") else "0"
        else:
            rest[k] = v
    return ",".join([f"{model}={mac}" if mac else model] + [f"{k}={v}" for k, v in sorted(rest.items())])


class FakePve(_Fake):
    """A VM from a config file (default: qm_config.txt as VM 101). `hotplug_network`
    False: net changes to a running VM stay pending until `qm reboot`."""

    def __init__(self, on_restart: Callable[[], None] | None = None, hotplug_network: bool = False, boot_polls: int = 1,
                 conf: Path = FIX / "qm_config.txt", vmid: str = "101", canonical: bool = False):
        super().__init__()
        text = conf.read_text()
        cut = re.search(r"^\[", text, re.M)  # snapshot sections and the rest stay as they are
        self.head, self.tail = (text[:cut.start()], text[cut.start():]) if cut else (text, "")
        self.current = self.head.split("\n")
        self.pending: dict[str, str] = {}
        self.status = "running"
        self.vmid, self.canonical = vmid, canonical
        self.hotplug, self.on_restart, self.boot_polls = hotplug_network, on_restart, boot_polls
        self._booting = 0

    def conf_text(self) -> str:
        """The config file as it is now (pending changes in a [PENDING] section, as qemu-server writes them)."""
        pend = "".join(f"{k}: {v}\n" for k, v in self.pending.items())
        return "\n".join(self.current) + ("\n[PENDING]\n" + pend if pend else "") + self.tail

    def _keyed(self) -> list[tuple[str, str]]:
        out = []
        for ln in self.current:
            if ln.strip() and not ln.startswith("#") and ":" in ln:
                k, v = ln.split(":", 1)
                out.append((k, v.strip()))
        return out

    def _cfg(self, pending: bool) -> str:
        return "".join(f"{k}: {self.pending[k] if pending and k in self.pending else v}\n" for k, v in self._keyed())

    def _store(self, key: str, value: str) -> None:
        self.current = [f"{key}: {value}" if ln.startswith(key + ":") else ln for ln in self.current]

    def run(self, argv: list[str], timeout: float = 30.0) -> CommandResult:
        self.calls.append(list(argv))
        if argv[:2] in (["qm", "config"], ["qm", "set"], ["qm", "pending"], ["qm", "status"], ["qm", "reboot"]) and argv[2] != self.vmid:
            return self.ok(argv, err=f"Configuration file 'nodes/pve/qemu-server/{argv[2]}.conf' does not exist", rc=2)
        if argv[:2] == ["qm", "config"]:
            return self.ok(argv, self._cfg(pending="--current" not in argv))
        if argv[:2] == ["qm", "set"]:
            key, value = argv[3].lstrip("-"), argv[4]
            if self.canonical and re.fullmatch(r"net\d+", key):
                value = print_net(value)
            if self.hotplug and self.status == "running" or self.status != "running":
                self._store(key, value)
                self.pending.pop(key, None)
            elif dict(self._keyed()).get(key) == value:
                self.pending.pop(key, None)  # back to the current value: nothing pending
            else:
                self.pending[key] = value
            return self.ok(argv, f"update VM {argv[2]}: -{key} {value}\n")
        if argv[:2] == ["qm", "pending"]:
            out = []
            for k, v in self._keyed():
                if k == "digest":
                    continue
                out.append(f"cur {k}: {v}")
                if k in self.pending:
                    out.append(f"new {k}: {self.pending[k]}")
            return self.ok(argv, "\n".join(out) + "\n")
        if argv[:2] == ["qm", "status"]:
            if self._booting:
                self._booting -= 1
                return self.ok(argv, "status: stopped\n")
            return self.ok(argv, f"status: {self.status}\n")
        if argv[:2] == ["qm", "reboot"]:
            for k, v in self.pending.items():
                self._store(k, v)
            self.pending.clear()
            self._booting = self.boot_polls
            if self.on_restart:
                self.on_restart()
            return self.ok(argv)
        return self.ok(argv, err=f"{argv[0]}: command not found", rc=127)

    def queues_line(self, net: str = "net0") -> str:
        return next(ln for ln in self.current if ln.startswith(net + ":"))


def _vcpus(xml: str) -> int:
    m = re.search(r"<vcpu\b[^>]*>\s*(\d+)\s*</vcpu>", xml)
    return int(m.group(1)) if m else 1


def _config_pins(xml: str) -> dict[int, str]:
    return {int(m.group(1)): m.group(2) for m in re.finditer(r"<vcpupin vcpu=['\"](\d+)['\"] cpuset=['\"]([^'\"]+)['\"]", xml)}


class FakeVirsh(_Fake):
    """A domain from a domain XML (default: fedora-vm from virsh_dumpxml.xml, its running
    pinning from virsh_vcpupin.txt); host CPUs `host_cpus`."""

    def __init__(self, on_restart: Callable[[], None] | None = None, old_vcpupin_format: bool = False, shutdown_polls: int = 1,
                 never_shuts_down: bool = False, xml: Path = FIX / "virsh_dumpxml.xml", pins: Path | None = None,
                 host_cpus: str = "0-31", state: str = "running"):
        super().__init__()
        self.inactive = self.live = xml.read_text()
        m = re.search(r"<name>([^<]+)</name>", self.inactive)
        self.domain = m.group(1) if m else "fedora-vm"
        self.host_cpus = host_cpus
        if pins is None and xml == FIX / "virsh_dumpxml.xml":
            pins = FIX / ("virsh_vcpupin_old.txt" if old_vcpupin_format else "virsh_vcpupin.txt")
        if pins is not None:
            self.pins = {int(m.group(1)): m.group(2) for m in re.finditer(r"^\s*(\d+):?\s+(\S+)\s*$", pins.read_text(), re.M)}
        else:
            self.pins = self._boot_pins()
        self.old_fmt = old_vcpupin_format
        self.state, self.on_restart = state, on_restart
        self.shutdown_polls, self.never_shuts_down = shutdown_polls, never_shuts_down
        self._stopping = 0

    def _boot_pins(self) -> dict[int, str]:
        """The affinity each vCPU gets when the domain starts: its pin, else every host CPU."""
        cfg = _config_pins(self.inactive)
        return {v: cfg.get(v, self.host_cpus) for v in range(_vcpus(self.inactive))}

    def _pin_config(self, vcpu: int, cpus: str) -> None:
        """libvirt's `vcpupin --config`: the persistent definition gets <vcpupin vcpu= cpuset=/>."""
        xml = self.inactive
        pin = f"<vcpupin vcpu='{vcpu}' cpuset='{cpus}'/>"
        old = re.search(rf"<vcpupin vcpu=(['\"]){vcpu}\1 cpuset=(['\"])[^'\"]*\2/>", xml)
        if old:
            self.inactive = xml[:old.start()] + pin + xml[old.end():]
            return
        tune = re.search(r"\n( *)<cputune>\n", xml)
        if tune is None:
            vc = re.search(r"\n( *)<vcpu\b[^>]*>[^<]*</vcpu>", xml)
            ind = vc.group(1)
            block = f"\n{ind}<cputune>\n{ind}  {pin}\n{ind}</cputune>"
            after = re.search(r"<iothreads>[^<]*</iothreads>", xml)
            at = (after or vc).end()
            self.inactive = xml[:at] + block + xml[at:]
            return
        ind = tune.group(1) + "  "
        pins = [m for m in re.finditer(r"\n *<vcpupin vcpu=['\"](\d+)['\"][^>]*/>", xml) if int(m.group(1)) < vcpu]
        scalars = list(re.finditer(r"\n *<(?:shares|period|quota|global_period|global_quota|emulator_period|emulator_quota|iothread_period|iothread_quota)>[^<]*</\w+>", xml))
        anchor = pins[-1].end() if pins else (scalars[-1].end() if scalars else tune.end() - 1)
        self.inactive = xml[:anchor] + f"\n{ind}{pin}" + xml[anchor:]

    def run(self, argv: list[str], timeout: float = 30.0) -> CommandResult:
        self.calls.append(list(argv))
        if argv[0] == "mktemp":
            return self.ok(argv, "/tmp/nettune-libvirt.Ab12Cd\n")
        if argv[0] == "rm":
            self.files.pop(argv[-1], None)
            return self.ok(argv)
        if argv[0] != "virsh":
            return self.ok(argv, err=f"{argv[0]}: command not found", rc=127)
        cmd, rest = argv[1], argv[2:]
        dom = self.domain
        if rest and rest[-1] != dom and cmd in ("dumpxml", "domstate", "shutdown", "start") or (cmd == "vcpupin" and rest[0] != dom):
            return self.ok(argv, err="error: failed to get domain '" + rest[-1] + "'", rc=1)
        if cmd == "dumpxml":
            return self.ok(argv, self.inactive if "--inactive" in rest else self.live)
        if cmd == "define":
            self.inactive = self.files[rest[0]]
            if self.state != "running":
                self.live = self.inactive
            return self.ok(argv, f"Domain '{dom}' defined from " + rest[0] + "\n")
        if cmd == "domstate":
            if self._stopping:
                self._stopping -= 1
                if not self._stopping and not self.never_shuts_down:
                    self.state = "shut off"
            return self.ok(argv, self.state + "\n\n")
        if cmd == "shutdown":
            self._stopping = self.shutdown_polls + 1 if not self.never_shuts_down else 10**9
            return self.ok(argv, f"Domain '{dom}' is being shutdown\n")
        if cmd == "start":
            self.state, self.live = "running", self.inactive
            self.pins = self._boot_pins()
            if self.on_restart:
                self.on_restart()
            return self.ok(argv, f"Domain '{dom}' started\n")
        if cmd == "vcpupin":
            if len(rest) == 1:
                pins = self.pins if self.state == "running" else self._boot_pins()
                if self.old_fmt:
                    body = "".join(f"  {v:2d}: {c}\n" for v, c in sorted(pins.items()))
                    return self.ok(argv, "VCPU: CPU Affinity\n----------------------------------\n" + body)
                body = "".join(f" {v:<6} {c}\n" for v, c in sorted(pins.items()))
                return self.ok(argv, " VCPU   CPU Affinity\n----------------------\n" + body + "\n")
            if "--live" in rest and self.state != "running":
                return self.ok(argv, err="error: Requested operation is not valid: domain is not running", rc=1)
            vcpu, cpus = int(rest[1]), rest[2]
            if "--config" in rest:
                self._pin_config(vcpu, cpus)
            if "--live" in rest or "--config" not in rest:
                self.pins[vcpu] = cpus
            return self.ok(argv)
        return self.ok(argv, err="error: unknown command: " + shlex.quote(cmd), rc=1)
