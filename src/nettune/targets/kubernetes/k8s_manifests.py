"""The objects the kubernetes target creates, as manifests (plain dicts that
`kubectl apply -f` takes once dumped as YAML), built from the study alone.

Every object carries app.kubernetes.io/managed-by=nettune, the study (nettune/study)
and the run (nettune/run: one token per nettune process), so the end of a run, its
error paths and `nettune k8s clean` find exactly what it made. Placement is explicit:
nodeSelector kubernetes.io/hostname for a named node, a required podAffinity
(same-node) or podAntiAffinity (cross-node) on the server pod's labels otherwise, and a
nodeAffinity over `nodes` when the study lists them.
"""
from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from typing import Any

from ...studyfile.kubernetes_target import NODE_PREFIX, NodePlacement
from .k8s_api import MANAGED_BY

HOSTNAME = "kubernetes.io/hostname"
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
        return dns_label(f"nettune-{host.removeprefix(NODE_PREFIX)}{'-node' if host.startswith(NODE_PREFIX) else ''}")

    def service_name(self, host: str) -> str:
        return dns_label(f"nettune-{host}-svc")


def namespace_manifest(names: RunNames, privileged: bool) -> dict[str, Any]:
    labels = names.labels()
    if privileged:  # Pod Security admission: the node pods are privileged
        labels["pod-security.kubernetes.io/enforce"] = "privileged"
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": names.namespace, "labels": labels}}


def _meta(names: RunNames, name: str, role: str) -> dict[str, Any]:
    return {"name": name, "namespace": names.namespace, "labels": names.labels(role)}


def _container(image: str, privileged: bool = False) -> dict[str, Any]:
    c: dict[str, Any] = {"name": CONTAINER, "image": image, "command": list(IDLE)}
    if privileged:
        c["securityContext"] = {"privileged": True}
    return c


def _term(names: RunNames, host: str) -> dict[str, Any]:
    return {"labelSelector": {"matchLabels": {"nettune/run": names.run, "nettune/host": dns_label(host)}}, "topologyKey": HOSTNAME}


def test_pod(names: RunNames, spec: Any, host: str) -> dict[str, Any]:
    """The pod of test host `host` for a resolved target spec (one point's values)."""
    pod: dict[str, Any] = {"restartPolicy": "Never", "terminationGracePeriodSeconds": 1,
                           "containers": [_container(spec.image)]}
    if spec.network == "host":
        pod["hostNetwork"] = True
        pod["dnsPolicy"] = "ClusterFirstWithHostNet"
    if spec.pod_sysctls:
        pod["securityContext"] = {"sysctls": [{"name": k, "value": str(v)} for k, v in spec.pod_sysctls.items()]}
    if spec.pods == "per-node":
        pod["nodeSelector"] = {HOSTNAME: host}
    elif isinstance(spec.placement, NodePlacement):
        pod["nodeSelector"] = {HOSTNAME: spec.placement.server if host == "server" else spec.placement.client}
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
    pod = {"restartPolicy": "Never", "terminationGracePeriodSeconds": 1, "hostPID": True, "hostNetwork": True,
           "nodeSelector": {HOSTNAME: node}, "tolerations": [{"operator": "Exists"}],
           "containers": [_container(spec.image, privileged=True)]}
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


def all_manifests(names: RunNames, spec: Any, pairs: Any = None) -> list[dict[str, Any]]:
    """Everything one point makes, in creation order (namespace, node pods, test pods, services)."""
    out = [namespace_manifest(names, spec.node_access)] if names.own_namespace else []
    out += [node_pod(names, spec, n) for n in (spec.nodes if spec.node_access else [])]
    return out + point_manifests(names, spec, pairs)


def pod_shape(spec: Any) -> tuple[Any, ...]:
    """What of a resolved target spec makes the pods: a point that changes it re-creates them."""
    placement = spec.placement.model_dump() if isinstance(spec.placement, NodePlacement) else spec.placement
    return (str(placement), spec.network, spec.via, tuple(sorted(spec.pod_sysctls.items())), spec.image)
