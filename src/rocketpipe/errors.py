"""Exceptions of rocketpipe (L0, stdlib only).

The tree::

    RocketMQError
    ├── ProtocolError                 bytes that break the remoting protocol (peer misbehaviour)
    ├── InvalidArgumentError          a caller's argument is wrong (also ValueError)
    ├── ClientClosedError             the client/component was closed
    ├── TransportError                network level
    │   ├── ConnectionClosedError     connection lost or refused (retriable)
    │   └── RequestTimeoutError       no response within the timeout (retriable)
    │       └── ReplyTimeoutError     request-reply: sent, but no reply in time (10006)
    ├── RouteNotFoundError            no route for a topic (refresh_route)
    └── BrokerError                   the peer answered with a non-success response code
        ├── SystemError_              1   (retriable)
        ├── SystemBusyError           2   (retriable)
        ├── RequestCodeNotSupportedError 3
        ├── MessageIllegalError       13
        ├── ServiceNotAvailableError  14  (retriable)
        ├── NoPermissionError         16  (retriable)
        ├── TopicNotExistError        17  (retriable, refresh_route)
        ├── SubscriptionError         23..28
        ├── InvalidParameterError     29
        └── GoAwayError               1500 (retriable)

Response codes are held here as plain ints (this module imports nothing from rocketpipe); a
unit test checks them against :mod:`rocketpipe.protocol.codes`. :func:`error_for_response` is the
only mapping from a response code to an exception. Mirrors the response handling of
``MQClientAPIImpl`` and ``DefaultMQProducer.retryResponseCodes``.
"""

from __future__ import annotations

from typing import ClassVar


class RocketMQError(Exception):
    """Base of every rocketpipe error.

    Attributes:
        code: the RocketMQ response code this error maps to (``SYSTEM_ERROR`` = 1 by default).
        retriable: whether sending the same request again (possibly elsewhere) may succeed.
        refresh_route: whether the caller should refresh the topic route before retrying.
    """

    code: ClassVar[int] = 1
    retriable: ClassVar[bool] = False
    refresh_route: ClassVar[bool] = False


class ProtocolError(RocketMQError):
    """Bytes received from a peer violate the remoting protocol; the connection must close."""


class InvalidArgumentError(RocketMQError, ValueError):
    """A caller passed an invalid argument; the message names the fix."""

    code = 29


class ClientClosedError(RocketMQError):
    """The client or component has been closed and cannot be used again."""


class TransportError(RocketMQError):
    """Network-level failure."""

    retriable = True


class ConnectionClosedError(TransportError):
    """The connection was closed, refused or reset."""


class RequestTimeoutError(TransportError):
    """No response arrived within the request timeout."""


class ReplyTimeoutError(RequestTimeoutError):
    """Request-reply: the request was sent, but no reply message arrived within its timeout.

    Mirrors Java's ``RequestTimeoutException`` with ``ClientErrorCode.REQUEST_TIMEOUT_EXCEPTION``
    (10006), a client-side code that no broker sends: it is not in :func:`error_for_response`'s
    mapping.
    """

    code = 10006


class RouteNotFoundError(RocketMQError):
    """The name server has no route for the topic."""

    code = 17
    refresh_route = True


class BrokerError(RocketMQError):
    """A broker or name server answered with a non-success response code.

    Attributes:
        response_code: the code actually received (may differ from ``code`` for unmapped codes).
        remark: the response's remark text.
    """

    def __init__(self, remark: str | None = None, response_code: int | None = None) -> None:
        self.remark = remark or ""
        self.response_code = self.code if response_code is None else response_code
        super().__init__(f"code={self.response_code} {self.remark}".strip())


class SystemError_(BrokerError):
    """SYSTEM_ERROR (1)."""

    code = 1
    retriable = True


class SystemBusyError(BrokerError):
    """SYSTEM_BUSY (2): flow control on the broker."""

    code = 2
    retriable = True


class RequestCodeNotSupportedError(BrokerError):
    """REQUEST_CODE_NOT_SUPPORTED (3)."""

    code = 3


class MessageIllegalError(BrokerError):
    """MESSAGE_ILLEGAL (13): body or properties too large, or a bad message."""

    code = 13


class ServiceNotAvailableError(BrokerError):
    """SERVICE_NOT_AVAILABLE (14): the store is not writable."""

    code = 14
    retriable = True


class NoPermissionError(BrokerError):
    """NO_PERMISSION (16): topic or broker not readable/writable."""

    code = 16
    retriable = True


class TopicNotExistError(BrokerError):
    """TOPIC_NOT_EXIST (17)."""

    code = 17
    retriable = True
    refresh_route = True


class SubscriptionError(BrokerError):
    """SUBSCRIPTION_* / FILTER_DATA_* (23..28)."""

    code = 23


class InvalidParameterError(BrokerError):
    """INVALID_PARAMETER (29)."""

    code = 29


class GoAwayError(BrokerError):
    """GO_AWAY (1500): the server is shutting down."""

    code = 1500
    retriable = True


_BY_CODE: dict[int, type[BrokerError]] = {
    1: SystemError_,
    2: SystemBusyError,
    3: RequestCodeNotSupportedError,
    13: MessageIllegalError,
    14: ServiceNotAvailableError,
    16: NoPermissionError,
    17: TopicNotExistError,
    23: SubscriptionError,
    24: SubscriptionError,
    25: SubscriptionError,
    26: SubscriptionError,
    27: SubscriptionError,
    28: SubscriptionError,
    29: InvalidParameterError,
    1500: GoAwayError,
}

#: Codes on which the Java producer retries another broker (DefaultMQProducer.retryResponseCodes).
RETRY_RESPONSE_CODES: frozenset[int] = frozenset({17, 14, 1, 2, 16, 204, 205, 1500})


def error_for_response(code: int, remark: str | None = None) -> BrokerError:
    """Return the exception for a non-success response code.

    Args:
        code: the response code received.
        remark: the response's remark.

    Returns:
        An instance of the mapped :class:`BrokerError` subclass; unmapped codes give a plain
        :class:`BrokerError` whose ``response_code`` is ``code``.
    """
    cls = _BY_CODE.get(code, BrokerError)
    return cls(remark, response_code=code)


class HeaderError(RocketMQError):
    """A request's custom header lacks a required field or cannot be parsed.

    A Java server answers such requests with SYSTEM_ERROR (1); the connection stays open.
    """

    code = 1
