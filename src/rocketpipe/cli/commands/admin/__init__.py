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

Imports: the public API of :mod:`rocketpipe.client`.
"""

from __future__ import annotations

import typer

from . import acl, cluster, group, message, namesrv, stats, topic

admin_app = typer.Typer(
    name="admin",
    help="mqadmin's commands (clusterList, topicList, updateTopic, consumerProgress, queryMsgById, ...).",
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)
for _module in (cluster, topic, group, message, stats, namesrv, acl):
    _module.register(admin_app)

__all__ = ["admin_app"]
