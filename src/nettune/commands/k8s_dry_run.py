"""`nettune run --dry-run` on a Kubernetes study: which namespaces each knob's sysctls
reach (the node's, each test pod's copy made at the pod's creation, the pod's own) and at
which point visits the run re-makes the test pods (targets/kubernetes/kubernetes.py
settle does it; this says it beforehand, from the study alone)."""
from __future__ import annotations

from typing import Any

from ..knobs.keys import knob_items, linux_sysctls
from ..plan.points import schedule
from ..studyfile.k8s_sysctl_classes import COPIED, WHERE_TEXT, where
from ..targets.kubernetes.k8s_manifests import pod_shape


def k8s_reach_lines(study: Any, resolved: list[Any]) -> list[str]:
    """Per knob, which namespaces its sysctls reach on a Kubernetes study, and per point,
    at how many of its visits (in the run's order) the test pods are re-made after the
    node knobs because a value they copy at creation changed (or their shape did)."""
    spec, lines = study.target, []
    knobs, hosts_map = knob_items(resolved[0].extra.get("knobs")) if resolved else ({}, {})
    copied_keys: list[str] = []
    for key in knobs:
        hosts = ", ".join(hosts_map.get(key) or spec.hosts)
        names = linux_sysctls(key)
        if names is None:
            lines.append(f"{key} on {hosts}: cannot tell which sysctls it writes; the pods' values are read back after it at every point")
            copied_keys.append(key)
        elif not names:  # an interface, queue or CPU knob: the node's own devices
            lines.append(f"{key} on {hosts}: writes no sysctl: acts on the node's devices, which the test pods "
                         + ("share (hostNetwork): they see it at once" if spec.network != "pod" else
                            "reach through the CNI (the pods' own interfaces and MTU are the CNI's and do not change)"))
        for name in names or []:
            w = where(name)
            if spec.network != "pod" and name.startswith("net."):
                text = "the test pods use the node's network namespace (hostNetwork): they see it at once"
            elif w == COPIED or w == "":
                text = ("per pod network namespace, copied from the node when a pod is made" if w == COPIED else WHERE_TEXT[""]) + \
                    ": reaches test pods made after it is set; nettune re-makes them after the node value changes"
                copied_keys.append(key)
            else:
                text = WHERE_TEXT[w]
            lines.append(f"{key} on {hosts}: {name}: {text}")
    for name in dict.fromkeys(n for rp in resolved for n in rp.target.pod_sysctls):
        lines.append(f"pod_sysctls {name}: set in each test pod's own namespace (securityContext.sysctls); a changed value re-makes the pods")
    by_index = {rp.point.index: rp for rp in resolved}
    visits = [s.point.index for s in schedule(study, [rp.point for rp in resolved])]
    visits = [i for n, i in enumerate(visits) if n == 0 or visits[n - 1] != i]  # a point entered again only after another
    remade: dict[int, int] = {}  # point -> visits that re-make the test pods
    why = [0, 0, 0]  # the pod shape changed, a node value they copy changed, both
    prev: Any = None
    for n, i in enumerate(visits):
        rp = by_index[i]
        state = (pod_shape(rp.target), tuple(str(knob_items(rp.extra.get("knobs"))[0].get(k)) for k in copied_keys))
        if n and state != prev:
            remade[i] = remade.get(i, 0) + 1
            why[(state[0] != prev[0]) + 2 * (state[1] != prev[1]) - 1] += 1
        prev = state
    if remade:
        shuffled = " (order = \"shuffled\": the counts depend on the shuffle)" if study.repeat.order == "shuffled" else ""
        times = sum(remade.values())
        lines.append(f"test pods re-made {times} time{'s' if times != 1 else ''} over {len(visits)} point visits in the run's order{shuffled}: "
                     f"{why[0]} for another pod shape (placement, network, via, pod_sysctls, image, resources), {why[1]} after node knobs "
                     f"changed a value a pod copies, {why[2]} for both (made once, after the knobs); per point (visits that re-make / visits):")
        lines.append(", ".join(f"#{i} {v}/{visits.count(i)}" for i, v in sorted(remade.items())))
    return lines
