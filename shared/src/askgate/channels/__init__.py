"""The channel kit: everything a chat worker shares, so that a worker is an adapter.

A worker implements `ChannelAdapter` (how to show a prompt, how to turn it into its
summary, which destination a target names) and handles its platform's input with the
inbound helpers; `ChannelService` runs it. See docs/writing-a-channel.md.
"""

from askgate.channels.adapter import (
    ChannelAdapter,
    ExtraMessage,
    FindsPrompts,
    MessageFinaliser,
    SentPrompt,
)
from askgate.channels.credentials import TenantConfigs, id_list
from askgate.channels.inbound import (
    Answering,
    Dedupe,
    InHandElsewhere,
    Outcome,
    PromptIndex,
    PromptRef,
    Selections,
    may_answer,
)
from askgate.channels.service import ChannelService, ChannelSettings, consumer_name
from askgate.channels.worker import REMINDER, ChannelWorker, DeliveryPolicy, RateGate
from askgate.domain.errors import PermanentError, PlatformError, ThrottledError, TransientError
from askgate.store.ledger import StalePolicy

__all__ = [
    "REMINDER",
    "Answering",
    "ChannelAdapter",
    "ChannelService",
    "ChannelSettings",
    "ChannelWorker",
    "Dedupe",
    "DeliveryPolicy",
    "ExtraMessage",
    "FindsPrompts",
    "InHandElsewhere",
    "MessageFinaliser",
    "Outcome",
    "PermanentError",
    "PlatformError",
    "PromptIndex",
    "PromptRef",
    "RateGate",
    "Selections",
    "SentPrompt",
    "StalePolicy",
    "TenantConfigs",
    "ThrottledError",
    "TransientError",
    "consumer_name",
    "id_list",
    "may_answer",
]
