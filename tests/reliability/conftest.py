"""Fixtures of the reliability tests: small real filesystems to fill up.

``small_fs`` mounts a fresh filesystem of a given size (tmpfs by default, or an ext4 image on a
loop device) and unmounts it at teardown. Mounting needs root (or CAP_SYS_ADMIN): where the
``mount`` call is refused, the test is skipped with the refusal's text; any other mount failure
fails the test. Every test here also has any ``ServeProcess`` it left unclosed stopped after it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Literal

import pytest
from serve_process import kill_all_under, unclosed

#: What ``mount(8)`` / ``losetup(8)`` print when the caller may not mount.
_NOT_PERMITTED = re.compile(r"permission denied|operation not permitted|must be superuser|only root", re.IGNORECASE)

FsKind = Literal["tmpfs", "ext4"]


def _run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)


def _mount_or_skip(argv: list[str]) -> None:
    """Run a mount command; skip the test when mounting is not permitted, fail on other errors."""
    if shutil.which(argv[0]) is None:
        pytest.skip(f"cannot mount a small filesystem: {argv[0]}(8) is not installed")
    done = _run(argv)
    if done.returncode == 0:
        return
    text = " ".join((done.stderr or done.stdout).split())
    if _NOT_PERMITTED.search(text) or os.geteuid() != 0:
        pytest.skip(
            f"mounting is not permitted here (euid {os.geteuid()}; needs root or CAP_SYS_ADMIN): {' '.join(argv)}: {text}"
        )
    pytest.fail(f"{' '.join(argv)} failed (exit {done.returncode}): {text}")


def _unmount(mount_point: Path) -> None:
    """Unmount; if busy, SIGKILL the ``rocketpipe serve`` processes using it, then retry, lazily at last."""
    if _run(["umount", str(mount_point)]).returncode == 0:
        return
    kill_all_under(mount_point)
    if _run(["umount", str(mount_point)]).returncode == 0:
        return
    # still busy (e.g. an in-process store not closed by a failed test): detach it now; the
    # kernel frees it once the last file is closed
    done = _run(["umount", "--lazy", str(mount_point)])
    if done.returncode != 0:
        raise RuntimeError(f"cannot unmount {mount_point}: {done.stderr.strip()}")


@pytest.fixture(autouse=True)
def _stop_forgotten_serve_processes() -> Iterator[None]:
    """After each test, SIGKILL any ``ServeProcess`` it started and did not close."""
    before = set(unclosed())
    yield
    for serve in set(unclosed()) - before:
        serve.close()


@pytest.fixture
def small_fs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., Path]]:
    """Factory ``small_fs(size_mib=64, kind="tmpfs") -> Path``: a freshly mounted, empty filesystem.

    ``kind="tmpfs"`` mounts ``tmpfs -o size=<size_mib>m`` (writes past the size fail with ENOSPC);
    ``kind="ext4"`` formats an image file of ``size_mib`` MiB (no reserved blocks) and mounts it
    through a loop device, for behaviour that differs on a disk filesystem (block allocation,
    ``fallocate``, fsync). Every filesystem made is unmounted at teardown, after SIGKILLing any
    :class:`~serve_process.ServeProcess` whose store is on it.

    Skips (with the refusal's text) where mounting is not permitted; fails on any other error.
    """
    mounted: list[Path] = []

    def make(size_mib: int = 64, kind: FsKind = "tmpfs") -> Path:
        if size_mib < 1:
            raise ValueError(f"size_mib must be >= 1, not {size_mib}")
        base = tmp_path_factory.mktemp(f"{kind}{size_mib}m")
        mount_point = base / "mnt"
        mount_point.mkdir()
        if kind == "tmpfs":
            _mount_or_skip(["mount", "-t", "tmpfs", "-o", f"size={size_mib}m,mode=0755", "tmpfs", str(mount_point)])
        elif kind == "ext4":
            image = base / "fs.img"
            with image.open("wb") as f:
                f.truncate(size_mib * 1024 * 1024)
            if shutil.which("mkfs.ext4") is None:
                pytest.skip("cannot make an ext4 image: mkfs.ext4 is not installed")
            fmt = _run(["mkfs.ext4", "-q", "-F", "-m", "0", str(image)])
            if fmt.returncode != 0:
                pytest.fail(f"mkfs.ext4 failed: {fmt.stderr.strip()}")
            _mount_or_skip(["mount", "-o", "loop", str(image), str(mount_point)])
        else:
            raise ValueError(f"kind must be 'tmpfs' or 'ext4', not {kind!r}")
        mounted.append(mount_point)
        return mount_point

    yield make
    errors = []
    for mount_point in reversed(mounted):
        try:
            _unmount(mount_point)
        except RuntimeError as exc:
            errors.append(str(exc))
    assert not errors, "; ".join(errors)
