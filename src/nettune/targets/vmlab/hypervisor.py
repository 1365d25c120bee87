"""This machine as the VM lab's hypervisor: a private libvirtd, and an sshd next to it.

libvirtd keeps its state in fixed places (/run/libvirt, /var/lib/libvirt, /var/log/libvirt,
/var/cache/libvirt, /etc/libvirt). The lab's own libvirtd runs in a mount namespace of its
own (`unshare --mount`) where each of those is a bind mount of a directory of the lab
(STATE_DIR/vmlab/<study>/libvirt/...), so it never sees, nor disturbs, a libvirt this
machine may run, and `nettune lab down` removes all of it. Its qemu.conf: run QEMU as root
(security_driver = "none": no AppArmor/SELinux labels, no dynamic ownership), QEMU's
output to files (stdio_handler = "file": no virtlogd), no per-guest /dev namespace and no
cgroups (libvirt pins vCPUs with sched_setaffinity). libvirt needs a libvirt-qemu user and
group to exist even so (`nettune setup --vms` creates them).

An sshd started in the same namespace, listening on the lab bridge's address, is how the
study reaches the hypervisor: `virsh` there talks to this libvirtd (its libvirt.conf is the
lab's), exactly as a knob reaches a KVM host of a real fleet over SSH, and as
`nettune restore` reaches it again after a kill -9.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

from ...errors import NettuneError, ToolMissing
from ..procs import zombie, kill_pid, port_listening, start_time

# state dir name -> where libvirtd looks for it
BINDS = {"run": "/run/libvirt", "lib": "/var/lib/libvirt", "log": "/var/log/libvirt", "cache": "/var/cache/libvirt", "etc": "/etc/libvirt"}
QEMU_CONF = """# nettune VM lab: a private libvirtd (removed by nettune lab down)
user = "root"
group = "root"
dynamic_ownership = 0
remember_owner = 0
security_driver = "none"
stdio_handler = "file"
namespaces = [ ]
cgroup_controllers = [ ]
"""
LIBVIRTD_CONF = """# nettune VM lab: only root on this machine, through the socket in the lab's directory
unix_sock_group = "root"
unix_sock_ro_perms = "0700"
unix_sock_rw_perms = "0700"
auth_unix_ro = "none"
auth_unix_rw = "none"
log_outputs = "3:file:/var/log/libvirt/libvirtd.log"
"""
LIBVIRT_CONF = 'uri_default = "qemu:///system"\n'  # what `virsh` over the hypervisor's ssh connects to
START_TIMEOUT = 120.0  # libvirtd probes QEMU at its first start: slow on a loaded machine
LAUNCH = r"""set -e
d="$1"; sshd="$2"
mount --make-rprivate /
mount --bind "$d/run" /run/libvirt
mount --bind "$d/lib" /var/lib/libvirt
mount --bind "$d/log" /var/log/libvirt
mount --bind "$d/cache" /var/cache/libvirt
mount --bind "$d/etc" /etc/libvirt
"$sshd" -f "$d/sshd/sshd_config" -E "$d/sshd/sshd.log"
exec libvirtd --pid-file "$d/run/libvirtd.pid"
"""
MOUNT_POINTS_FILE = "created-mount-points.json"  # under the VM labs' directory: made by nettune


class Hypervisor:
    def __init__(self, lab_dir: Path):
        self.dir = lab_dir / "libvirt"

    @property
    def uri(self) -> str:
        return f"qemu:///system?socket={self.dir / 'run' / 'libvirt-sock'}"

    @property
    def sshd_dir(self) -> Path:
        return self.dir / "sshd"

    def virsh(self, *args: str, timeout: float = 60.0, check: bool = True) -> subprocess.CompletedProcess:
        try:
            r = subprocess.run(["virsh", "-q", "-c", self.uri, *args], capture_output=True, text=True, timeout=timeout)
        except FileNotFoundError:
            raise ToolMissing("virsh is not installed: apt-get install libvirt-clients (or: nettune setup --vms)") from None
        except subprocess.TimeoutExpired:  # a libvirtd still probing QEMU's capabilities (slow on a loaded machine)
            r = subprocess.CompletedProcess(["virsh", *args], 124, "", f"no answer from the lab's libvirtd within {timeout:.0f}s")
        if check and r.returncode != 0:
            raise NettuneError(f"virsh {' '.join(args)}: {(r.stderr or r.stdout).strip()}")
        return r

    def pid(self) -> int | None:
        """libvirtd's PID, if the one nettune started still runs."""
        return _alive(self.dir / "libvirtd.pid")

    def sshd_pid(self) -> int | None:
        return _alive(self.sshd_dir / "recorded.pid")

    def answering(self) -> bool:
        return self.pid() is not None and self.virsh("version", timeout=10, check=False).returncode == 0

    def start(self) -> int:
        """Start libvirtd and the hypervisor's sshd (whose sshd_config is written already)."""
        if shutil.which("libvirtd", path="/usr/sbin:/usr/bin:/sbin") is None:
            raise ToolMissing("libvirtd is not installed: apt-get install libvirt-daemon libvirt-daemon-driver-qemu (or: nettune setup --vms)")
        missing = [n for n in ("libvirt-qemu",) if not _user_exists(n)]
        if missing:
            raise ToolMissing("libvirt's QEMU driver needs a libvirt-qemu user and group even when QEMU runs as root: "
                              "nettune setup --vms creates them (useradd --system --user-group libvirt-qemu)")
        for sub in BINDS:
            (self.dir / sub).mkdir(parents=True, exist_ok=True)
        (self.dir / "etc/qemu.conf").write_text(QEMU_CONF)
        (self.dir / "etc/libvirtd.conf").write_text(LIBVIRTD_CONF)
        (self.dir / "etc/libvirt.conf").write_text(LIBVIRT_CONF)
        made_mount_points(list(BINDS.values()), self.dir.parent.parent)
        from ..ssh.sshlab import sshd_path  # noqa: PLC0415

        out = (self.dir / "launch.log").open("w")
        p = subprocess.Popen(["unshare", "--mount", "--", "sh", "-c", LAUNCH, "sh", str(self.dir), sshd_path()],
                             stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True)
        out.close()
        _write_pid(self.dir / "libvirtd.pid", p.pid)
        end = time.monotonic() + START_TIMEOUT
        while time.monotonic() < end:
            if p.poll() is not None:
                raise NettuneError(f"the VM lab's libvirtd did not start: {_tail(self.dir / 'launch.log')} {_tail(self.dir / 'log/libvirtd.log')}")
            if (self.dir / "run/libvirt-sock").exists() and self.virsh("version", timeout=10, check=False).returncode == 0:
                sshd = _alive(self.sshd_dir / "sshd.pid")
                if sshd is not None:
                    _write_pid(self.sshd_dir / "recorded.pid", sshd)
                    return p.pid
            time.sleep(0.2)
        raise NettuneError(f"the VM lab's libvirtd did not answer within {START_TIMEOUT:.0f}s: {_tail(self.dir / 'log/libvirtd.log')}")

    def domains(self) -> list[str]:
        if not self.answering():
            return []
        r = self.virsh("list", "--all", "--name", check=False)
        return [ln.strip() for ln in r.stdout.splitlines() if ln.strip()]

    def stop(self) -> list[str]:
        """Destroy and undefine every domain, stop libvirtd and the sshd, kill any QEMU of
        this lab libvirtd left behind (a killed libvirtd leaves its guests running).
        Returns the domains removed."""
        gone = []
        for dom in self.domains():
            self.virsh("destroy", dom, check=False)
            self.virsh("undefine", dom, check=False)
            gone.append(dom)
        # the sshd's own PidFile too: a start that failed after sshd began never recorded it
        for pid in {self.pid(), self.sshd_pid(), _alive(self.sshd_dir / "sshd.pid")}:
            if pid is not None:
                kill_pid(pid)
        for pid in qemu_pids(self.dir.parent):
            kill_pid(pid)
        return gone


