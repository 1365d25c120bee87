"""A host of the kubernetes target: one container of one pod, reached through exec.

Every command is an exec stream (k8s_api.KubeApi.exec): run() reads it to the end,
spawn() reads it in a thread of its own. A spawned tool runs under the ssh target's sh
wrapper (sshproc.WRAPPER): its first stdout line is the tool's PID inside the pod (so
stop() kills that PID by number with another exec, and /proc/PID/stat samples it), and
after it exits the wrapper prints `times`, the tool's exact CPU. Secrets (IPERF3_PASSWORD)
and file contents go over the stream's stdin, never into an exec command line (which the
API server may log). A test pod that is not ready (image pull error, unschedulable...)
makes every call raise KubeError (a ConnectionError): run.driver records the test as
failed with that reason.

A node host (`node:NAME`) is the privileged hostPID/hostNetwork pod on that node: its
/proc/stat, /proc/sys and /sys/class/net are the node's, so node CPU and node knobs go
through it, and reach() records the cluster, context, node and pod, so `nettune restore`
finds the node again (k8s_reach.py).
"""
from __future__ import annotations

import shlex
import threading
import time
from typing import Any

from ..base import CommandResult
from .k8s_api import ExecStream, KubeError
from ..shell_host import ShellHostBase
from ..ssh.sshproc import ENV_PREAMBLE, WRAPPER, SshProc

READ_SLICE = 0.5  # seconds one read of an exec stream waits for data
START_TIMEOUT = 30.0  # seconds a spawned tool's wrapper may take to say its PID


class KubeProc(SshProc):
    """A tool in a pod: its exec stream read by a thread until it closes."""

    def pump(self, stream: ExecStream) -> None:
        err: BaseException | None = None
        try:
            while True:
                out, er = stream.read(READ_SLICE)
                self._out.append(out)
                self._err.append(er)
                if not stream.is_open():
                    out, er = stream.read(0)  # what arrived with the close
                    self._out.append(out)
                    self._err.append(er)
                    break
        except Exception as e:  # the websocket broke: connection lost
            err = e
        rc = None if err is not None else stream.returncode()
        if rc is None:
            why = f"{err}" if err is not None else "the exec stream closed without an exit status"
            self.lost = f"exec stream to pod {self.host.pod} lost: {why}"
            self._code = -1
        else:
            self._code = rc
            self._parse_rusage()
        stream.close()
        self.host._live.pop(self.pid, None)
        self._done.set()


