"""How full is the store's filesystem? (L2; stdlib only).

Mirrors ``UtilAll.getDiskPartitionSpaceUsedPercent`` and the broker's ``diskUtil()`` remark.
"""

from __future__ import annotations

import os
from pathlib import Path


def disk_partition_used_ratio(path: str | Path) -> float:
    """Used fraction (0.0..1.0) of the filesystem holding ``path``; -1.0 when it cannot be read.

    ``UtilAll.getDiskPartitionSpaceUsedPercent``: used / (used + usable), rounded up to 1/100,
    where used = total - free and usable excludes the blocks reserved for root.
    """
    try:
        vfs = os.statvfs(path)
    except OSError:
        return -1.0
    total = vfs.f_blocks * vfs.f_frsize
    if total <= 0:
        return -1.0
    used = total - vfs.f_bfree * vfs.f_frsize
    entire = used + vfs.f_bavail * vfs.f_frsize
    if entire <= 0:
        return -1.0
    return (used * 100 // entire + (1 if used * 100 % entire else 0)) / 100.0


def disk_util(root_dir: str | Path) -> str:
    """``"CL: 0.13 CQ: 0.13 INDEX: 0.13"``: the used fraction of each store directory's filesystem.

    The text Java's ``SendMessageProcessor.diskUtil()`` puts into the SERVICE_NOT_AVAILABLE
    remark (``%5.2f`` of the commit log, consume queue and index paths).
    """
    root = Path(root_dir)
    parts = (("CL", "commitlog"), ("CQ", "consumequeue"), ("INDEX", "index"))
    return " ".join(
        f"{name}: {disk_partition_used_ratio(root / sub if (root / sub).exists() else root):5.2f}"
        for name, sub in parts
    )
