"""The Telegram worker keeps aiogram's parsed-response models built for its lifetime."""

from __future__ import annotations

import gc
import weakref

from aiogram.methods import AnswerCallbackQuery, EditMessageText, GetUpdates, SendMessage
from aiogram.methods.base import Response
from askgate_telegram import client


def test_response_models_survive_a_garbage_collection() -> None:
    """pydantic caches `Response[T]` weakly; rebuilt after each collection it cost the
    worker a sixth of its CPU. The worker holds every method's, so a collection keeps
    them (without `client.RESPONSE_TYPES` each of these is collected)."""
    assert client.RESPONSE_TYPES
    methods = (SendMessage, EditMessageText, GetUpdates, AnswerCallbackQuery)
    refs = [weakref.ref(Response[m.__returning__]) for m in methods]  # type: ignore[name-defined]
    gc.collect()
    assert [r() is not None for r in refs] == [True] * len(methods)
