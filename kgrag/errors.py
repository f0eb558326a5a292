"""One error root for everything kgrag raises on purpose.

Callers that must tell causes apart (the HTTP layer maps them to status codes, the CLI to exit
codes) catch these categories, never a library's exception types:

- ``InputError``: the caller asked for something that cannot be served as asked (a bad filter,
  mode, file or argument); the message names the field or value. HTTP 4xx, CLI exit 2.
- ``StoreError``: a store refused an operation or failed (a broken or unreachable backend, a
  constraint). HTTP 5xx unless a subclass says otherwise.
- ``ConfigError``: settings that cannot work (unknown store kind, a model path that is not a
  model); raised at start-up.
- ``ModelError``: a model could not be loaded or run.

Members (tests/test_errors.py finds every exception class in kgrag and checks this):
InputError ← ApiError (server; its own 4xx status), RetrievalError, LoadError, GlossaryError,
AliasError, TransferError, EvalConfigError, EvalDataError, CompareError, RemoteRefused (a server's
4xx, ``kgrag.client``) (and SearchFilter.parse raises it);
StoreError ← StoreConflict (a refusal: HTTP 409), StoreDamaged (a store file that needs
``kgrag check --repair``), PartialWrite (ingest), KnowledgeBaseError (eval),
ArcadeUnavailable and Neo4jUnavailable (server launchers), RemoteError (a server's 5xx or no answer, ``kgrag.client``);
ModelError ← EmbedderError, RerankerError, NerError, LLMError, RewriteRejected.
InputError and ConfigError are ValueErrors, so every class that was one still is;
KnowledgeBaseError, ArcadeUnavailable and Neo4jUnavailable stay RuntimeErrors, for callers that catch those.
"""

from __future__ import annotations


class KgragError(Exception):
    """Root of every error kgrag raises deliberately; the message names the problem."""


class InputError(KgragError, ValueError):
    """Input that cannot be served as given; the message names the offending field or value."""


class StoreError(KgragError):
    """A store refused an operation (bad input or a broken backend); message names the problem."""


class StoreConflict(StoreError):
    """A store refused a change that conflicts with what it holds (a key already taken, an
    entity it does not have): the caller's conflict (HTTP 409), not a broken store (503)."""


REPAIR_COMMAND = "kgrag check --repair"


class StoreDamaged(StoreError):
    """A store's file is damaged (emptied, truncated, overwritten, not the database it was): the
    message names the file and the command that rebuilds it (the HTTP layer shows only the
    file's name, ``kgrag.server.errors.redact_paths``)."""

    def __init__(self, path: str, reason: str):
        self.path, self.reason = str(path), reason
        super().__init__(damage_message(self.path, reason))


def damage_message(name: str, reason: str) -> str:
    """One line for a damaged store file: what is wrong and what to run."""
    return f"{name} is damaged ({reason}): run '{REPAIR_COMMAND}' to rebuild it from its sources and the other store"


class ConfigError(KgragError, ValueError):
    """Settings that cannot work."""


class ModelError(KgragError):
    """A model could not be loaded or run."""