class KubeHost(ShellHostBase):
    """One pod's container. `ready` is None when usable, else why not (the point fails)."""

    def __init__(self, name: str, api: Any, namespace: str, pod: str, node_name: str | None = None):
        self.name, self.api, self.namespace, self.pod = name, api, namespace, pod
        self.address = ""  # the pod IP (or the Service's ClusterIP with via = "service"), once ready
        self.pod_ip: str | None = None
        self.node: str | None = node_name  # the node it runs on (known once scheduled)
        self.interface: str | None = None
        self.not_ready: str | None = "not created yet"
        self.privileged = name.startswith("node:")  # the node access pod: its /proc/sys is the node's
        self.os = "linux"
        self.context = str(api.context)
        self.kubeconfig: str | None = api.kubeconfig
        self.restore_pod: dict[str, Any] = {}  # a node pod: image, tolerations, pull secrets a restore's pod needs
        self._live: dict[int, KubeProc] = {}

    # -- exec --------------------------------------------------------------------------
    def _stream(self, argv: list[str], stdin: str | None = None) -> ExecStream:
        if self.not_ready:
            raise KubeError(f"pod {self.pod} ({self.name}) is not ready: {self.not_ready}")
        try:
            stream = self.api.exec(self.namespace, self.pod, [str(a) for a in argv], stdin=stdin is not None)
        except KubeError as e:
            raise KubeError(f"{e}{self._gone()}") from None
        if stdin is not None:
            stream.write_stdin(stdin)
        return stream

    def _gone(self) -> str:
        """Why an exec failed when the pod itself stopped (evicted, deleted): said with the
        error, and kept, so the rest of the point fails at once with it."""
        try:
            st = self.api.pod(self.namespace, self.pod)
        except KubeError:
            return ""
        if st is not None and st.ready:
            return ""
        self.not_ready = "the pod is gone" if st is None else f"{st.reason or st.phase}: {st.message}".rstrip(": ")
        return f" (pod {self.pod}: {self.not_ready})"

    def run(self, argv: list[str], timeout: float = 30.0, input: str | None = None) -> CommandResult:
        """Run to the end; never raises on a non-zero exit (KubeError when the pod cannot be reached)."""
        done = threading.Event()
        proc = KubeProc(self, list(argv))
        stream = self._stream(argv, input)
        t = threading.Thread(target=lambda: (proc.pump(stream), done.set()), daemon=True, name="nettune-k8s-run")
        t.start()
        if not done.wait(timeout):
            stream.close()
            out, err = proc.output()
            return CommandResult(list(argv), 124, out, err + f"\ntimed out after {timeout:.0f}s")
        out, err = proc.output()
        if proc.lost:
            raise KubeError(proc.lost)
        return CommandResult(list(argv), proc._code if proc._code is not None else -1, out, err)

    def spawn(self, argv: list[str], env: dict[str, str] | None = None) -> KubeProc:
        proc = KubeProc(self, [str(a) for a in argv])
        if env:
            words = ["sh", "-c", ENV_PREAMBLE + WRAPPER, "sh", *env, "--", *proc.argv]
            stream = self._stream(words, "".join(v + "\n" for v in env.values()))
        else:
            stream = self._stream(["sh", "-c", WRAPPER, "sh", *proc.argv])
        first, deadline = "", time.monotonic() + START_TIMEOUT
        while not first.endswith("\n") and stream.is_open():
            if time.monotonic() > deadline:
                stream.close()
                raise KubeError(f"pod {self.pod} ({self.name}): {proc.argv[0]} did not start within {START_TIMEOUT:.0f}s")
            out, err = stream.read(READ_SLICE)
            first += out
            proc._err.append(err)
        line, _, rest = first.partition("\n")
        if line.strip().isdigit():
            proc.pid = int(line)
            self._live[proc.pid] = proc
            proc._out.append(rest)
        else:
            proc._out.append(first)  # the wrapper failed: keep what it said
        threading.Thread(target=proc.pump, args=(stream,), daemon=True, name="nettune-k8s-proc").start()
        return proc

    # -- files -------------------------------------------------------------------------
    def write_text(self, path: str, text: str) -> None:
        if path.startswith("/proc/sys/") and not self.privileged:
            raise OSError(f"{self.name}:{path}: a test pod's /proc/sys is read-only; set node sysctls on node:NAME hosts "
                          "([target] node_access, [knobs.hosts]) and the pod's own in [target] pod_sysctls")
        data = text.encode()
        # exactly len(data) bytes from stdin: head needs no end-of-file (an exec stdin has none)
        r = self.run(["sh", "-c", 'head -c "$1" > "$2"', "sh", str(len(data)), path], timeout=15, input=text)
        if r.returncode != 0:
            raise OSError(f"{self.name}:{path}: {r.said() or 'cannot write'}")

    def free_port(self, first: int = 5201, last: int = 5208) -> int:
        """A port nothing listens on in the pod (a Service forwards 5201-5208)."""
        return self._free_in(first, last)

    def reach(self) -> dict[str, Any]:
        """Where this pod's node is, for the knob journal: cluster context, node, pod."""
        return {"kubernetes": True, "context": self.context, "kubeconfig": self.kubeconfig, "node": self.node,
                "namespace": self.namespace, "pod": self.pod, "address": self.node or self.pod, "port": 0, **self.restore_pod}

    def exec_line(self, argv: list[str]) -> str:
        """The same command as a kubectl line (for the user)."""
        return shlex.join(["kubectl", "--context", self.context, "-n", self.namespace, "exec", self.pod, "--", *argv])

    def close(self) -> None:
        for proc in list(self._live.values()):
            proc.stop()
        self._live.clear()
