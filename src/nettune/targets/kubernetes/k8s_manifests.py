"""The objects the kubernetes target creates, as manifests (plain dicts that
`kubectl apply -f` takes once dumped as YAML), built from the study alone.

Every object carries app.kubernetes.io/managed-by=nettune, the study (nettune/study)
and the run (nettune/run: one token per nettune process), so the end of a run, its
error paths and `nettune k8s clean` find exactly what it made. Placement is explicit:
nodeSelector kubernetes.io/hostname for a named node, a required podAffinity
(same-node) or podAntiAffinity (cross-node) on the server pod's labels otherwise, and a
nodeAffinity over `nodes` when the study lists them; every pod asks for a Linux node.

Test pods pass PodSecurity restricted (non-root UID, no privilege escalation, every
capability dropped, seccomp RuntimeDefault), mount no service account token, tolerate
only the study's `tolerations`, and ask for Guaranteed QoS (requests = limits, whole
CPUs) unless `cpu = 0`. Node pods are privileged by necessity (node sysctls, node CPU:
whoever can exec into one is root on that node) but mount no token either and tolerate
only the study's tolerations.
"""
from __future__ import annotations

import re
import secrets
from dataclasses import dataclass, replace
from typing import Any

from ...studyfile.k8s_sysctl_classes import classify
from ...studyfile.kubernetes_target import NODE_PREFIX, NodePlacement
from .k8s_api import MANAGED_BY

HOSTNAME = "kubernetes.io/hostname"
OS_LABEL = "kubernetes.io/os"
PSA = "pod-security.kubernetes.io/enforce"
LEVELS = ("restricted", "baseline", "privileged")  # PodSecurity levels, strictest first
NODE_POD_RESOURCES = {"cpu": "200m", "memory": "128Mi"}  # cat, echo and sh: requests = limits
CONTAINER = "tool"
# the pod's main process: sleeps, and exits at once on SIGTERM (pods go away fast)
IDLE = ["sh", "-c", "trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $!; done"]
SERVICE_PORTS = range(5201, 5209)  # the ports pick_port tries first; fan-out uses consecutive ones


def dns_label(text: str, limit: int = 63) -> str:
    s = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")[:limit].strip("-")
    return s or "x"


@dataclass(frozen=True)
class RunNames:
    """The names and labels of one run of a study on a cluster."""

    study: str
    run: str  # a token per nettune process
    namespace: str
    own_namespace: bool  # nettune creates (and deletes) the namespace
    suffix: str = ""  # a set of test pods named apart from the others (the dry run's YAML stream)

    @classmethod
    def make(cls, study_name: str, namespace: str | None, run: str | None = None) -> "RunNames":
        run = run or secrets.token_hex(3)
        if namespace:
            return cls(dns_label(study_name), run, namespace, False)
        return cls(dns_label(study_name), run, f"nettune-{dns_label(study_name, 45)}-{run}", True)

    def labels(self, role: str | None = None) -> dict[str, str]:
        out = {MANAGED_BY: "nettune", "nettune/study": self.study, "nettune/run": self.run}
        if role:
            out["nettune/host"] = dns_label(role)
        return out

    @property
    def selector(self) -> str:
        return f"{MANAGED_BY}=nettune,nettune/run={self.run}"

    def pod_name(self, host: str) -> str:
        if host.startswith(NODE_PREFIX):
            return dns_label(f"nettune-{host.removeprefix(NODE_PREFIX)}-node")
        return dns_label(f"nettune-{host}{self.suffix}")

    def service_name(self, host: str) -> str:
        return dns_label(f"nettune-{host}{self.suffix}-svc")

    def test_set(self, n: int) -> "RunNames":
        """Names of the n-th set of test pods (n >= 2) beside the first, in one YAML stream:
        its own names, and its own run label so its affinity terms find its own server."""
        return replace(self, run=f"{self.run}-{n}", suffix=f"-{n}") if n > 1 else self


def pod_security_level(specs: list[Any], version: str | None) -> str:
    """The PodSecurity level the namespace must allow for every point's pods: privileged
    for node pods, hostNetwork or an unsafe pod sysctl (at server `version`; unknown:
    safe only if safe in every version), baseline for test pods running as root, else
    restricted (what the hardened test pods pass)."""
    level = "restricted"
    for spec in specs:
        unsafe = [n for n in spec.pod_sysctls if classify(n, version).safe is not True]
        if spec.node_access or spec.network == "host" or unsafe:
            return "privileged"
        if spec.run_as_user == 0:
            level = "baseline"
    return level


def namespace_manifest(names: RunNames, level: str) -> dict[str, Any]:
    labels = names.labels() | {PSA: level}  # what the pods need, no more: PodSecurity admission checks them against it
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": names.namespace, "labels": labels}}


def _meta(names: RunNames, name: str, role: str) -> dict[str, Any]:
    return {"name": name, "namespace": names.namespace, "labels": names.labels(role)}


def _container(image: str) -> dict[str, Any]:
    return {"name": CONTAINER, "image": image, "command": list(IDLE)}


def _pod_spec(spec: Any, containers: list[dict[str, Any]]) -> dict[str, Any]:
    """What every pod of the run shares: no service account token, the study's tolerations
    and pull secrets, a Linux node."""
    pod: dict[str, Any] = {"restartPolicy": "Never", "terminationGracePeriodSeconds": 1, "automountServiceAccountToken": False,
                           "enableServiceLinks": False, "nodeSelector": {OS_LABEL: "linux"}, "containers": containers}
    if spec.tolerations:
        pod["tolerations"] = [t.manifest() for t in spec.tolerations]
    if spec.image_pull_secrets:
        pod["imagePullSecrets"] = [{"name": n} for n in spec.image_pull_secrets]
    return pod


