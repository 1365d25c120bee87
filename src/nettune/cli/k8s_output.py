"""The kubernetes parts of `nettune run --dry-run` and `nettune hosts`: the kubectl exec
lines of each point's commands, which namespaces each knob reaches and when the test pods
are re-made, the objects a run creates as YAML (targets/kubernetes/k8s_plan.py builds
them), and the sysctl classification for a server version."""
from __future__ import annotations

from typing import Any

from rich.markup import escape
from rich.table import Table

from ..commands.k8s_dry_run import k8s_reach_lines
from ..plan.points import expand_and_check
from ..studyfile.k8s_sysctl_classes import ACTS, SAFE_SINCE, table_rows
from ..targets.kubernetes.k8s_plan import kubectl_exec, manifests_yaml
from .app import console


def study_sysctls(study: Any, resolved: list[Any]) -> list[str]:
    """The sysctls a kubernetes study touches: its pods' own and its knobs'."""
    return list(dict.fromkeys([*(n for rp in resolved for n in rp.target.pod_sysctls), *study.target.knob_sysctls(study.knobs)]))


COLUMNS = ("sysctl", "where it acts", "safe as a pod sysctl", "the cluster needs, as a pod sysctl")


def print_sysctl_table(names: list[str], version: str | None, kernel: str | None = None, title: str = "", markdown: bool = False) -> None:
    title = title or f"sysctls on Kubernetes {version or '(version unknown until connected)'}"
    rows = table_rows(names, version, kernel)
    if markdown:  # docs/kubernetes.md and examples/study-e.toml show it so
        print("\n".join([title, "", "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
                        + ["| " + " | ".join(r) + " |" for r in rows]))
        return
    t = Table(title=title, title_justify="left")
    for c in COLUMNS:
        t.add_column(c)
    for row in rows:
        t.add_row(*map(escape, row))
    console.print(t, crop=False)


def catalog_names() -> list[str]:
    return list(dict.fromkeys([*ACTS, *SAFE_SINCE]))


def print_k8s_plan(study: Any, text: str, file: str, plan: Any) -> None:
    resolved = expand_and_check(study, text, file)
    console.print("\n[bold]exec command lines[/] (nettune runs them through the API's exec stream; the same as):", highlight=False)
    for p in plan.planned:
        env = "".join(f"{k}=... " for k in p.client_env)  # secrets go over the stream's stdin, never on a command line
        console.print(escape(f"#{p.index} server: {kubectl_exec(study, p.server_host, p.server_argv)}"), highlight=False, soft_wrap=True, emoji=False)
        console.print(escape(f"#{p.index} client: {env}{kubectl_exec(study, p.client_host, p.client_argv)}"), highlight=False, soft_wrap=True, emoji=False)
    reach = k8s_reach_lines(study, resolved)
    if reach:
        console.print("\n[bold]where the knobs and pod sysctls act[/] (the pods' values are read back and stored at every point):", highlight=False)
        for line in reach:
            console.print(escape(line), highlight=False, soft_wrap=True, emoji=False)  # "node:b: " is no emoji
    names = study_sysctls(study, resolved)
    if names:
        console.print("\nserver version: unknown until connected (`nettune hosts` reads it; a run refuses or warns by it)", highlight=False)
        print_sysctl_table(names, None)
    console.print(f"\n[bold]manifests[/] (what `kubectl apply -f` takes; alone: nettune k8s manifests {escape(file)}):", highlight=False)
    console.print(escape(manifests_yaml(study, resolved)), highlight=False, soft_wrap=True, markup=False)


def print_k8s_hosts(study: Any, rows: list[Any], connected: bool) -> None:
    """`nettune hosts` on a kubernetes study: the server version the run will plan for
    ("unknown until connected" offline or when the cluster does not answer) and the
    classification of the study's sysctls for it."""
    version = next((r.version for r in rows if r.version), "")
    if version:
        console.print(f"plans for Kubernetes {escape(version)} (the API server's version)", highlight=False)
    else:
        console.print("Kubernetes version: unknown until connected" + ("" if connected else " (--no-connect)"), highlight=False)
    names = study_sysctls(study, expand_and_check(study))
    if names:
        print_sysctl_table(names, version or None)
