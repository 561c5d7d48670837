"""``rocketpipe admin <command>``: Apache RocketMQ's ``mqadmin`` commands with mqadmin's names
and option letters (L4, cli). See ``docs/admin-cli.md``.

One module per group of commands: :mod:`.cluster` (clusterList, brokerStatus, getBrokerConfig,
updateBrokerConfig, cleanExpiredCQ), :mod:`.topic` (topicList, topicRoute, topicStatus,
updateTopic, updateTopicPerm, deleteTopic, topicClusterList), :mod:`.group` (updateSubGroup,
deleteSubGroup, consumerProgress, consumerConnection, consumerStatus, producerConnection,
resetOffsetByTime, setConsumeMode), :mod:`.message` (queryMsgById, queryMsgByKey,
queryMsgByOffset, queryMsgByUniqueKey, printMsg, sendMessage, consumeMessage, queryMsgTraceById,
resendMsgById), :mod:`.stats` (statsAll), :mod:`.namesrv` (updateKvConfig, deleteKvConfig) and
:mod:`.acl` (ACL 2.0 users and ACLs).
Every command takes ``-n/--namesrvAddr`` and ``--json``; exit codes are those of
:mod:`rocketpipe.cli.errors`.

The ``admin`` group itself takes the connection options of ``produce`` / ``consume``
(:mod:`rocketpipe.cli.commands.acl_options`): ``--access-key`` / ``--secret-key`` (or
``ROCKETMQ_ACCESS_KEY`` / ``ROCKETMQ_SECRET_KEY``) sign every request as mqadmin's
``AclClientRPCHook`` does, ``--use-tls`` and the ``--tls-client-*`` options make every connection
TLS: ``rocketpipe admin --access-key K --secret-key S topicList -n host:9876``.

Imports: the public API of :mod:`rocketpipe.client`.
"""

from __future__ import annotations

import typer

from ..acl_options import (
    AccessKeyOption,
    SecretKeyOption,
    TlsClientCertOption,
    TlsClientKeyOption,
    TlsClientKeyPasswordOption,
    TlsClientTrustCertOption,
    TlsTestModeOption,
    UseTlsOption,
    credentials_from,
    tls_from,
)
from . import acl, cluster, group, message, namesrv, stats, topic
from ._common import AdminConnection, set_connection

admin_app = typer.Typer(
    name="admin",
    help="mqadmin's commands (clusterList, topicList, updateTopic, consumerProgress, queryMsgById, ...).",
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)


@admin_app.callback()
def admin_connection(
    ctx: typer.Context,
    access_key: AccessKeyOption = None,
    secret_key: SecretKeyOption = None,
    use_tls: UseTlsOption = False,
    tls_client_trust_cert: TlsClientTrustCertOption = None,
    tls_client_cert: TlsClientCertOption = None,
    tls_client_key: TlsClientKeyOption = None,
    tls_client_key_password: TlsClientKeyPasswordOption = None,
    tls_test_mode_enable: TlsTestModeOption = False,
) -> None:
    """mqadmin's commands; the options here (before the command name) sign every request with an
    ACL account and/or connect with TLS."""
    if ctx.resilient_parsing:  # shell completion: nothing to check
        return
    tls = tls_from(
        use_tls, tls_client_trust_cert, tls_client_cert, tls_client_key, tls_client_key_password, tls_test_mode_enable
    )
    set_connection(ctx, AdminConnection(credentials_from(access_key, secret_key), tls))


for _module in (cluster, topic, group, message, stats, namesrv, acl):
    _module.register(admin_app)

__all__ = ["admin_app"]
