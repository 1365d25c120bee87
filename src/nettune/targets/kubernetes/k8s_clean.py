"""`nettune k8s clean`: delete what runs left on a cluster, found by nettune's labels.

Pods and Services first, then namespaces (a namespace nettune made takes what is left in
it). Only objects labelled app.kubernetes.io/managed-by=nettune are ever touched. Without
--namespace it lists pods, Services and namespaces in every namespace (cluster-wide list
and delete rights: examples/k8s-rbac.yaml's nettune-node-access ClusterRole); with
--namespace NS only that namespace's pods and Services (the unprivileged Role there).
"""
from __future__ import annotations

from typing import Any

from ...studyfile.kubernetes_target import KubernetesTargetSpec
from .k8s_api import CLI_FLAGS, MANAGED_BY, KubeError
from .k8s_manifests import dns_label

ORDER = {"Pod": 0, "Service": 1, "Namespace": 2}


def clean_cluster(context: str | None, kubeconfig: str | None, study: str | None, run: str | None,
                  dry_run: bool = False, namespace: str | None = None) -> tuple[list[tuple[str, str | None, str]], list[str]]:
    """(objects found, 'KIND NAME: why' for each that could not be deleted). With `namespace`,
    only its pods and Services (what a Role in that namespace may list and delete)."""
    from . import kubernetes  # noqa: PLC0415 - API_FACTORY, the test seam

    spec = KubernetesTargetSpec.model_construct(kind="kubernetes", context=context, kubeconfig=kubeconfig)  # the client checks the file
    api: Any = kubernetes.API_FACTORY(spec, CLI_FLAGS)
    selector = f"{MANAGED_BY}=nettune"
    if study:
        selector += f",nettune/study={dns_label(study)}"
    if run:
        selector += f",nettune/run={run}"
    found = sorted(api.find(selector, namespace), key=lambda o: ORDER.get(o[0], 9))
    failed: list[str] = []
    if not dry_run:
        for kind, ns, name in found:
            try:
                api.delete(kind, ns, name)
            except KubeError as e:
                failed.append(f"{kind} {name}: {e}")
    return found, failed
