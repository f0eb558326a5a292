"""Conversations the server keeps for a bounded time and size (``conversation_id``)."""

from kgrag.conversations.store import ConversationStore

__all__ = ["ConversationStore"]
