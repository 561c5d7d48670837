"""POP settings (L3): :class:`PopConfig`."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PopConfig"]


@dataclass(frozen=True, kw_only=True)
class PopConfig:
    """POP settings (Java ``BrokerConfig`` names where they exist).

    Attributes:
        revive_interval: seconds between revive scans.
        persist_interval: seconds between checkpoint-file writes (when changed).
        poll_check_interval: seconds between store re-checks of a held POP.
        pop_from_retry_probability: percent of pops that read the retry topic first
            (``popFromRetryProbability``, 20).
        retry_topic_v2: revive into ``%RETRY%<group>+<topic>`` (``enableRetryTopicV2``, false).
        pop_polling_size: held POPs per (topic, group, queue) (``popPollingSize``, 1024).
        max_pop_polling_size: held POPs in total (``maxPopPollingSize``, 100 000).
    """

    revive_interval: float = 0.2
    persist_interval: float = 1.0
    poll_check_interval: float = 0.05
    pop_from_retry_probability: int = 20
    retry_topic_v2: bool = False
    pop_polling_size: int = 1024
    max_pop_polling_size: int = 100_000
