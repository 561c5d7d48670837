"""Flag bits (L1): ``MessageSysFlag``, ``PullSysFlag``, ``PermName``, magic codes."""

from __future__ import annotations

from typing import Final

# MessageSysFlag
COMPRESSED_FLAG: Final = 0x1
MULTI_TAGS_FLAG: Final = 0x2
TRANSACTION_NOT_TYPE: Final = 0x0
TRANSACTION_PREPARED_TYPE: Final = 0x4
TRANSACTION_COMMIT_TYPE: Final = 0x8
TRANSACTION_ROLLBACK_TYPE: Final = 0xC
TRANSACTION_TYPE_MASK: Final = 0xC
BORNHOST_V6_FLAG: Final = 0x10
STOREHOST_V6_FLAG: Final = 0x20
NEED_UNWRAP_FLAG: Final = 0x40
INNER_BATCH_FLAG: Final = 0x80
COMPRESSION_TYPE_MASK: Final = 0x700
COMPRESSION_LZ4: Final = 0x100
COMPRESSION_ZSTD: Final = 0x200
COMPRESSION_ZLIB: Final = 0x300

# PullSysFlag
PULL_COMMIT_OFFSET: Final = 0x1
PULL_SUSPEND: Final = 0x2
PULL_SUBSCRIPTION: Final = 0x4
PULL_CLASS_FILTER: Final = 0x8
PULL_LITE: Final = 0x10


def build_pull_sys_flag(
    *, commit_offset: bool, suspend: bool, subscription: bool, class_filter: bool = False, lite_pull: bool = False
) -> int:
    """Combine pull flags (``PullSysFlag.buildSysFlag``)."""
    return (
        (PULL_COMMIT_OFFSET if commit_offset else 0)
        | (PULL_SUSPEND if suspend else 0)
        | (PULL_SUBSCRIPTION if subscription else 0)
        | (PULL_CLASS_FILTER if class_filter else 0)
        | (PULL_LITE if lite_pull else 0)
    )


# PermName
PERM_PRIORITY: Final = 8
PERM_READ: Final = 4
PERM_WRITE: Final = 2
PERM_INHERIT: Final = 1


def is_readable(perm: int) -> bool:
    """True when ``perm`` has PERM_READ."""
    return bool(perm & PERM_READ)


def is_writeable(perm: int) -> bool:
    """True when ``perm`` has PERM_WRITE."""
    return bool(perm & PERM_WRITE)


# Magic codes of stored records (MessageDecoder / MessageVersion / CommitLog)
MAGIC_V1: Final = -626843481  # 0xDAA320A7
MAGIC_V2: Final = -626843477  # 0xDAA320AB
BLANK_MAGIC: Final = -875286124  # 0xCBD43194, end-of-segment filler