def _test_container(spec: Any) -> dict[str, Any]:
    c = _container(spec.image)
    c["securityContext"] = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
    if spec.cpu:  # requests = limits, whole CPUs: Guaranteed QoS (never throttled below its share, evicted last)
        amount = {"cpu": str(spec.cpu), "memory": spec.memory}
        c["resources"] = {"requests": dict(amount), "limits": dict(amount)}
    return c


def _term(names: RunNames, host: str) -> dict[str, Any]:
    return {"labelSelector": {"matchLabels": {"nettune/run": names.run, "nettune/host": dns_label(host)}}, "topologyKey": HOSTNAME}


def test_pod(names: RunNames, spec: Any, host: str) -> dict[str, Any]:
    """The pod of test host `host` for a resolved target spec (one point's values)."""
    pod = _pod_spec(spec, [_test_container(spec)])
    if spec.network == "host":
        pod["hostNetwork"] = True
        pod["dnsPolicy"] = "ClusterFirstWithHostNet"
    sc: dict[str, Any] = {"runAsUser": spec.run_as_user, "runAsGroup": spec.run_as_user, "seccompProfile": {"type": "RuntimeDefault"}}
    if spec.run_as_user:
        sc["runAsNonRoot"] = True
    if spec.pod_sysctls:
        sc["sysctls"] = [{"name": k, "value": str(v)} for k, v in spec.pod_sysctls.items()]
    pod["securityContext"] = sc
    if spec.pods == "per-node":
        pod["nodeSelector"][HOSTNAME] = host
    elif isinstance(spec.placement, NodePlacement):
        pod["nodeSelector"][HOSTNAME] = spec.placement.server if host == "server" else spec.placement.client
    else:
        affinity: dict[str, Any] = {}
        if spec.nodes:
            affinity["nodeAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": HOSTNAME, "operator": "In", "values": list(spec.nodes)}]}]}}
        if host == "client":  # placed relative to the server pod
            key = "podAffinity" if spec.placement == "same-node" else "podAntiAffinity"
            affinity[key] = {"requiredDuringSchedulingIgnoredDuringExecution": [_term(names, "server")]}
        if affinity:
            pod["affinity"] = affinity
    return {"apiVersion": "v1", "kind": "Pod", "metadata": _meta(names, names.pod_name(host), host), "spec": pod}


def node_pod(names: RunNames, spec: Any, node: str) -> dict[str, Any]:
    """The privileged pod on `node`: hostPID and hostNetwork, so /proc/stat, /proc/sys and
    /sys/class/net are the node's own (no nsenter needed for sysctls and interfaces)."""
    host = NODE_PREFIX + node
    c = _container(spec.image) | {"securityContext": {"privileged": True},
                                  "resources": {"requests": dict(NODE_POD_RESOURCES), "limits": dict(NODE_POD_RESOURCES)}}
    pod = _pod_spec(spec, [c]) | {"hostPID": True, "hostNetwork": True}
    pod["nodeSelector"][HOSTNAME] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": _meta(names, names.pod_name(host), host), "spec": pod}


def service(names: RunNames, host: str) -> dict[str, Any]:
    """A ClusterIP Service in front of `host`'s pod, on the ports servers listen on."""
    ports = [{"name": f"{proto.lower()}-{p}", "protocol": proto, "port": p, "targetPort": p}
             for p in SERVICE_PORTS for proto in ("TCP", "UDP")]
    return {"apiVersion": "v1", "kind": "Service", "metadata": _meta(names, names.service_name(host), host),
            "spec": {"type": "ClusterIP", "selector": {"nettune/run": names.run, "nettune/host": dns_label(host)}, "ports": ports}}


def servers_of(spec: Any, pairs: Any) -> list[str]:
    """Test hosts that act as a server (those get a Service with via = "service")."""
    if spec.pods != "per-node":
        return ["server"]
    if isinstance(pairs, str) and pairs.startswith("star:"):
        return [pairs.split(":", 1)[1]]
    if isinstance(pairs, list):
        return list(dict.fromkeys(a for a, _ in pairs))
    return list(spec.nodes)


def point_manifests(names: RunNames, spec: Any, pairs: Any = None) -> list[dict[str, Any]]:
    """The test pods (server first: the client's affinity refers to it) and Services of a point."""
    out = [test_pod(names, spec, h) for h in spec.pod_hosts]
    if spec.via == "service":
        out += [service(names, h) for h in servers_of(spec, pairs)]
    return out


def all_manifests(names: RunNames, spec: Any, pairs: Any = None, version: str | None = None) -> list[dict[str, Any]]:
    """Everything one point makes, in creation order (namespace, node pods, test pods, services)."""
    out = [namespace_manifest(names, pod_security_level([spec], version))] if names.own_namespace else []
    out += [node_pod(names, spec, n) for n in (spec.nodes if spec.node_access else [])]
    return out + point_manifests(names, spec, pairs)


def pod_shape(spec: Any) -> tuple[Any, ...]:
    """What of a resolved target spec makes the pods: a point that changes it re-creates them."""
    placement = spec.placement.model_dump() if isinstance(spec.placement, NodePlacement) else spec.placement
    return (str(placement), spec.network, spec.via, tuple(sorted(spec.pod_sysctls.items())), spec.image, spec.cpu, spec.memory)