def qemu_pids(lab_dir: Path) -> list[int]:
    """QEMU processes whose command line names a file of this lab (its disks, its logs)."""
    mark = str(lab_dir).encode() + b"/"
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                comm = Path(f"/proc/{d}/comm").read_text().strip()
                cmd = Path(f"/proc/{d}/cmdline").read_bytes()
            except OSError:
                continue
            if comm.startswith("qemu-system") and mark in cmd:
                out.append(int(d))
    return out


def made_mount_points(paths: list[str], labs_dir: Path) -> None:
    """Create the bind mounts' targets that do not exist on this machine, and remember
    which ones nettune made (remove_mount_points takes them away with the last VM lab)."""
    f = labs_dir / MOUNT_POINTS_FILE
    made = set(json.loads(f.read_text())) if f.exists() else set()
    for p in paths:
        if not os.path.isdir(p):
            os.makedirs(p)
            made.add(p)
    f.write_text(json.dumps(sorted(made)))


def remove_mount_points(labs_dir: Path) -> list[str]:
    """With no VM lab left: remove the empty mount points nettune made."""
    f = labs_dir / MOUNT_POINTS_FILE
    try:
        made = json.loads(f.read_text())
    except (OSError, ValueError):
        return []
    gone = []
    for p in made:
        try:
            os.rmdir(p)  # only if empty: something else may use it since
            gone.append(p)
        except OSError:
            pass
    f.unlink(missing_ok=True)
    return gone


def free_ssh_port(address: str, candidates: tuple[int, ...] = (22, 2222, 20022)) -> int:
    """The first port no socket listens on at `address` or on every address (wildcard)."""
    texts = []
    for name in ("tcp", "tcp6"):
        try:
            texts.append(Path(f"/proc/net/{name}").read_text())
        except OSError:
            pass
    for port in candidates:
        if not port_listening(texts, port, "tcp"):
            return port
    raise NettuneError(f"ports {', '.join(map(str, candidates))} are all in use on this machine; the VM lab's hypervisor sshd needs one")


def _user_exists(name: str) -> bool:
    import grp
    import pwd

    try:
        pwd.getpwnam(name)
        grp.getgrnam(name)
        return True
    except KeyError:
        return False


def _write_pid(path: Path, pid: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"{pid} {start_time(pid) or ''}\n")


def _alive(path: Path) -> int | None:
    """The PID in `path` if that process still runs (the same one: start time checked when recorded)."""
    try:
        parts = path.read_text().split()
        pid = int(parts[0])
    except (OSError, ValueError, IndexError):
        return None
    st = start_time(pid)
    if st is None or (len(parts) > 1 and parts[1] != st) or zombie(pid):
        return None
    return pid


def _tail(path: Path) -> str:
    try:
        lines = [ln for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    return lines[-1] if lines else ""
