"""Topic routes as the gRPC endpoint hands them out (pure): every broker of the remoting route,
with the endpoint's own address, and its queues renumbered by permission.

Mirrors Java 5.3.3's proxy ``RouteActivity.queryRoute`` / ``genMessageQueueFromQueueData`` /
``parseTopicMessageType`` and ``RouteActivity.queryAssignment`` / ``convertToPermission``.
"""

from __future__ import annotations

from rocketmq.grpc_protocol import definition_pb2 as pb

from ..protocol import sysflag as sf
from ..protocol.bodies.route import QueueData, TopicRouteData

#: MixAll.MASTER_ID
MASTER_ID = 0

#: ``TopicMessageType`` name → the message types its queues accept.
_ACCEPTED: dict[str, list[int]] = {
    "NORMAL": [pb.MessageType.NORMAL],
    "FIFO": [pb.MessageType.FIFO],
    "TRANSACTION": [pb.MessageType.TRANSACTION],
    "DELAY": [pb.MessageType.DELAY],
    "MIXED": [pb.MessageType.NORMAL, pb.MessageType.FIFO, pb.MessageType.DELAY, pb.MessageType.TRANSACTION],
}


def accepted_message_types(topic_message_type: str) -> list[int]:
    """``parseTopicMessageType``: MESSAGE_TYPE_UNSPECIFIED for an unknown name."""
    return _ACCEPTED.get(topic_message_type, [pb.MessageType.MESSAGE_TYPE_UNSPECIFIED])


def queues_of(qd: QueueData, topic: pb.Resource, broker: pb.Broker, types: list[int]) -> list[pb.MessageQueue]:
    """``genMessageQueueFromQueueData``: read-only queues first, then write-only, then
    read-write, then (no permission at all) max(1, read, write) NONE queues; ids from 0."""
    r = w = rw = n = 0
    readable, writeable = sf.is_readable(qd.perm), sf.is_writeable(qd.perm)
    if readable and writeable:
        rw = min(qd.write_queue_nums, qd.read_queue_nums)
        r, w = qd.read_queue_nums - rw, qd.write_queue_nums - rw
    elif writeable:
        w = qd.write_queue_nums
    elif readable:
        r = qd.read_queue_nums
    else:
        n = max(1, qd.write_queue_nums, qd.read_queue_nums)
    perms = [pb.Permission.READ] * r + [pb.Permission.WRITE] * w + [pb.Permission.READ_WRITE] * rw
    perms += [pb.Permission.NONE] * n
    return [
        pb.MessageQueue(topic=topic, id=i, permission=perm, broker=broker, accept_message_types=types)
        for i, perm in enumerate(perms)
    ]


def message_queues(
    route: TopicRouteData, topic: pb.Resource, endpoints: pb.Endpoints, topic_message_type: str
) -> list[pb.MessageQueue]:
    """The ``QueryRouteResponse.message_queues`` of ``route``: one set per broker (every id of
    its group, as Java lists them), each broker reached at ``endpoints`` (the endpoint the client
    used). A queue data whose broker group has no addresses ends the list, as Java's loop does."""
    by_name = {bd.broker_name: bd for bd in route.broker_datas}
    types = accepted_message_types(topic_message_type)
    out: list[pb.MessageQueue] = []
    for qd in route.queue_datas:
        bd = by_name.get(qd.broker_name)
        if bd is None:
            break
        for broker_id in sorted(bd.broker_addrs):
            broker = pb.Broker(name=qd.broker_name, id=int(broker_id), endpoints=endpoints)
            out.extend(queues_of(qd, topic, broker, types))
    return out


def permission_of(perm: int) -> int:
    """``convertToPermission``: a remoting ``perm`` as READ_WRITE, READ, WRITE or NONE."""
    readable, writeable = sf.is_readable(perm), sf.is_writeable(perm)
    if readable and writeable:
        return int(pb.Permission.READ_WRITE)
    if readable:
        return int(pb.Permission.READ)
    if writeable:
        return int(pb.Permission.WRITE)
    return int(pb.Permission.NONE)


def assignments(route: TopicRouteData, topic: pb.Resource, endpoints: pb.Endpoints, fifo: bool) -> list[pb.Assignment]:
    """The ``QueryAssignmentResponse.assignments`` of ``route``: for every readable queue data
    (read queues > 0) whose broker group has a master, one assignment with queue id -1 (POP from
    any queue of the broker), or, for a group that consumes orderly (``fifo``), one per read
    queue id. The broker is the master, reached at ``endpoints`` (the endpoint itself)."""
    masters = {bd.broker_name: bd for bd in route.broker_datas if MASTER_ID in bd.broker_addrs}
    out: list[pb.Assignment] = []
    for qd in route.queue_datas:
        if not sf.is_readable(qd.perm) or qd.read_queue_nums <= 0 or qd.broker_name not in masters:
            continue
        broker = pb.Broker(name=qd.broker_name, id=MASTER_ID, endpoints=endpoints)
        perm = permission_of(qd.perm)
        ids = range(qd.read_queue_nums) if fifo else (-1,)
        out.extend(
            pb.Assignment(message_queue=pb.MessageQueue(topic=topic, id=i, permission=perm, broker=broker)) for i in ids
        )
    return out
