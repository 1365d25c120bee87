"""The one place that calls the official `kubernetes` client: a thin layer the target
uses, and that tests replace with a recording fake (tests/k8s_fake.py).

Everything above this layer works with plain manifests (dicts, as `kubectl apply -f`
takes them) and plain answers (PodState, ExecStream); nothing above imports
`kubernetes`. Each method is one API call (or a list over the kinds nettune creates).

Exec: stream(connect_get_namespaced_pod_exec, _preload_content=False) gives a WSClient
whose stdout/stderr are read while it is open and whose returncode comes from the
status channel once it closed. stream() swaps the ApiClient's request hook while it
runs, so every exec gets an ApiClient of its own (exec streams run in parallel threads).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from ...errors import NettuneError

MANAGED_BY = "app.kubernetes.io/managed-by"
KINDS = ("Pod", "Service", "Namespace")  # every kind nettune creates


class KubeError(NettuneError, ConnectionError):
    """The API server refused or could not be reached (one line, says what to do)."""


@dataclass
class PodState:
    phase: str  # Pending, Running, Succeeded, Failed, Unknown
    ready: bool
    ip: str | None
    node: str | None
    reason: str = ""  # why it is not ready: ImagePullBackOff, Unschedulable, SysctlForbidden...
    message: str = ""


class ExecStream(Protocol):
    """A process started with exec in a container."""

    def read(self, timeout: float) -> tuple[str, str]:
        """(stdout, stderr) that arrived within `timeout` seconds ('' when none)."""
        ...

    def is_open(self) -> bool: ...

    def returncode(self) -> int | None:
        """Exit code once closed (None: unknown, e.g. the connection was lost)."""
        ...

    def write_stdin(self, data: str) -> None: ...

    def close(self) -> None: ...


class KubeApi:
    """The kubernetes client for one kubeconfig context."""

    def __init__(self, context: str | None, kubeconfig: str | None):
        from kubernetes import config  # noqa: PLC0415 - only when a kubernetes target runs

        try:
            contexts, current = config.list_kube_config_contexts(config_file=kubeconfig)
            self.context = context or str(current["name"])
            if not any(c["name"] == self.context for c in contexts):
                raise KubeError(f"kubeconfig has no context {self.context!r} ({', '.join(c['name'] for c in contexts)}); fix [target] context")
            self._config = config.kube_config.Configuration()
            config.load_kube_config(config_file=kubeconfig, context=self.context, client_configuration=self._config)
        except (config.ConfigException, OSError) as e:
            raise KubeError(f"cannot read the kubeconfig: {e}; set [target] kubeconfig or KUBECONFIG") from None
        self.kubeconfig = kubeconfig

    def _core(self) -> Any:
        from kubernetes import client  # noqa: PLC0415

        return client.CoreV1Api(client.ApiClient(self._config))

    def _call(self, what: str, fn: Any, *args: Any, **kw: Any) -> Any:
        from kubernetes.client.exceptions import ApiException  # noqa: PLC0415

        try:
            return fn(*args, **kw)
        except ApiException as e:
            if e.status == 404:
                return None
            if not e.status:  # the exec websocket wraps a refused connection as status 0
                raise KubeError(f"{what}: cannot reach the API server of context {self.context!r}: {e.reason}") from None
            raise KubeError(f"{what}: {e.status} {e.reason}: {_message(e.body)}") from None
        except Exception as e:  # urllib3 connection errors
            raise KubeError(f"{what}: cannot reach the API server of context {self.context!r}: {e}") from None

    def create(self, manifest: dict[str, Any]) -> None:
        core, kind = self._core(), manifest["kind"]
        ns = manifest["metadata"].get("namespace")
        what = f"create {kind} {manifest['metadata']['name']}"
        if kind == "Namespace":
            self._call(what, core.create_namespace, manifest)
        elif kind == "Pod":
            self._call(what, core.create_namespaced_pod, ns, manifest)
        elif kind == "Service":
            self._call(what, core.create_namespaced_service, ns, manifest)
        else:
            raise ValueError(kind)

    def delete(self, kind: str, namespace: str | None, name: str) -> None:
        core, what = self._core(), f"delete {kind} {name}"
        if kind == "Namespace":
            self._call(what, core.delete_namespace, name)
        elif kind == "Pod":
            self._call(what, core.delete_namespaced_pod, name, namespace, grace_period_seconds=0)
        elif kind == "Service":
            self._call(what, core.delete_namespaced_service, name, namespace)

    def pod(self, namespace: str, name: str) -> PodState | None:
        p = self._call(f"read pod {name}", self._core().read_namespaced_pod, name, namespace)
        return None if p is None else pod_state(p.to_dict())

    def service_ip(self, namespace: str, name: str) -> str | None:
        s = self._call(f"read service {name}", self._core().read_namespaced_service, name, namespace)
        return None if s is None else s.spec.cluster_ip

    def find(self, selector: str) -> list[tuple[str, str | None, str]]:
        """(kind, namespace, name) of every object of KINDS matching the label selector."""
        core = self._core()
        out: list[tuple[str, str | None, str]] = []
        for kind, fn in (("Pod", core.list_pod_for_all_namespaces), ("Service", core.list_service_for_all_namespaces),
                         ("Namespace", core.list_namespace)):
            items = self._call(f"list {kind}s", fn, label_selector=selector)
            for it in (items.items if items is not None else []):
                out.append((kind, it.metadata.namespace, it.metadata.name))
        return out

    def nodes(self) -> list[str]:
        found = self._call("list nodes", self._core().list_node)
        return [n.metadata.name for n in (found.items if found is not None else [])]

    def exec(self, namespace: str, pod: str, argv: list[str], stdin: bool = False) -> ExecStream:
        from kubernetes.stream import stream  # noqa: PLC0415

        core = self._core()  # an ApiClient of its own: stream() patches it while it runs
        ws = self._call(f"exec in pod {pod}", stream, core.connect_get_namespaced_pod_exec, pod, namespace, command=argv,
                        stdout=True, stderr=True, stdin=stdin, tty=False, _preload_content=False)
        if ws is None:
            raise KubeError(f"exec in pod {pod}: the pod no longer exists")
        return _WsStream(ws)


class _WsStream:
    def __init__(self, ws: Any):
        self.ws = ws

    def read(self, timeout: float) -> tuple[str, str]:
        if self.ws.is_open():
            self.ws.update(timeout=timeout)
        out = self.ws.read_stdout(timeout=0) if self.ws.peek_stdout(timeout=0) else ""
        err = self.ws.read_stderr(timeout=0) if self.ws.peek_stderr(timeout=0) else ""
        return out or "", err or ""

    def is_open(self) -> bool:
        return bool(self.ws.is_open())

    def returncode(self) -> int | None:
        try:
            return self.ws.returncode
        except Exception:  # a status of an unknown shape
            return None

    def write_stdin(self, data: str) -> None:
        self.ws.write_stdin(data)

    def close(self) -> None:
        self.ws.close()


def pod_state(p: dict[str, Any]) -> PodState:
    """A pod's readiness and, when it is not ready, why (from a V1Pod as a dict)."""
    status, spec = p.get("status") or {}, p.get("spec") or {}
    conds = {c["type"]: c for c in status.get("conditions") or []}
    ready = (conds.get("Ready") or {}).get("status") == "True"
    reason, message = status.get("reason") or "", status.get("message") or ""
    sched = conds.get("PodScheduled") or {}
    if sched.get("status") == "False":
        reason, message = sched.get("reason") or "Unschedulable", sched.get("message") or ""
    for cs in status.get("container_statuses") or []:
        st = cs.get("state") or {}
        for key in ("waiting", "terminated"):
            if st.get(key) and st[key].get("reason"):
                reason, message = st[key]["reason"], st[key].get("message") or ""
    return PodState(status.get("phase") or "Unknown", ready, status.get("pod_ip"), spec.get("node_name"), reason, message)


def _message(body: Any) -> str:
    import json  # noqa: PLC0415

    try:
        return str(json.loads(body).get("message"))
    except (TypeError, ValueError, AttributeError):
        return str(body)[:200]
