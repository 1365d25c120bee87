"""A FreeBSD guest reached over SSH, as far as nettune's FreeBSD paths go: a Host that
answers uname(1), sysctl(8) and ifconfig(8) from tests/fixtures/freebsd and keeps state.

Its ifconfig is driven by one capture (the default, ifconfig_vtnet0.txt, was written from
the man page and ifconfig.c; fixtures/freebsd/real holds outputs posted in public bug
reports): `ifconfig IF mtu N` / `[-]lro` / `[-]tso` ... change later output (options=
bits included, bits the capture's ifconfig printed no name for kept), a flag is masked by
the interface's capabilities= as ifconfig's setifcap does (exit 0 either way), `-m` adds
the capabilities= line, and `stuck` names capabilities the driver accepts and keeps.
Every argv is recorded, so tests check exactly what would run on the guest.
"""
from __future__ import annotations

import re
from pathlib import Path

from nettune.targets.base import CommandResult, HostBase

FIX = Path(__file__).parent / "fixtures" / "freebsd"
HOSTILE = "1; touch /tmp/x"

# IFCAP_* bits (sys/net/if.h, FreeBSD 14) by the names ifconfig prints
IFCAP = {
    "RXCSUM": 0x1, "TXCSUM": 0x2, "NETCONS": 0x4, "VLAN_MTU": 0x8, "VLAN_HWTAGGING": 0x10, "JUMBO_MTU": 0x20,
    "POLLING": 0x40, "VLAN_HWCSUM": 0x80, "TSO4": 0x100, "TSO6": 0x200, "LRO": 0x400, "WOL_UCAST": 0x800,
    "WOL_MCAST": 0x1000, "WOL_MAGIC": 0x2000, "TOE4": 0x4000, "TOE6": 0x8000, "VLAN_HWFILTER": 0x10000,
    "NV": 0x20000, "VLAN_HWTSO": 0x40000, "LINKSTATE": 0x80000, "NETMAP": 0x100000, "RXCSUM_IPV6": 0x200000,
    "TXCSUM_IPV6": 0x400000, "HWSTATS": 0x800000, "TXRTLMT": 0x1000000, "HWRXTSTMP": 0x2000000,
    "MEXTPG": 0x4000000, "TXTLS4": 0x8000000, "TXTLS6": 0x10000000, "VXLAN_HWCSUM": 0x20000000,
    "VXLAN_HWTSO": 0x40000000, "TXTLS_RTLMT": 0x80000000,
}
# ifconfig(8) flag -> capabilities it toggles ("tso" is TSO4|TSO6; sbin/ifconfig/ifconfig.c)
IFCONFIG_CAPS = {
    "lro": ["LRO"], "tso": ["TSO4", "TSO6"], "tso4": ["TSO4"], "tso6": ["TSO6"], "rxcsum": ["RXCSUM"],
    "txcsum": ["TXCSUM"], "rxcsum6": ["RXCSUM_IPV6"], "txcsum6": ["TXCSUM_IPV6"], "vlanhwtag": ["VLAN_HWTAGGING"],
    "vlanhwcsum": ["VLAN_HWCSUM"], "vlanhwtso": ["VLAN_HWTSO"], "vlanhwfilter": ["VLAN_HWFILTER"],
}
_OPTS = re.compile(r"^(\s*)options=([0-9a-f]+)<([^>]*)>\n", re.M)
_CAPS = re.compile(r"^\s*capabilities=([0-9a-f]+)<([^>]*)>\n", re.M)
READ_ONLY = ("hw.", "kern.cp_time", "kern.cp_times")


