"""``rocketpipe admin`` ACL 2.0 commands of Apache RocketMQ 5.3 (L4, cli): ``createUser``,
``updateUser``, ``deleteUser``, ``getUser``, ``listUser``, ``createAcl``, ``updateAcl``,
``deleteAcl``, ``getAcl``, ``listAcl``.

Mirror ``tools/command/auth/*SubCommand``.

Imports: the public API of :mod:`rocketpipe.client`.
"""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add the ACL 2.0 commands to ``app``."""
