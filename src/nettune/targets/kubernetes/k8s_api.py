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

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ...errors import NettuneError

MANAGED_BY = "app.kubernetes.io/managed-by"
KINDS = ("Pod", "Service", "Namespace")  # every kind nettune creates
MAX_KUBECONFIG = 4 << 20  # a kubeconfig is a few KiB; a bigger file is the wrong file
# where a context and a kubeconfig file were named, for the fix a message gives
STUDY_FLAGS = ("[target] context", "[target] kubeconfig")
CLI_FLAGS = ("--context", "--kubeconfig")
REQUEST_TIMEOUT = (10, 60)  # seconds to connect, to read an answer


class KubeError(NettuneError, ConnectionError):
    """The API server refused or could not be reached (one line, says what to do)."""


@dataclass
class PodState:
    phase: str  # Pending, Running, Succeeded, Failed, Unknown
    ready: bool
    ip: str | None
    node: str | None
    reason: str = ""  # why it is not ready: ImagePullBackOff, Unschedulable, SysctlForbidden, Evicted...
    message: str = ""


@dataclass
class NodeInfo:
    """What a plan needs of a node: its kernel and kubelet (which sysctls the kubelet
    admits), its taints (which pods it takes) and whether it is Ready."""

    name: str
    kernel: str = ""
    kubelet: str = ""
    taints: list[tuple[str, str, str]] = field(default_factory=list)  # (key, value, effect)
    ready: bool = True
    not_ready: str = ""  # why not, from its Ready condition ("KubeletNotReady: container runtime network not ready ...")


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


def kubeconfig_paths(kubeconfig: str | None) -> tuple[list[str], str]:
    """The files the client reads (the first that exists wins each name, as kubectl merges
    them), and where they were named: a kubeconfig given, else $KUBECONFIG, else ~/.kube/config."""
    if kubeconfig:
        return [str(Path(kubeconfig).expanduser())], "given"
    env = os.environ.get("KUBECONFIG", "")
    if env.strip():
        return [str(Path(p).expanduser()) for p in env.split(os.pathsep) if p.strip()], "KUBECONFIG"
    return [str(Path("~/.kube/config").expanduser())], "default"


def check_kubeconfig(paths: list[str], named: str, flag: str) -> None:
    """Each file that exists is a YAML mapping, and one exists: else one line naming the
    file and the fix (the client would print a parser traceback, a TypeError, or "No
    configuration found." without the path)."""
    import yaml  # noqa: PLC0415

    where = {"given": f"fix {flag}", "KUBECONFIG": "fix KUBECONFIG",
             "default": f"create it (kubectl config) or set {flag} or KUBECONFIG"}[named]
    found = [p for p in paths if os.path.isfile(p)]
    if not found:
        what = ", ".join(paths)
        raise KubeError(f"kubeconfig {what}: no such file{' (from KUBECONFIG)' if named == 'KUBECONFIG' else ''}; {where}")
    for path in found:
        try:
            with open(path, "rb") as f:
                data = f.read(MAX_KUBECONFIG + 1)
        except OSError as e:
            raise KubeError(f"kubeconfig {path}: cannot read: {e.strerror}; {where}") from None
        if len(data) > MAX_KUBECONFIG:
            raise KubeError(f"kubeconfig {path}: larger than {MAX_KUBECONFIG >> 20} MiB, not a kubeconfig; {where}")
        try:
            doc = yaml.safe_load(data)
        except yaml.MarkedYAMLError as e:
            at = f" at line {e.problem_mark.line + 1}" if e.problem_mark is not None else ""
            raise KubeError(f"kubeconfig {path}: not valid YAML{at} ({e.problem or e.context}); fix the file, or {where}") from None
        except yaml.YAMLError as e:
            raise KubeError(f"kubeconfig {path}: not valid YAML ({type(e).__name__}); fix the file, or {where}") from None
        except (UnicodeDecodeError, ValueError, RecursionError):
            raise KubeError(f"kubeconfig {path}: not YAML text; fix the file, or {where}") from None
        if doc is None:
            raise KubeError(f"kubeconfig {path}: empty file; {where}")
        if not isinstance(doc, dict):
            raise KubeError(f"kubeconfig {path}: a YAML {type(doc).__name__}, not a kubeconfig (a mapping with clusters, "
                            f"contexts, users); {where}")
        for item in ("clusters", "contexts", "users"):
            if not isinstance(doc.get(item) or [], list) or not all(isinstance(x, dict) for x in doc.get(item) or []):
                raise KubeError(f"kubeconfig {path}: {item} is not a list of entries; fix the file, or {where}")


