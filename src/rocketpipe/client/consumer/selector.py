"""``MessageSelector``: a subscription expression and its type (Java ``MessageSelector``)."""

from __future__ import annotations

from dataclasses import dataclass

from ...protocol.bodies.heartbeat import EXPRESSION_TYPE_SQL92, EXPRESSION_TYPE_TAG

__all__ = ["MessageSelector"]


@dataclass(frozen=True, slots=True)
class MessageSelector:
    """How a consumer selects messages of a topic.

    Attributes:
        expression_type: ``"TAG"`` or ``"SQL92"``.
        expression: the TAG expression (``"*"``, ``"a || b"``) or the SQL92 selector.

    Example::

        consumer.subscribe("orders", MessageSelector.by_sql("amount > 100 AND TAGS IN ('paid')"))
    """

    expression_type: str
    expression: str

    @classmethod
    def by_sql(cls, sql: str) -> MessageSelector:
        """An SQL92 selector, evaluated by the broker on message properties (needs a broker
        with ``enablePropertyFilter=true``)."""
        return cls(EXPRESSION_TYPE_SQL92, sql)

    @classmethod
    def by_tag(cls, tag: str | None) -> MessageSelector:
        """A TAG expression (None / empty / ``"*"`` = everything)."""
        return cls(EXPRESSION_TYPE_TAG, tag or "*")