class FakeFreeBSD(HostBase):
    """A FreeBSD 14.2 guest reached over SSH, as far as nettune's FreeBSD paths go."""

    name = "fbsd1"
    address = "192.0.2.10"
    os = "freebsd"

    def __init__(self, capture: Path = FIX / "ifconfig_vtnet0.txt") -> None:
        self.calls: list[list[str]] = []
        self.sysctl: dict[str, str] = {}
        for ln in (FIX / "sysctl_values.txt").read_text().splitlines():
            if ln.strip() and not ln.startswith("#"):
                k, v = ln.split(" = ", 1)
                self.sysctl[k] = v
        self.cp_times = [(FIX / f"cp_time_{i}.txt").read_text() for i in (1, 2)]
        self.capture = capture.read_text()
        self._ifconfig = self.capture
        self.iface = self._ifconfig.split(":", 1)[0]
        self.interface = self.iface
        self.mtu = int(re.search(r" mtu (\d+)", self._ifconfig).group(1))
        m = _OPTS.search(self._ifconfig)
        self.caps = m.group(3).split(",") if m and m.group(3) else []
        # bits the capture's ifconfig printed no name for (older ifconfig, newer kernel)
        self.unnamed = (int(m.group(2), 16) - sum(IFCAP[c] for c in self.caps)) if m else 0
        c = _CAPS.search(self._ifconfig)
        # a capture without capabilities= (plain ifconfig, or written from the man page):
        # the interface is taken to support what it has enabled
        self.supported = set(c.group(2).split(",")) if c else set(self.caps)
        self.stuck: set[str] = set()  # capabilities the driver accepts and keeps as they are

    def reach(self) -> dict:
        return {"address": self.address}

    # -- Host protocol ---------------------------------------------------------------
    def spawn(self, argv: list[str]):  # not needed by these paths
        raise NotImplementedError

    def read_text(self, path: str) -> str:
        raise FileNotFoundError(f"{path}: no such file on FreeBSD (no /proc, no /sys)")

    def write_text(self, path: str, text: str) -> None:
        raise OSError(f"{path}: not writable")

    def which(self, tool: str) -> str | None:
        return {"sysctl": "/sbin/sysctl", "ifconfig": "/sbin/ifconfig", "iperf3": "/usr/local/bin/iperf3"}.get(tool)

    def listening(self, port: int, proto: str = "tcp") -> bool:
        return False

    def run(self, argv: list[str], timeout: float = 30.0) -> CommandResult:
        argv = list(argv)
        assert all(isinstance(a, str) for a in argv), argv
        self.calls.append(argv)

        def res(out: str = "", err: str = "", rc: int = 0) -> CommandResult:
            return CommandResult(argv, rc, out, err)

        if argv == ["uname", "-srm"]:
            return res((FIX / "uname_srm.txt").read_text())
        if argv == ["uname", "-s"]:
            return res("FreeBSD\n")
        if argv == ["iperf3", "--version"]:
            return res((FIX / "iperf3_version.txt").read_text())
        if argv == ["iperf", "-v"]:
            return res("", "sh: iperf: not found\n", 127)
        if argv[0] == "sysctl":
            return self._sysctl(argv, res)
        if argv[0] == "ifconfig":
            return self._ifconfig_cmd(argv, res)
        return res("", f"sh: {argv[0]}: not found\n", 127)

    # -- sysctl(8) -------------------------------------------------------------------
    def _sysctl(self, argv, res):
        if argv[1:2] == ["-n"]:
            names = argv[2:]
            if names == ["hw.model", "hw.ncpu", "hw.physmem"]:
                return res((FIX / "sysctl_hw_model_ncpu_physmem.txt").read_text())
            if names[:1] == ["kern.cp_time"]:
                text = self.cp_times[0] if len(self.cp_times) == 1 else self.cp_times.pop(0)
                lines = text.splitlines()
                return res("\n".join(lines[: len(names)]) + "\n")
            out, err = [], []
            for n in names:
                if n in self.sysctl:
                    out.append(self.sysctl[n])
                else:
                    err.append(f"sysctl: unknown oid '{n}'")
            return res("".join(x + "\n" for x in out), "".join(x + "\n" for x in err), 1 if err else 0)
        if len(argv) == 2 and "=" in argv[1]:
            name, value = argv[1].split("=", 1)
            if name not in self.sysctl:
                return res("", f"sysctl: unknown oid '{name}'\n", 1)
            if name.startswith(READ_ONLY):
                return res("", f"sysctl: oid '{name}' is read only\n", 1)
            old = self.sysctl[name]
            if old.isdigit() and not value.isdigit():
                return res("", f"sysctl: invalid integer '{value}'\n", 1)
            loaded = self.sysctl["net.inet.tcp.cc.available"]  # a FreeBSD 13+ table, or an older comma list
            names = [ln.split()[0] for ln in loaded.splitlines()[2:] if ln.strip()] if "CCmod" in loaded else loaded.split(", ")
            if name == "net.inet.tcp.cc.algorithm" and value not in names:
                return res(f"{name}: {old}\n", f"sysctl: {name}={value}: No such file or directory\n", 1)
            self.sysctl[name] = value
            return res(f"{name}: {old} -> {value}\n")
        return res("", "usage: sysctl [-bdehiNnoqTtWx] [ -B <bufsize> ] [-f filename] name[=value] ...\n", 1)

    # -- ifconfig(8) -----------------------------------------------------------------
    def _render(self, with_caps: bool) -> str:
        """The capture as ifconfig would print it now: options= from the current bits (the
        line is omitted when none is set), capabilities= only with -m."""
        text = re.sub(r" mtu \d+", f" mtu {self.mtu}", self._ifconfig, count=1)
        bits = self.unnamed + sum(IFCAP[c] for c in self.caps)

        def opts(m: re.Match) -> str:
            return f"{m.group(1)}options={bits:x}<{','.join(self.caps)}>\n" if bits else ""

        if with_caps and not _CAPS.search(text):  # the capture has none: print the supported set
            sup = sorted(self.supported, key=lambda c: IFCAP[c])
            line = f"\tcapabilities={sum(IFCAP[c] for c in sup):x}<{','.join(sup)}>\n"
            first = text.index("\n") + 1
            m = _OPTS.search(text)
            at = m.end() if m else first
            text = text[:at] + line + text[at:]
        text = _OPTS.sub(opts, text, count=1)
        return text if with_caps else _CAPS.sub("", text, count=1)

    def _ifconfig_cmd(self, argv, res):
        args = argv[1:]
        with_caps = args[:1] == ["-m"]
        args = args[1:] if with_caps else args
        if not args or args[0] != self.iface:
            return res("", f"ifconfig: interface {args[0] if args else ''} does not exist\n", 1)
        rest = args[1:]
        if not rest:
            return res(self._render(with_caps))
        if len(rest) == 2 and rest[0] == "mtu":
            if not rest[1].isdigit() or not 72 <= int(rest[1]) <= 65536:
                return res("", "ifconfig: ioctl SIOCSIFMTU (set mtu): Invalid argument\n", 1)
            self.mtu = int(rest[1])
            return res()
        if len(rest) == 1 and rest[0].lstrip("-") in IFCONFIG_CAPS:
            caps = IFCONFIG_CAPS[rest[0].lstrip("-")]
            caps = [c for c in caps if c not in self.stuck]
            if rest[0].startswith("-"):
                self.caps = [c for c in self.caps if c not in caps]
            else:  # like ifconfig's setifcap: masked by what the interface supports, exit 0 either way
                self.caps = sorted(set(self.caps) | (set(caps) & self.supported), key=lambda c: IFCAP[c])
            return res()
        return res("", f"ifconfig: {rest[0]}: bad value\n", 1)


def no_shell(calls: list[list[str]]) -> None:
    for argv in calls:
        assert argv[0] not in ("sh", "bash", "csh", "tcsh") and "-c" not in argv, argv
