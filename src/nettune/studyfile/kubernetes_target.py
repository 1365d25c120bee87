"""`[target] kind = "kubernetes"`: iperf3/iperf between pods of a real cluster.

    [target]
    kind = "kubernetes"
    context = "prod-eu"              # kubeconfig context (default: the current one)
    namespace = "nettune"            # default: a fresh namespace per run, deleted at the end
    placement = "{placement}"        # same-node | cross-node | { server = "node-a", client = "node-b" }
    network = "pod"                  # pod | host (hostNetwork)
    via = "pod-ip"                   # pod-ip | service (a ClusterIP Service in front of the server)
    node_access = true               # a privileged pod per node in `nodes`: node CPU and node knobs
    nodes = ["node-a", "node-b"]

Without `nodes` the test hosts are two pods, `server` and `client`, placed by `placement`.
With `pods = "per-node"` the test hosts are the nodes in `nodes` (one pod pinned to
each), for `[workload] pairs = "mesh" | "star:NODE"`; with `node_access = true` every node in `nodes` also gets a host named
`node:NAME` (its privileged pod) on which node knobs act and whose CPU is sampled.
`pod_sysctls` are namespaced sysctls set on the test pods (securityContext.sysctls): a
pod setting, so the pods are re-created when a point changes them.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator, model_validator

# nicolaka/netshoot carries iperf3 and iperf (2.x), sh and kill; pinned so a run is repeatable
DEFAULT_IMAGE = "nicolaka/netshoot:v0.13"
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
NODE_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")  # a DNS subdomain
SYSCTL_NAME = re.compile(r"^[a-z0-9_]+(\.[a-z0-9_-]+)+$")
Template = Annotated[str, StringConstraints(pattern=r"\{[^{}]+\}")]
NODE_PREFIX = "node:"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class NodePlacement(_Strict):
    """Both pods pinned to named nodes (nodeSelector kubernetes.io/hostname)."""

    server: str
    client: str

    @field_validator("server", "client")
    @classmethod
    def _node(cls, v: str) -> str:
        if not NODE_NAME.match(v):
            raise ValueError(f"{v!r} is not a node name (lower-case letters, digits, '-' and '.')")
        return v


Placement = Union[Literal["same-node", "cross-node"], NodePlacement, Template]


class KubernetesTargetSpec(_Strict):
    """Pods of a Kubernetes cluster, reached through the API server (exec)."""

    kind: Literal["kubernetes"]
    context: str | None = Field(default=None, description="kubeconfig context (default: the current context).")
    kubeconfig: str | None = Field(default=None, description="kubeconfig file (default: $KUBECONFIG, then ~/.kube/config).")
    namespace: str | None = Field(default=None, description="Namespace to create the pods in (must exist); default: a fresh nettune-<study>-<run> namespace, deleted at the end.")
    image: str = Field(default=DEFAULT_IMAGE, description=f"Image of every pod; needs sh, kill, iperf3 and iperf (default {DEFAULT_IMAGE}).")
    placement: Placement = Field(default="cross-node", description='"same-node" (podAffinity), "cross-node" (podAntiAffinity) or {server = NODE, client = NODE}; sweepable.')
    network: Literal["pod", "host"] | Template = Field(default="pod", description='"pod": the CNI\'s pod network; "host": hostNetwork (the node\'s own interfaces).')
    via: Literal["pod-ip", "service"] | Template = Field(default="pod-ip", description='"pod-ip": the client connects to the server pod\'s IP; "service": to a ClusterIP Service in front of it (needs [workload] bind = false).')
    node_access: bool = Field(default=False, description="A privileged hostPID/hostNetwork pod per node in `nodes`, as host node:NAME: node CPU and node knobs (sysctls).")
    nodes: list[str] = Field(default_factory=list, description="Nodes nettune may use. With [workload] pairs: one test pod per node, the hosts named after the nodes. With node_access: the nodes that get a privileged pod.")
    pods: Literal["server-client", "per-node"] = Field(default="server-client", description='"server-client": two pods, server and client, placed by `placement`; "per-node": one pod pinned to each node in `nodes`, the hosts named after the nodes (for [workload] pairs = "mesh" or "star:NODE").')
    pod_sysctls: dict[str, Union[str, int]] = Field(default_factory=dict, description="Namespaced sysctls on the test pods (securityContext.sysctls, scope \"pod\"); sweepable values.")
    ready_timeout: float = Field(default=120.0, gt=0, le=3600, description="Seconds a pod may take to become Ready before the point fails with the reason.")

    @field_validator("namespace")
    @classmethod
    def _namespace(cls, v: str | None) -> str | None:
        if v is not None and not DNS_LABEL.match(v):
            raise ValueError(f"{v!r} is not a namespace name (lower-case letters, digits and '-', at most 63)")
        return v

    @field_validator("nodes")
    @classmethod
    def _nodes(cls, v: list[str]) -> list[str]:
        for n in v:
            if not NODE_NAME.match(n):
                raise ValueError(f"{n!r} is not a node name (lower-case letters, digits, '-' and '.')")
        if len(set(v)) != len(v):
            raise ValueError("node names must be unique")
        return v

    @field_validator("pod_sysctls")
    @classmethod
    def _sysctls(cls, v: dict[str, Any]) -> dict[str, Any]:
        for k in v:
            if not SYSCTL_NAME.match(k):
                raise ValueError(f"{k!r} is not a sysctl name such as 'net.ipv4.tcp_rmem'")
        return {k: str(x) if not isinstance(x, str) else x for k, x in v.items()}

    @field_validator("kubeconfig")
    @classmethod
    def _kubeconfig(cls, v: str | None) -> str | None:
        if v is None:
            return v
        path = Path(v).expanduser()
        if not path.is_file():
            raise ValueError(f"{v!r} does not exist; give the path of a kubeconfig file")
        return str(path.resolve())

    @model_validator(mode="after")
    def _check(self) -> "KubernetesTargetSpec":
        if self.node_access and not self.nodes:
            raise ValueError('node_access = true needs nodes = ["NODE", ...]: the nodes that get a privileged pod')
        if self.pods == "per-node" and len(self.nodes) < 2:
            raise ValueError('pods = "per-node" needs at least two nodes in nodes = [...]')
        if isinstance(self.placement, NodePlacement) and self.nodes:
            missing = [n for n in (self.placement.server, self.placement.client) if n not in self.nodes]
            if missing:
                raise ValueError(f"placement names {', '.join(missing)}, which is not in nodes ({', '.join(self.nodes)})")
        if self.network == "host" and any(k.startswith("net.") for k in self.pod_sysctls):
            raise ValueError("pod_sysctls: net.* sysctls cannot be set on pods with network = \"host\" (they share the node's)")
        return self

    @property
    def pod_hosts(self) -> list[str]:
        """The test pods' host names: the nodes (one pod pinned to each), else server and client."""
        return list(self.nodes) if self.pods == "per-node" else ["server", "client"]

    @property
    def node_hosts(self) -> list[str]:
        return [NODE_PREFIX + n for n in self.nodes] if self.node_access else []

    @property
    def hosts(self) -> list[str]:
        return self.pod_hosts + self.node_hosts

    @property
    def test_hosts(self) -> list[str]:
        return self.pod_hosts

    @property
    def on_this_machine(self) -> bool:
        return False

    @property
    def queues(self) -> int | None:
        return None

    @property
    def over_loopback(self) -> bool:
        return False

    def reboot_refusal(self, hosts: tuple[str, ...]) -> str | None:
        return "needs a reboot, and nettune never reboots a kubernetes target's nodes; use an ssh target host with allow_reboot = true"
