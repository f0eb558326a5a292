"""A follow-up rewritten by a real local LLM (SmolLM2-135M behind llama-cpp-python's server):
either its rewrite passes every constraint and is searched, or it is refused and the rule's
completion is searched; the trace says which, and the right page is found either way."""

from __future__ import annotations

from functools import partial

import pytest

from kgrag.retrieve.followup_llm import accept, rewrite_followup
from kgrag.retrieve.pipeline import Retriever
from kgrag.retrieve.trace import result_dict
from kgrag.types import Turn
from tests.llm_server import llm_settings  # noqa: F401  (session fixture: the running server)
from tests.test_followup import offices  # noqa: F401  (module fixture: the office pages)

pytestmark = [pytest.mark.llm, pytest.mark.slow]


def test_real_llm_rewrite_is_constrained_or_falls_back(offices, llm_settings):  # noqa: F811
    retriever = Retriever(offices.settings.retrieval, offices.chunk_index, offices.graph, offices.embedder,
                          rewriter=partial(rewrite_followup, llm_settings))
    previous = "Where is the Berlin office?"
    result = retriever.retrieve("And what is its phone number?", top_k=5, history=[Turn(previous)])
    conversation = result_dict(result)["trace"]["conversation"]
    assert conversation["followup"]
    if conversation["method"] == "llm":
        assert conversation["fallback_reason"] is None
        completion = result.query.completion
        assert accept(conversation["completed_question"], completion) == conversation["completed_question"]
    else:
        assert conversation["fallback_reason"], conversation
        assert conversation["completed_question"].startswith(previous)
    print("LLM rewrite:", conversation["method"], conversation["completed_question"], conversation["fallback_reason"])
    assert "berlin-office" in [_top_doc_of(h) for h in result.hits[:3]]
    retriever.close()


def _top_doc_of(hit) -> str:
    from pathlib import Path

    return Path(hit.chunk.doc_id).stem