class KubeApi:
    """The kubernetes client for one kubeconfig context. `flags`: where the context and
    the kubeconfig were named (the study's [target], or a command's options), for the fix."""

    def __init__(self, context: str | None, kubeconfig: str | None, flags: tuple[str, str] = STUDY_FLAGS):
        from kubernetes import config  # noqa: PLC0415 - only when a kubernetes target runs

        paths, named = kubeconfig_paths(kubeconfig)
        check_kubeconfig(paths, named, flags[1])
        files = os.pathsep.join(paths)
        try:
            contexts, current = config.list_kube_config_contexts(config_file=files)
            names = [str(c.get("name")) for c in contexts or [] if isinstance(c, dict)]
            if context is None and not current:
                raise KubeError(f"kubeconfig {files} has no current-context; name one ({', '.join(names) or 'none defined'}) "
                                f"with {flags[0]}")
            self.context = context or str(current["name"])
            if self.context not in names:
                where = f"{flags[0]} names" if context else "its current-context is"
                raise KubeError(f"kubeconfig {files} has no context {self.context!r} ({where} it; contexts: "
                                f"{', '.join(names) or 'none'}); fix {flags[0]}")
            self._config = config.kube_config.Configuration()
            config.load_kube_config(config_file=files, context=self.context, client_configuration=self._config)
        except KubeError:
            raise
        except (config.ConfigException, OSError, ValueError, TypeError, KeyError, AttributeError) as e:
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise KubeError(f"kubeconfig {files}: cannot use context {context or '(current)'}: {first}; fix the file, or {flags[1]}") from None
        self.kubeconfig = kubeconfig

    def _core(self) -> Any:
        from kubernetes import client  # noqa: PLC0415

        return client.CoreV1Api(client.ApiClient(self._config))

    def _call(self, what: str, fn: Any, *args: Any, rest: bool = True, **kw: Any) -> Any:
        from kubernetes.client.exceptions import ApiException  # noqa: PLC0415

        if rest:  # an API server that does not answer must not hold a run (an exec stream has its own reads)
            kw.setdefault("_request_timeout", REQUEST_TIMEOUT)
        try:
            return fn(*args, **kw)
        except ApiException as e:
            if e.status == 404:
                return None
            if not e.status:  # the exec websocket wraps a refused connection as status 0
                raise KubeError(f"{what}: cannot reach the API server of context {self.context!r}: {_short(e.reason)}") from None
            raise KubeError(f"{what}: {e.status} {e.reason}: {_message(e.body)}") from None
        except Exception as e:  # urllib3 connection errors
            raise KubeError(f"{what}: cannot reach the API server of context {self.context!r}: {_short(e)}") from None

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

    def find(self, selector: str, namespace: str | None = None) -> list[tuple[str, str | None, str]]:
        """(kind, namespace, name) of every object of KINDS matching the label selector: in
        every namespace (list rights cluster-wide), or in `namespace` only (a Role there)."""
        core = self._core()
        lists = (("Pod", core.list_pod_for_all_namespaces), ("Service", core.list_service_for_all_namespaces), ("Namespace", core.list_namespace))
        if namespace:
            lists = (("Pod", lambda **kw: core.list_namespaced_pod(namespace, **kw)), ("Service", lambda **kw: core.list_namespaced_service(namespace, **kw)))
        out: list[tuple[str, str | None, str]] = []
        for kind, fn in lists:
            items = self._call(f"list {kind}s", fn, label_selector=selector)
            for it in (items.items if items is not None else []):
                out.append((kind, it.metadata.namespace, it.metadata.name))
        return out

    def nodes(self) -> list[str]:
        return [n.name for n in self.node_info()]

    def node_info(self) -> list[NodeInfo]:
        found = self._call("list nodes", self._core().list_node)
        return [node_info(n.to_dict()) for n in (found.items if found is not None else [])]

    def server_version(self) -> str:
        """The API server's version, e.g. "v1.29.3" (GET /version)."""
        from kubernetes import client  # noqa: PLC0415

        v = self._call("read the server version", client.VersionApi(client.ApiClient(self._config)).get_code)
        return str(v.git_version) if v is not None else ""

    def namespace_labels(self, name: str) -> dict[str, str] | None:
        """A namespace's labels (its PodSecurity level among them); None when it does not exist."""
        ns = self._call(f"read namespace {name}", self._core().read_namespace, name)
        return None if ns is None else dict(ns.metadata.labels or {})

    def pod_events(self, namespace: str, name: str) -> list[str]:
        """The pod's Warning events, newest last ("FailedCreatePodSandBox: ..."): why a pod
        stays ContainerCreating, which its status does not say."""
        found = self._call(f"list events of pod {name}", self._core().list_namespaced_event, namespace,
                           field_selector=f"involvedObject.name={name},type=Warning")
        items = sorted(found.items if found is not None else [], key=lambda e: str(e.last_timestamp or e.event_time or ""))
        return [f"{e.reason}: {e.message}" for e in items]

    def exec(self, namespace: str, pod: str, argv: list[str], stdin: bool = False) -> ExecStream:
        from kubernetes.stream import stream  # noqa: PLC0415

        core = self._core()  # an ApiClient of its own: stream() patches it while it runs
        ws = self._call(f"exec in pod {pod}", stream, core.connect_get_namespaced_pod_exec, pod, namespace, rest=False, command=argv,
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
    for cs in [] if status.get("reason") else status.get("container_statuses") or []:  # the pod's own reason (Evicted, SysctlForbidden) says more
        st = cs.get("state") or {}
        for key in ("waiting", "terminated"):
            if st.get(key) and st[key].get("reason"):
                reason, message = st[key]["reason"], st[key].get("message") or ""
    return PodState(status.get("phase") or "Unknown", ready, status.get("pod_ip"), spec.get("node_name"), reason, message)


def node_info(n: dict[str, Any]) -> NodeInfo:
    """A node's kernel, kubelet, taints and readiness (from a V1Node as a dict)."""
    status, spec = n.get("status") or {}, n.get("spec") or {}
    info = status.get("node_info") or {}
    cond = next((c for c in status.get("conditions") or [] if c.get("type") == "Ready"), {})
    ready = cond.get("status") == "True"
    why = "" if ready else ": ".join(str(x) for x in (cond.get("reason") or "no Ready condition", cond.get("message")) if x)
    taints = [(str(t.get("key") or ""), str(t.get("value") or ""), str(t.get("effect") or "")) for t in spec.get("taints") or []]
    return NodeInfo(str((n.get("metadata") or {}).get("name")), str(info.get("kernel_version") or ""),
                    str(info.get("kubelet_version") or ""), taints, ready, why)


def _short(e: Any) -> str:
    """A connection error as its cause: "[Errno 111] Connection refused", "timed out"...
    (urllib3's text wraps it in the pool, the URL and the retries)."""
    text = str(e)
    m = re.search(r"\[Errno -?\d+\] [^'\")]+|(?:Read|Connect) timed out|Name or service not known|certificate verify failed[^'\")]*", text)
    return m.group(0) if m else text[:200]


def _message(body: Any) -> str:
    import json  # noqa: PLC0415

    try:
        return str(json.loads(body).get("message"))
    except (TypeError, ValueError, AttributeError):
        return str(body)[:200]
