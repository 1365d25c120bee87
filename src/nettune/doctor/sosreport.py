"""A sosreport as a doctor source: the files sos copied and the commands it ran.

sos (github.com/sosreport/sos, sos/report/plugins/) copies files under their own paths
(proc/interrupts, proc/net/ -> a symlink to self/net, sys/class/net/*/statistics/,
sys/class/net/*/device/numa_node, sys/class/dmi/id/*, sys/devices/system/cpu/...) and
writes each command's output to sos_commands/PLUGIN/NAME, NAME being the command line with
every run of characters other than letters, digits, `-`, `.` and `/` made `_`, `/` made
`.`, and leading /usr/bin/ or /sbin/ dropped (_mangle_command in
sos/report/plugins/__init__.py): `ethtool -S eth0` is sos_commands/networking/ethtool_-S_eth0,
`sysctl -a` sos_commands/kernel/sysctl_-a. sos records no exit code: a command whose output
is there is taken as having run. Nothing sos did not collect is guessed: it is "not in this
sosreport", and a check that needs it says "cannot tell". A directory laid out the same
way (a post's outputs put under the names sos would give them) is read the same way.
"""
from __future__ import annotations

import re

from .archive import Tree
from .sources import Files, Got, Ran, SourceBase

HOW = "send `nettune doctor --capture FILE` from the host (it holds every input doctor reads), or a sosreport whose plugins collect it"
ONE = "a sosreport is one snapshot: no second read to tell a counter's trend"
PLUGIN_HOW = {"ethtool": "sos's networking plugin runs it for each Ethernet device", "ip": "sos's networking plugin runs it",
              "tc": "sos's networking plugin runs it", "dmesg": "sos's kernel plugin runs it", "sysctl": "sos's kernel plugin runs it",
              "tuned-adm": "sos's tuned plugin runs it when tuned is installed", "dmidecode": "sos's hardware plugin runs it",
              "lspci": "sos's pci plugin runs it"}


def mangle(argv: list[str]) -> str:
    """The file name sos gives a command's output (sos's own rule, see above)."""
    name = re.sub(r"^/(usr/|)(bin|sbin)/", "", " ".join(argv))
    name = re.sub(r"[^\w\-./]+", "_", name)
    return re.sub(r"/", ".", name).strip(" ._-")[:255]


class SosSource(SourceBase):
    kind = "sosreport"

    def __init__(self, tree: Tree):
        self.tree = tree
        self.label = f"sosreport {tree.label}"
        self.commands: dict[str, str] = {}  # mangled name -> path in the tree
        for plugin in tree.listdir("sos_commands"):
            for name in tree.listdir(f"sos_commands/{plugin}"):
                self.commands.setdefault(name, f"sos_commands/{plugin}/{name}")

    def hostname(self) -> str | None:
        for p in ("hostname", "sos_commands/host/hostname", "etc/hostname"):
            t = self.tree.text(p)
            if t and t.strip():
                return t.strip().splitlines()[0][:64]
        return None

    def read(self, path: str, again: bool = False) -> Got:
        rel = path.lstrip("/")
        if again:
            return Got(None, f"sosreport: {rel}", why=ONE, how=HOW)
        t = self.tree.text(rel)
        if t is not None:
            return Got(t.strip(), f"sosreport: {rel}")
        return Got(None, f"sosreport: {rel}", why="not in this sosreport", how=HOW)

    def run(self, argv: list[str], timeout: float = 20.0, again: bool = False) -> Ran:
        if again:
            return Ran(tuple(argv), None, "", "", f"sosreport: {mangle(argv)}", why=ONE, how=HOW)
        if argv[:2] == ["readlink", "-f"] and len(argv) == 3:
            real = self.tree.resolve(argv[2].lstrip("/"))
            if real is not None and (self.tree.is_dir(real) or self.tree.text(real) is not None):
                return Ran(tuple(argv), 0, "/" + real + "\n", "", f"sosreport: {argv[2].lstrip('/')} (link)")
            return Ran(tuple(argv), None, "", "", f"sosreport: {argv[2].lstrip('/')}", why="not in this sosreport", how=HOW)
        name = mangle(argv)
        path = self.commands.get(name)
        if path is not None:
            return Ran(tuple(argv), 0, self.tree.text(path) or "", "", f"sosreport: {path}")
        plugin = PLUGIN_HOW.get(argv[0], "")
        return Ran(tuple(argv), None, "", "", f"sosreport: sos_commands/*/{name}", why="not in this sosreport" + (f" ({plugin})" if plugin else ""), how=HOW)

    def files(self, pattern: str, again: bool = False) -> Files:
        if again:
            return Files({}, f"sosreport: {pattern.lstrip('/')}", known=False, why=ONE, how=HOW)
        names = self.tree.glob(pattern.lstrip("/"))
        if not names:
            return Files({}, f"sosreport: {pattern.lstrip('/')}", known=False, why="no such file in this sosreport", how=HOW)
        return Files({"/" + n: (self.tree.text(n) or "").strip() for n in names}, f"sosreport: {pattern.lstrip('/')}")

    def which(self, tool: str) -> Got:
        return Got(None, f"sosreport: {tool} on PATH", why="a sosreport does not say which tools are installed", how=HOW)
