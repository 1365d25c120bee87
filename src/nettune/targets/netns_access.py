"""Inside a network namespace without a process: a short-lived thread enters it (setns applies
to the calling thread only) and reads or writes the files that show that namespace to the
task that opens them: /proc/sys/net/* and /proc/thread-self/net/*. About 0.2 ms where
`ip netns exec cat` costs a fork and two execs (5-10 ms); a study reads such files for
every server start, audit and knob. /sys/class/net is not among them: sysfs shows the
namespace of whoever mounted it, so those paths still go through `ip netns exec`.

Is a port bound? sock_diag (pyroute2's DiagSocket) asks for listening sockets only:
reading /proc/net/tcp walks the machine's whole connection hash (~5 ms a file here).

netlink sockets per namespace: NetlinkPool keeps one per namespace for a lab's life
(pyroute2's NetNS forks a helper to open each one, ~6 ms).
"""
from __future__ import annotations

import socket
import threading
from contextlib import contextmanager
from typing import Any, Callable, Iterator, TypeVar

from pyroute2 import DiagSocket, IPRoute, NetNS, netns
from pyroute2.netlink.diag import SS_LISTEN

from .procs import port_listening

T = TypeVar("T")

# Paths whose content the opening task's network namespace decides (see the module doc).
PER_TASK = ("/proc/sys/net/", "/proc/net/")


def call_in_netns(name: str | None, fn: Callable[[], T]) -> T:
    """fn() run on a fresh thread inside the named namespace (None: this process's own);
    its result or its exception. A fresh thread also has no asyncio event loop, which
    pyroute2's sockets need (a Jupyter cell's thread runs one)."""
    box: dict[str, Any] = {}

    def body() -> None:
        try:
            if name is not None:
                netns.setns(name, flags=0)  # flags=0: never create a namespace that is gone
            box["value"] = fn()
        except BaseException as e:  # handed to the caller's thread
            box["error"] = e

    t = threading.Thread(target=body, name=f"netns-{name or 'own'}", daemon=True)
    t.start()
    t.join()  # the thread ends here, and with it its hold on the namespace
    if "error" in box:
        raise box["error"]
    return box["value"]


def _task_path(path: str) -> str:
    # /proc/net is a link to /proc/self/net: the process's namespace, not the thread's
    return "/proc/thread-self/net/" + path[len("/proc/net/"):] if path.startswith("/proc/net/") else path


def read_in_netns(name: str, path: str) -> str:
    def read() -> str:
        try:
            with open(_task_path(path)) as f:
                return f.read()
        except OSError as e:  # name the path the caller asked for
            raise OSError(e.errno, f"{e.strerror} ({path} in {name})") from None

    return call_in_netns(name, read)


def write_in_netns(name: str, path: str, text: str) -> None:
    def write() -> None:
        try:
            with open(_task_path(path), "w") as f:
                f.write(text)
        except OSError as e:
            raise OSError(e.errno, f"{e.strerror} ({path} in {name})") from None

    call_in_netns(name, write)


def port_bound(port: int, proto: str, ns: str | None = None) -> bool | None:
    """Is a TCP port listening / a UDP port bound in this namespace (or the named one)?
    None when the kernel cannot answer (no sock_diag support): the caller reads /proc."""

    def ask() -> bool | None:
        states, ipproto = (1 << SS_LISTEN, socket.IPPROTO_TCP) if proto == "tcp" else (0xFFFFFFFF, socket.IPPROTO_UDP)
        try:
            with DiagSocket() as ds:  # made on this thread: it belongs to this thread's namespace
                ds.bind()
                return any(
                    s.get("idiag_sport") == port
                    for family in (socket.AF_INET, socket.AF_INET6)
                    for s in ds.get_sock_stats(family=family, states=states, protocol=ipproto)
                )
        except Exception:  # pyroute2 raises its own NetlinkError, or OSError
            return None

    try:
        return call_in_netns(ns or None, ask)  # this namespace too: a thread without an event loop
    except OSError:  # the namespace is gone: the caller's own way says so
        return None


def listening_in(port: int, proto: str, ns: str | None, read_table: Callable[[str], str]) -> bool:
    """port_bound; where sock_diag cannot answer, the /proc/net tables ("tcp", "tcp6", ...)
    read_table gives (a table it cannot read counts as empty)."""
    bound = port_bound(port, proto, ns)
    if bound is not None:
        return bound
    texts = []
    for name in (proto, proto + "6"):
        try:
            texts.append(read_table(name))
        except OSError:
            pass
    return port_listening(texts, port, proto)


class NetlinkPool:
    """One netlink socket per namespace (None: this process's own), opened on first use
    and kept until close(). Sockets are per thread: a pyroute2 socket is not shared
    between threads. A block that fails drops its socket (a reply may still be pending)."""

    def __init__(self) -> None:
        self._socks: dict[tuple[int, str | None], Any] = {}
        self._lock = threading.Lock()

    @contextmanager
    def socket(self, ns: str | None) -> Iterator[Any]:
        key = (threading.get_ident(), ns)
        with self._lock:
            sock = self._socks.get(key)
        if sock is None:
            sock = IPRoute() if ns is None else NetNS(ns)
            with self._lock:
                self._socks[key] = sock
        try:
            yield sock
        except BaseException:
            self.drop(ns)
            raise

    def drop(self, ns: str | None) -> None:
        """Close the sockets into one namespace (before it is removed: an open socket
        keeps a namespace, and the veth ends inside it, alive)."""
        with self._lock:
            gone = [k for k in self._socks if k[1] == ns]
            socks = [self._socks.pop(k) for k in gone]
        for s in socks:
            s.close()

    def close(self) -> None:
        with self._lock:
            socks, self._socks = list(self._socks.values()), {}
        for s in socks:
            s.close()
