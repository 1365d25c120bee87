"""`nettune k8s clean|manifests`: what a kubernetes study leaves or would create."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer
from rich.markup import escape

from .app import app, console, user_errors

k8s_app = typer.Typer(help="Kubernetes studies: remove what a killed run left, show what a run creates.", no_args_is_help=True)
app.add_typer(k8s_app, name="k8s")


@k8s_app.command("clean")
@user_errors
def clean(
    context: Optional[str] = typer.Option(None, "--context", help="kubeconfig context (default: the current one)."),
    kubeconfig: Optional[Path] = typer.Option(None, "--kubeconfig", help="kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)."),
    study: Optional[str] = typer.Option(None, "--study", help="Only the objects of this study (its name)."),
    run: Optional[str] = typer.Option(None, "--run", help="Only the objects of this run (the token a warning named)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="List what would be deleted; delete nothing."),
    namespace: Optional[str] = typer.Option(None, "--namespace", help="Only this namespace's pods and Services (a Role there is enough; "
                                            "without it nettune lists every namespace, which needs cluster-wide rights)."),
) -> None:
    """Delete every object labelled app.kubernetes.io/managed-by=nettune (of a study or run).
    Runs still going lose their pods too: use it when no nettune run uses the cluster."""
    from ..targets.kubernetes.k8s_clean import clean_cluster  # noqa: PLC0415 - the kubernetes client only when asked

    found, failed = clean_cluster(context, str(kubeconfig) if kubeconfig else None, study, run, dry_run, namespace)
    if not found:
        console.print("nothing of nettune's found")
        return
    verb = "would delete" if dry_run else "deleted"
    for kind, ns, name in found:
        console.print(escape(f"{verb} {kind} {ns + '/' if ns else ''}{name}"), highlight=False)
    for line in failed:
        console.print(f"[red]not deleted[/]: {escape(line)}", highlight=False)
    if failed:
        raise typer.Exit(1)


@k8s_app.command("manifests")
@user_errors
def manifests(
    file: Path = typer.Argument(..., help="Study file whose \\[target] kind = \"kubernetes\"."),
    only: Optional[str] = typer.Option(None, "--only", help="namespace: only the namespace nettune makes; objects: everything else "
                                       "(`kubectl apply --dry-run=server` needs the namespace to exist first)."),
    version: Optional[str] = typer.Option(None, "--version", help="Server version to decide the namespace's PodSecurity level for (e.g. 1.29)."),
) -> None:
    """Print the objects a run of the study creates, as YAML.

    Your cluster's admission checks them in two steps (a server dry run keeps no namespace):
    `nettune k8s manifests F --only namespace | kubectl apply -f -`, then
    `nettune k8s manifests F --only objects | kubectl apply --dry-run=server -f -`; then delete the namespace."""
    from ..errors import NettuneError  # noqa: PLC0415
    from ..targets.kubernetes.k8s_plan import PARTS, manifests_yaml  # noqa: PLC0415

    if only is not None and only not in PARTS:
        raise NettuneError(f"--only {only!r}: use one of {', '.join(PARTS)}")
    study, resolved = _kubernetes_study(file, "`nettune k8s manifests`")
    if only == "namespace" and study.target.namespace:
        raise NettuneError(f"{file}: [target] namespace = {study.target.namespace!r}: nettune makes no namespace; use --only objects")
    print(manifests_yaml(study, resolved, only, version), end="")


@k8s_app.command("sysctls")
@user_errors
def sysctls(
    names: Optional[list[str]] = typer.Argument(None, help="Sysctls to classify (default: the study's with --study, else nettune's catalog)."),
    version: Optional[str] = typer.Option(None, "--version", help="Kubernetes version of the server and kubelets (e.g. 1.29 or v1.32.4)."),
    kernel: Optional[str] = typer.Option(None, "--kernel", help="The nodes' kernel (e.g. 5.15.0): the kubelet drops sysctls newer than it."),
    study_file: Optional[Path] = typer.Option(None, "--study", help="A kubernetes study: classify its pod sysctls and knob sysctls."),
    markdown: bool = typer.Option(False, "--markdown", help="A Markdown table (as docs/kubernetes.md shows it)."),
) -> None:
    """Where each sysctl acts, and what a cluster of a version needs to set it per pod.

    Node-level, per pod network namespace copied from the node when a pod is made, or per pod with the kernel default. Safe when the kubelet and PodSecurity accept it."""
    from .k8s_output import catalog_names, print_sysctl_table, study_sysctls  # noqa: PLC0415

    chosen = list(names or [])
    if study_file is not None:
        study, resolved = _kubernetes_study(study_file, "`nettune k8s sysctls --study`")
        chosen += study_sysctls(study, resolved)
    print_sysctl_table(list(dict.fromkeys(chosen)) or catalog_names(), version, kernel,
                       f"sysctls on Kubernetes {version or '(no version given: safety per version in column 3)'}"
                       + (f", node kernel {kernel}" if kernel else ""), markdown)


def _kubernetes_study(file: Path, what: str) -> tuple[Any, list[Any]]:
    from ..plan.points import expand_and_check  # noqa: PLC0415
    from ..plan.study_file import parse_study  # noqa: PLC0415
    from ..studyfile.load import read_study_text  # noqa: PLC0415
    from ..targets import require_kind  # noqa: PLC0415

    text = read_study_text(file)
    study = parse_study(text, str(file))
    require_kind(study, "kubernetes", str(file), what)
    return study, expand_and_check(study, text, str(file))
