"""The LLM call, through litellm so that any provider works (OpenAI-compatible servers,
Ollama, vLLM, hosted APIs). litellm is imported on first use: the import takes seconds."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from typing import Any

from kgrag.config import LLMSettings
from kgrag.errors import ModelError

_import_lock = threading.Lock()
_litellm = None


class LLMError(ModelError):
    """The LLM could not be reached or gave no usable answer; the message names the cause."""


def _client() -> Any:
    global _litellm
    if _litellm is None:
        with _import_lock:
            if _litellm is None:
                # Otherwise litellm fetches its price list from the internet at import time.
                os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
                import litellm

                litellm.suppress_debug_info = True  # no "Give Feedback" banners on errors
                _litellm = litellm
    return _litellm


def _arguments(settings: LLMSettings, messages: list[dict[str, str]], **extra: Any) -> dict:
    if not settings.model:
        raise LLMError("no LLM is configured (llm.model is unset)")
    return dict(
        **extra,
        model=settings.model,
        messages=messages,
        api_base=settings.api_base,
        api_key=settings.api_key,
        temperature=settings.temperature,
        max_tokens=settings.max_tokens,
        timeout=settings.timeout_s,
        # Fail fast: the caller falls back to an extractive answer rather than waiting on
        # retries of a server that is down.
        num_retries=0,
        max_retries=0,
        drop_params=True,  # providers that reject e.g. temperature still answer
    )


def _describe(error: Exception) -> str:
    """The error and its root cause (litellm wraps "connection refused" as a server error)."""
    message = " ".join(str(error).split())[:300]
    root: BaseException = error
    seen = {id(root)}
    while (parent := root.__cause__ or root.__context__) is not None and id(parent) not in seen:
        root = parent
        seen.add(id(root))
    text = f"{type(error).__name__}: {message}"
    if root is not error:
        text += f" (cause: {type(root).__name__}: {' '.join(str(root).split())[:200]})"
    return text


def complete(settings: LLMSettings, messages: list[dict[str, str]], **extra: Any) -> str:
    """The model's whole reply (``extra``: further litellm arguments). Raises LLMError."""
    return _reply(settings, messages, **extra)[0]


def _reply(settings: LLMSettings, messages: list[dict[str, str]], **extra: Any) -> tuple[str, Any]:
    """(whole reply, the response's usage or None); an empty reply is an LLMError."""
    litellm = _client()
    try:
        response = litellm.completion(**_arguments(settings, messages, **extra))
        text = response.choices[0].message.content or ""
        usage = getattr(response, "usage", None)
    except LLMError:
        raise
    except Exception as error:  # litellm maps provider failures onto many exception types
        raise LLMError(_describe(error)) from error
    if not text.strip():
        raise LLMError("the model returned an empty answer")
    return text, usage


def json_response_format(settings: LLMSettings, schema: dict[str, Any], name: str = "reply") -> dict[str, Any] | None:
    """The ``response_format`` that constrains a reply to ``schema`` as far as the provider
    allows (``settings.structured_output``); None: the prompt alone asks for the JSON."""
    if settings.structured_output == "json_schema":
        return {"type": "json_schema", "json_schema": {"name": name, "schema": schema}}
    if settings.structured_output == "json_object":
        # llama-cpp-python's server turns the schema into a grammar for the sampler.
        return {"type": "json_object", "schema": schema}
    return None


def complete_structured(settings: LLMSettings, messages: list[dict[str, str]], schema: dict[str, Any],
                        name: str = "reply") -> tuple[str, dict[str, int]]:
    """The model's whole reply constrained to JSON matching ``schema`` (``json_response_format``),
    and its token usage ({"prompt_tokens", "completion_tokens"}, 0 where the server reports
    none). Raises LLMError; the caller validates the JSON."""
    extra: dict[str, Any] = {}
    if (response_format := json_response_format(settings, schema, name)) is not None:
        extra["response_format"] = response_format
    text, usage = _reply(settings, messages, **extra)
    tokens = {key: int(getattr(usage, key, 0) or 0) for key in ("prompt_tokens", "completion_tokens")}
    return text, tokens


def complete_json(settings: LLMSettings, messages: list[dict[str, str]], schema: dict[str, Any],
                  name: str = "reply") -> str:
    """The model's reply constrained to JSON matching ``schema`` as far as the provider allows
    (``settings.structured_output``); the caller still validates it. Raises LLMError."""
    return complete_structured(settings, messages, schema, name)[0]


def stream(settings: LLMSettings, messages: list[dict[str, str]]) -> Iterator[str]:
    """The reply piece by piece as the model writes it. Raises LLMError (possibly mid-way)."""
    litellm = _client()
    try:
        response = litellm.completion(stream=True, **_arguments(settings, messages))
        for chunk in response:
            if not chunk.choices:
                continue
            piece = chunk.choices[0].delta.content
            if piece:
                yield piece
    except LLMError:
        raise
    except Exception as error:
        raise LLMError(_describe(error)) from error
