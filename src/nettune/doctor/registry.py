"""Every doctor check, by area (one file per area); the order is the report's order."""
from __future__ import annotations

from . import counters, cpu_power, kernel_log, kernel_net, nic, nic_irq, path_mtu, pcie, tool_versions, tunnel, virt
from .base import Check, StudyCheck

CHECKS: tuple[Check, ...] = (*cpu_power.CHECKS, *virt.CHECKS, *nic.CHECKS, *nic_irq.CHECKS, *counters.CHECKS, *kernel_log.CHECKS,
                             *pcie.CHECKS, *kernel_net.CHECKS, *tunnel.CHECKS, *tool_versions.CHECKS)
STUDY_CHECKS: tuple[StudyCheck, ...] = path_mtu.CHECKS


def check_ids() -> list[str]:
    return [c.id for c in STUDY_CHECKS] + [c.id for c in CHECKS]
