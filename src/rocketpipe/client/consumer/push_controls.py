"""Push-consumer controls (L3): pause / resume, per-topic flow control, consume hooks.

* **Pause.** While a consumer is paused (``suspend``), pull loops do not pull; they look again
  every :data:`PULL_DELAY_WHEN_SUSPEND` (Java ``PULL_TIME_DELAY_MILLS_WHEN_SUSPEND``, 1 s).
  Batches already pulled are still consumed.
* **Per-topic thresholds.** ``pull_threshold_for_topic`` / ``pull_threshold_size_for_topic``
  (−1 = off) are split evenly over the queues of the topic this client holds, as
  ``RebalancePushImpl.messageQueueChanged`` does: each queue may cache at most
  ``max(1, threshold // n)`` messages (``max(1, size // n)`` MiB) before its pulls wait
  50 ms; the per-queue settings still apply.
* **Hooks.** :class:`ConsumeMessageHook` objects see each listener call before and after
  (``ConsumeMessageHook.consumeMessageBefore/After``) with a :class:`ConsumeMessageContext`;
  hook errors are logged and ignored.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from ...protocol.message import MessageExt, MessageQueue
from .process_queue import PULL_DELAY_WHEN_FLOW_CONTROL
from .pull import PullLoop, PullRequest

log = logging.getLogger(__name__)

#: PULL_TIME_DELAY_MILLS_WHEN_SUSPEND (1 000 ms), seconds.
PULL_DELAY_WHEN_SUSPEND: Final = 1.0


@dataclass(slots=True)
class PushControls:
    """Mutable controls shared by a consumer and its pull loops.

    Attributes:
        paused: pulls wait while True.
        pull_threshold_for_topic: cached messages per topic, −1 = unlimited.
        pull_threshold_size_for_topic: cached MiB per topic, −1 = unlimited.
        queues_of_topic: number of queues of a topic this client holds.
        flow_control_times: how often a per-topic limit made a pull wait.
    """

    paused: bool = False
    pull_threshold_for_topic: int = -1
    pull_threshold_size_for_topic: int = -1
    queues_of_topic: Callable[[str], int] = field(default=lambda topic: 1)
    flow_control_times: int = 0

    def topic_delay(self, req: PullRequest) -> float | None:
        """Return a delay when the queue exceeds its share of a per-topic limit, else None."""
        if self.pull_threshold_for_topic < 0 and self.pull_threshold_size_for_topic < 0:
            return None
        n = max(1, self.queues_of_topic(req.mq.topic))
        pq = req.pq
        if self.pull_threshold_for_topic >= 0 and pq.msg_count > max(1, self.pull_threshold_for_topic // n):
            self.flow_control_times += 1
            return PULL_DELAY_WHEN_FLOW_CONTROL
        if self.pull_threshold_size_for_topic >= 0 and pq.msg_size / (1024 * 1024) > max(
            1, self.pull_threshold_size_for_topic // n
        ):
            self.flow_control_times += 1
            return PULL_DELAY_WHEN_FLOW_CONTROL
        return None


class ControlledPullLoop(PullLoop):
    """:class:`PullLoop` that honours :class:`PushControls` (pause, per-topic limits).

    Args:
        *args: as :class:`PullLoop`.
        controls: the consumer's controls.
    """

    def __init__(self, *args: Any, controls: PushControls, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self._controls = controls

    async def _pull_once(self, req: PullRequest) -> float | None:
        c = self._controls
        if c.paused:
            return PULL_DELAY_WHEN_SUSPEND
        delay = c.topic_delay(req)
        if delay is not None:
            return delay
        return await super()._pull_once(req)


@dataclass(slots=True)
class ConsumeMessageContext:
    """What a consume hook sees (``ConsumeMessageContext``).

    Attributes:
        consumer_group: the group.
        msg_list: the batch.
        mq: its queue.
        success: after the call: CONSUME_SUCCESS (concurrent) or SUCCESS / COMMIT (orderly).
        status: after the call: the status name (``RECONSUME_LATER`` /
            ``SUSPEND_CURRENT_QUEUE_A_MOMENT`` when the listener raised or returned None).
        props: ``ConsumeContextType`` → ``SUCCESS`` / ``FAILED`` / ``EXCEPTION`` /
            ``RETURNNULL`` after the call; hooks may add their own keys.
        exception: the listener's exception, if any.
        mq_trace_context: what a hook keeps from before the call to after it
            (``mqTraceContext``; the trace hook's SubBefore record).
    """

    consumer_group: str
    msg_list: list[MessageExt]
    mq: MessageQueue
    success: bool = False
    status: str | None = None
    props: dict[str, str] = field(default_factory=dict)
    exception: BaseException | None = None
    mq_trace_context: object = None


class ConsumeMessageHook(Protocol):
    """A consume hook (``ConsumeMessageHook``); both methods are synchronous."""

    def hook_name(self) -> str:
        """A name for logs."""

    def consume_message_before(self, context: ConsumeMessageContext) -> None:
        """Called before the listener with the batch."""

    def consume_message_after(self, context: ConsumeMessageContext) -> None:
        """Called after the listener with the outcome."""


#: MixAll.CONSUME_CONTEXT_TYPE
CONSUME_CONTEXT_TYPE: Final = "ConsumeContextType"
_OK_STATUSES: Final = frozenset({"CONSUME_SUCCESS", "SUCCESS", "COMMIT"})


def _run_hooks(hooks: list[ConsumeMessageHook], method: str, ctx: ConsumeMessageContext) -> None:
    for h in hooks:
        try:
            getattr(h, method)(ctx)
        except Exception:
            name = h.hook_name() if hasattr(h, "hook_name") else type(h).__name__
            log.warning("consume hook %s.%s failed", name, method, exc_info=True)


def _after(
    hooks: list[ConsumeMessageHook],
    ctx: ConsumeMessageContext,
    result: object,
    exc: BaseException | None,
    orderly: bool,
) -> None:
    if exc is not None:
        ctx.exception = exc
        ctx.props[CONSUME_CONTEXT_TYPE] = "EXCEPTION"
    elif result is None:
        ctx.props[CONSUME_CONTEXT_TYPE] = "RETURNNULL"
    name = getattr(result, "value", None)
    if not isinstance(name, str):
        name = "SUSPEND_CURRENT_QUEUE_A_MOMENT" if orderly else "RECONSUME_LATER"
    ctx.status = name
    ctx.success = name in _OK_STATUSES
    ctx.props.setdefault(CONSUME_CONTEXT_TYPE, "SUCCESS" if ctx.success else "FAILED")
    _run_hooks(hooks, "consume_message_after", ctx)


def wrap_listener_with_hooks(listener: Any, hooks: list[ConsumeMessageHook], group: str, *, orderly: bool) -> Any:
    """Return ``listener`` wrapped so that ``hooks`` run around each call.

    The wrapper is ``async`` exactly when the listener is (so it still runs on the loop or in
    the consumer's thread pool as before); exceptions still reach the consume service.
    """
    if not hooks:
        return listener
    is_async = getattr(listener, "is_async", None)
    if is_async is None:
        is_async = inspect.iscoroutinefunction(listener) or inspect.iscoroutinefunction(type(listener).__call__)

    def before(msgs: list[MessageExt], ctx: Any) -> ConsumeMessageContext:
        hc = ConsumeMessageContext(consumer_group=group, msg_list=msgs, mq=ctx.message_queue)
        _run_hooks(hooks, "consume_message_before", hc)
        return hc

    if is_async:

        async def hooked_async(msgs: list[MessageExt], ctx: Any) -> Any:
            hc = before(msgs, ctx)
            try:
                result = listener(msgs, ctx)
                if inspect.isawaitable(result):
                    result = await result
            except Exception as exc:
                _after(hooks, hc, None, exc, orderly)
                raise
            _after(hooks, hc, result, None, orderly)
            return result

        return hooked_async

    def hooked(msgs: list[MessageExt], ctx: Any) -> Any:
        hc = before(msgs, ctx)
        try:
            result = listener(msgs, ctx)
        except Exception as exc:
            _after(hooks, hc, None, exc, orderly)
            raise
        _after(hooks, hc, result, None, orderly)
        return result

    return hooked


__all__ = [
    "CONSUME_CONTEXT_TYPE",
    "PULL_DELAY_WHEN_SUSPEND",
    "ConsumeMessageContext",
    "ConsumeMessageHook",
    "ControlledPullLoop",
    "PushControls",
    "wrap_listener_with_hooks",
]
