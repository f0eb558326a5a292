"""Generation without a model server: citation parsing and checking, abstention, extractive
answers on the bundled demo corpus (real English and Chinese text), and the fallback when the
configured LLM cannot be reached (real litellm against a refused port and a silent server)."""

from __future__ import annotations

import socket
import threading
from pathlib import Path

import pytest

from kgrag.config import ChunkingSettings, LLMSettings
from kgrag.generate import Generator
from kgrag.generate.citations import check, normalise_markers, parse_numbers, says_not_in_kb
from kgrag.generate.prompt import EDGE_REACH, build_messages, build_sources
from kgrag.generate.types import Source
from kgrag.ingest.chunking import Chunker
from kgrag.ingest.loaders import load
from kgrag.retrieve.types import Hit
from kgrag.text.sentences import split_sentences
from kgrag.types import Chunk

CORPUS = Path(__file__).resolve().parents[1] / "kgrag" / "demo" / "corpus"
# Small chunks so that the short demo documents get parents with several children.
SMALL_CHUNKS = ChunkingSettings(child_size=300, child_overlap=50, parent_size=800)


def demo_hits(file_name: str, doc_ids: list[str] | None = None) -> list[Hit]:
    """Hits over every searchable chunk of a demo corpus file, in document order, each with its
    parent as context (what the retrieval pipeline hands over after parent expansion)."""
    chunker = Chunker(SMALL_CHUNKS)
    hits = []
    docs = {d.id: d for d in load(CORPUS / file_name)}
    for doc_id in doc_ids or list(docs):
        chunks = chunker.chunk(docs[doc_id])
        parents = {c.id: c for c in chunks if c.is_parent}
        for c in chunks:
            if c.searchable:
                hits.append(Hit(chunk=c, score=1.0 / (len(hits) + 1), parent=parents.get(c.parent_id)))
    return hits


def squeeze(text: str) -> str:
    """Text without whitespace or the ellipsis a shortened snippet ends with."""
    return "".join(text.split()).rstrip("…")


def assert_citations_consistent(answer, hits):
    """Every marker in the text names a listed citation and vice versa; citations point at hits."""
    import re

    in_text = sorted({int(n) for n in re.findall(r"\[(\d+)\]", answer.text)})
    assert in_text == [c.n for c in answer.citations]
    hit_chunks = {h.chunk.id: h for h in hits}
    for c in answer.citations:
        hit = hit_chunks[c.chunk_id]
        assert (c.doc_id, c.source, c.title) == (hit.chunk.doc_id, hit.chunk.source, hit.chunk.title)
        assert squeeze(c.snippet) in squeeze(hit.context.text)


# --- citation markers --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("inner", "numbers"),
    [("1", [1]), ("1, 2", [1, 2]), ("2,2", [2]), ("1-3", [1, 2, 3]), ("Source 2", [2]), ("1，3", [1, 3]), ("1–999", [1, 999])],
)
def test_parse_numbers(inner, numbers):
    assert parse_numbers(inner) == numbers


def test_markers_are_normalised_to_single_brackets():
    text, invalid = normalise_markers("A holds [1, 2]. B holds【3】. C holds [1][3]. D holds [Source 2].", 3)
    assert text == "A holds [1][2]. B holds[3]. C holds [1][3]. D holds [2]."
    assert invalid == []


def test_citation_to_a_source_not_given_is_removed_and_flagged():
    text, invalid = normalise_markers("The LCA is the deepest shared ancestor [7]. It is unique [1, 9].", 2)
    assert text == "The LCA is the deepest shared ancestor. It is unique [1]."
    assert invalid == ["[7]", "[9]"]
    text, invalid = normalise_markers("【0】Zero is no source number.", 2)
    assert (text, invalid) == ("Zero is no source number.", ["[0]"])


def test_brackets_that_are_not_citations_are_left_alone():
    text = "The array a[i] holds [x, y] pairs; see the [LCA] article."
    assert normalise_markers(text, 2) == (text, [])


def sources_for(hits):
    return build_sources(hits, max_sources=8, max_context_chars=6000)


def test_check_flags_uncited_and_unsupported_sentences():
    sources = sources_for(demo_hits("lowest_common_ancestor.md"))
    assert "Definition" in sources[0].text and "Binary lifting" in sources[1].text
    answer = (
        "The lowest common ancestor of v and w is the deepest node that has both as descendants. [1] "
        "Binary lifting answers each query in O(log n) time [2]. "
        "Penguins migrate across the Antarctic ice shelf every winter [1]. "
        "Tarjan's offline algorithm uses a union-find structure."
    )
    result = check(answer, sources)
    assert result.invalid == []
    # The marker after the first full stop belongs to the first sentence: it is supported.
    assert result.unsupported == [
        "Penguins migrate across the Antarctic ice shelf every winter.",
        "Tarjan's offline algorithm uses a union-find structure.",
    ]
    assert result.cited == [1, 2]
    assert result.claims[2] == ["Binary lifting answers each query in O(log n) time."]


def test_check_works_on_chinese_answers():
    sources = sources_for(demo_hits("zuijin_gonggong_zuxian.md"))
    result = check("最近公共祖先是同时以 u 和 v 为后代的深度最大的节点【1】。企鹅每年冬天穿越南极冰架【1】。", sources)
    assert result.text.startswith("最近公共祖先是同时以 u 和 v 为后代的深度最大的节点[1]。")
    assert result.unsupported == ["企鹅每年冬天穿越南极冰架。"]


@pytest.mark.parametrize(
    "text",
    [
        "The knowledge base does not contain the answer.",
        "The provided sources do not mention when it was built.",
        "I cannot answer this question from the sources.",
        "There is no information about that.",
        "知识库中没有相关信息。",
        "资料中未提及这一点。",
    ],
)
def test_declining_phrases_are_recognised(text):
    assert says_not_in_kb(text)


@pytest.mark.parametrize(
    "text",
    ["The LCA of v and w is the deepest common ancestor [1].", "倍增法每次询问只需 O(log n) [1]。", "The source code is open."],
)
def test_ordinary_answers_are_not_declines(text):
    assert not says_not_in_kb(text)


def test_sentence_split_joins_soft_wraps_and_keeps_markdown_lines_apart():
    text = "## Definition\n\nIn a rooted tree, the LCA of v and w is the\ndeepest node. Dr. Smith wrote it.\n- item one\n- item two"
    sentences = [s.text for s in split_sentences(text)]
    assert sentences == [
        "## Definition",
        "In a rooted tree, the LCA of v and w is the deepest node.",
        "Dr. Smith wrote it.",
        "- item one",
        "- item two",
    ]
    for s in split_sentences(text):
        assert squeeze(text[s.start : s.end]) == squeeze(s.text)
    assert [s.text for s in split_sentences("第一句。第二句！\n第三\n句？")] == ["第一句。", "第二句！", "第三句？"]


# --- sources and prompt --------------------------------------------------------------------


def test_hits_sharing_a_parent_share_one_source_and_the_budget_holds():
    hits = demo_hits("lowest_common_ancestor.md")
    assert len({h.context.id for h in hits}) < len(hits), "the fixture should have sibling children"
    sources = build_sources(hits, max_sources=8, max_context_chars=900)
    assert [s.n for s in sources] == list(range(1, len(sources) + 1))
    assert len(sources) == len({h.context.id for h in hits})
    assert sum(len(s.text) for s in sources) <= 900
    for s in sources:
        assert len({h.context.id for h in s.hits}) == 1
        assert squeeze(s.text) in squeeze(s.context.text)
    capped = build_sources(hits, max_sources=1, max_context_chars=6000)
    assert len(capped) == 1 and capped[0].hits == [h for h in hits if h.context.id == hits[0].context.id]


def test_a_long_context_is_cut_around_the_matched_child():
    hits = demo_hits("lowest_common_ancestor.md")
    last_child = [h for h in hits if h.parent is not None][-1]
    assert len(last_child.parent.text) > 2 * len(last_child.chunk.text)
    (source,) = build_sources([last_child], max_sources=8, max_context_chars=150)
    assert len(source.text) <= 150 + EDGE_REACH  # opened early to start with a whole sentence
    assert squeeze(last_child.chunk.text[20:60]) in squeeze(source.text)
    assert source.text.strip() != last_child.parent.text[:150].strip()  # not simply the head


def test_packing_a_source_as_the_matched_child_or_best_last():
    hits = demo_hits("lowest_common_ancestor.md")
    children = [h for h in hits if h.parent is not None]
    chunked = build_sources(children, max_sources=8, max_context_chars=6000, context="chunk")
    assert len(chunked) == len(children)  # siblings no longer share their parent's source
    assert [s.text for s in chunked] == [h.chunk.text.strip() for h in children]
    ranked = build_sources(hits, max_sources=2, max_context_chars=6000)
    best_last = build_sources(hits, max_sources=2, max_context_chars=6000, order="best_last")
    assert [s.context.id for s in best_last] == [s.context.id for s in reversed(ranked)]
    assert [s.n for s in best_last] == [1, 2]


def test_the_generator_packs_the_llm_prompt_by_its_settings():
    from kgrag.config import LLMSettings
    from kgrag.generate.generator import Generator

    hits = demo_hits("lowest_common_ancestor.md")
    settings = LLMSettings(model="openai/none", max_sources=1, context="chunk")
    (source,) = Generator(settings)._sources(hits)
    assert source.text == hits[0].chunk.text.strip() and source.hits[0].parent is None
    extractive = Generator(LLMSettings(max_sources=1, context="chunk"))._sources(hits)
    assert extractive[0].context.id == hits[0].context.id  # the extractive answerer reads parents


def test_prompt_numbers_sources_with_headers():
    hits = demo_hits("lowest_common_ancestor.md")
    messages = build_messages("What is an LCA?", sources_for(hits))
    user = messages[-1]["content"]
    assert "Source [1] (Lowest Common Ancestor (LCA)" in user and "Source [2] (" in user
    assert "Question: What is an LCA?" in user
    assert "[n]" in messages[0]["content"] or "[1]" in messages[0]["content"]


# --- abstention ----------------------------------------------------------------------------


def refused_llm() -> LLMSettings:
    """An LLM configured at a port nobody listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return LLMSettings(model="openai/smollm2", api_base=f"http://127.0.0.1:{port}/v1", api_key="x", timeout_s=5)


def test_abstains_in_the_language_of_the_question_without_calling_the_llm():
    generator = Generator(refused_llm())
    hits = demo_hits("lowest_common_ancestor.md")
    english = generator.answer("Who built the Eiffel Tower?", hits, abstain=True)
    assert english.abstained and english.mode == "abstain"
    assert english.text.startswith("The knowledge base does not say")
    assert english.citations == [] and english.fallback_reason is None  # no call was tried
    chinese = generator.answer("埃菲尔铁塔是谁建造的？", [], abstain=False)
    assert chinese.abstained and chinese.text.startswith("知识库中没有相关信息")


def test_empty_question_is_refused():
    with pytest.raises(ValueError, match="question"):
        Generator(LLMSettings()).answer("  ", demo_hits("lowest_common_ancestor.md"))


# --- extractive answers ----------------------------------------------------------------------


def test_extractive_english_definition():
    hits = demo_hits("lowest_common_ancestor.md")
    answer = Generator(LLMSettings()).answer("What is the lowest common ancestor of two nodes in a tree?", hits)
    assert answer.mode == "extractive" and not answer.abstained and answer.model is None
    assert "is the deepest node that has both v and w as descendants" in answer.text
    assert answer.text.rstrip().endswith("[1].")
    assert answer.citations[0].chunk_id == hits[0].chunk.id
    assert answer.invalid_citations == [] and answer.unsupported_sentences == []
    assert_citations_consistent(answer, hits)


def test_extractive_answer_spans_two_sentences_and_cites_the_right_rank():
    # The answer is spread over two sentences of the Moscow State University passage, which
    # retrieval ranked third behind two unrelated passages.
    hits = demo_hits("wikipedia_en.jsonl", ["hotpotdev-1", "hotpotdev-2", "hotpotdev-0"])
    msu = [h for h in hits if h.chunk.doc_id == "hotpotdev-0"]
    answer = Generator(LLMSettings()).answer("When was Moscow State University founded?", hits)
    assert "1755" in answer.text and "Moscow State University" in answer.text
    assert [c.doc_id for c in answer.citations] == ["hotpotdev-0"]
    n = answer.citations[0].n
    contexts = list(dict.fromkeys(h.context.id for h in hits))  # one source per parent
    assert n == contexts.index(msu[0].context.id) + 1 == 3
    assert answer.text.count(f"[{n}]") == 2
    assert_citations_consistent(answer, hits)


def test_extractive_chinese():
    hits = demo_hits("zuijin_gonggong_zuxian.md")
    generator = Generator(LLMSettings())
    answer = generator.answer("倍增法每次询问需要多少时间？", hits)
    assert answer.mode == "extractive"
    assert "倍增法" in answer.text and "O(log n)" in answer.text
    assert "[1]。" in answer.text or "[2]。" in answer.text  # marker before the full stop, no space
    assert_citations_consistent(answer, hits)
    definition = generator.answer("什么是最近公共祖先？", hits)
    assert "深度最大" in definition.text
    assert_citations_consistent(definition, hits)


def test_extractive_with_no_shared_words_quotes_the_top_hit():
    hits = demo_hits("lowest_common_ancestor.md")
    answer = Generator(LLMSettings()).answer("Quelle est la réponse ?", hits)
    assert answer.mode == "extractive" and [c.n for c in answer.citations] == [1]
    assert squeeze(answer.citations[0].snippet) in squeeze(hits[0].chunk.text)


def test_extractive_stream_is_one_token_then_the_answer():
    hits = demo_hits("lowest_common_ancestor.md")
    events = list(Generator(LLMSettings()).stream("What is the lowest common ancestor?", hits))
    assert [e["type"] for e in events] == ["token", "answer"]
    assert events[0]["text"] == events[1]["answer"]["text"]
    assert events[1]["answer"]["mode"] == "extractive" and events[1]["answer"]["citations"]


def test_answer_to_dict_is_plain_json():
    import json

    answer = Generator(LLMSettings()).answer("What is an LCA?", demo_hits("lowest_common_ancestor.md"))
    data = json.loads(json.dumps(answer.to_dict()))
    assert set(data) >= {"text", "citations", "abstained", "mode", "invalid_citations", "unsupported_sentences"}
    assert set(data["citations"][0]) == {"n", "chunk_id", "doc_id", "source", "title", "page", "section_path",
                                         "snippet", "highlights"}


def test_citation_highlights_are_the_quoted_sentences_in_the_cited_chunk():
    """The page expands a source to its full chunk and marks ``highlights``: each span must be
    a sentence the extractive answer quotes, found at that place in the cited chunk's text."""
    from kgrag.text.sentences import plain

    hits = demo_hits("lowest_common_ancestor.md")
    answer = Generator(LLMSettings()).answer("What is the lowest common ancestor?", hits)
    texts = {h.chunk.id: h.chunk.text for h in hits}
    assert answer.citations
    for citation in answer.citations:
        assert citation.highlights, citation
        for start, end in citation.highlights:
            quoted = " ".join(plain(texts[citation.chunk_id][start:end]).split())
            assert 0 <= start < end <= len(texts[citation.chunk_id])
            assert quoted[:40] in " ".join(answer.text.split()), (quoted, answer.text)


# --- LLM failures fall back to the extractive answer ----------------------------------------


def test_unreachable_llm_falls_back_to_extractive_and_names_the_error():
    hits = demo_hits("lowest_common_ancestor.md")
    question = "What is the lowest common ancestor of two nodes in a tree?"
    answer = Generator(refused_llm()).answer(question, hits)
    assert answer.mode == "extractive" and not answer.abstained
    assert "Connection" in answer.fallback_reason and "refused" in answer.fallback_reason
    assert answer.text == Generator(LLMSettings()).answer(question, hits).text
    events = list(Generator(refused_llm()).stream(question, hits))
    assert [e["type"] for e in events] == ["token", "answer"]
    assert events[1]["answer"]["fallback_reason"] and events[0]["text"] == events[1]["answer"]["text"]


@pytest.fixture
def silent_server():
    """A port that accepts connections and never answers: the LLM call must time out."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    accepted = []
    stop = threading.Event()

    def accept():
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                accepted.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join()
    for c in accepted:
        c.close()
    server.close()


def test_llm_timeout_falls_back_to_extractive(silent_server):
    settings = LLMSettings(model="openai/smollm2", api_base=f"http://127.0.0.1:{silent_server}/v1", api_key="x", timeout_s=1.0)
    hits = demo_hits("lowest_common_ancestor.md")
    answer = Generator(settings).answer("What is the lowest common ancestor?", hits)
    assert answer.mode == "extractive" and "Timeout" in answer.fallback_reason
    assert answer.timings_ms["llm"] >= 900
    assert answer.citations


def test_source_header_names_title_section_and_page():
    hit = demo_hits("lowest_common_ancestor.md")[1]
    hit.chunk.page = hit.context.page = 3
    source = Source(n=1, hits=[hit], text=hit.context.text, offset=hit.context.start)
    assert source.header.startswith("Lowest Common Ancestor (LCA) | ")
    assert source.header.endswith("| page 3")


def test_a_window_opens_with_the_whole_sentence_it_would_cut():
    """A context longer than its share is cut to a window around the matched child; the window
    opens where the sentence at its edge opens, so the answer quotes "Specialists carry …" and
    not "carry …" (a child chunk may itself start mid-sentence, after the chunker's overlap)."""
    from kgrag.generate.generator import Generator

    filler = " ".join(f"Specialists also file report number {i} each week." for i in range(12))
    text = f"### Specialist\n\nSpecialists carry responsibility for a certain topic. {filler}"
    parent = Chunk(id="d#p0", doc_id="d", text=text, start=0, end=len(text), is_parent=True)
    at = text.index("carry")
    child = Chunk(id="d#c1", doc_id="d", text=text[at:at + 300], start=at, end=at + 300, parent_id="d#p0")
    (source,) = build_sources([Hit(chunk=child, score=1.0, parent=parent)], max_sources=1, max_context_chars=320)
    assert source.text.startswith(("### Specialist", "Specialists carry")), source.text[:40]
    assert text[source.offset:source.offset + len(source.text)] == source.text
    answer = Generator(LLMSettings(max_sources=1, max_context_chars=320)).answer(
        "Who carries responsibility for a certain topic?", [Hit(chunk=child, score=1.0, parent=parent)])
    assert answer.text.startswith("Specialists carry responsibility for a certain topic [1]"), answer.text


def test_extractive_answerers_are_one_registry_and_a_new_one_is_one_line(monkeypatch):
    """The generator asks ``extractive.registry.ANSWERERS`` in order (no hand-written chain): an
    answerer put before the others takes the questions it answers, the rest fall through to
    the answerers after it, and the sentence answerer, which answers anything, stays last."""
    import datetime as dt

    from kgrag.config import LLMSettings
    from kgrag.generate.extractive import registry
    from kgrag.generate.extractive.answerer import Extracted
    from kgrag.generate.extractive.asked import Asked
    from kgrag.generate.extractive.subjects import pick
    from kgrag.generate.generator import Generator
    from kgrag.text.sentences import split_sentences

    names = [a.name for a in registry.ANSWERERS]
    assert len(set(names)) == len(names) and names[-1] == "best_sentences"

    class Shouting:
        name = "shouting"

        def answer(self, asked, sources):
            if not asked.question.isupper():
                return None
            first = split_sentences(sources[0].text)[0]
            return Extracted(f"LOUDLY: {first.text} [{sources[0].n}]", [pick(sources[0], first)])

    monkeypatch.setattr(registry, "ANSWERERS", (Shouting(), *registry.ANSWERERS))
    chunk = Chunk(id="d#c0", doc_id="d", text="Kiwis are birds. They cannot fly.", start=0, end=33)
    hits = [Hit(chunk=chunk, score=1.0)]
    generator = Generator(LLMSettings())
    loud = generator.answer("WHAT ARE KIWIS?", hits)
    assert loud.text == "LOUDLY: Kiwis are birds. [1]" and loud.citations[0].chunk_id == "d#c0"
    quiet = generator.answer("Can kiwis fly?", hits)
    assert not quiet.text.startswith("LOUDLY") and "cannot fly" in quiet.text
    assert registry.extract(Asked("Can kiwis fly?", dt.date(2026, 1, 1)), generator._sources(hits))[0] == "best_sentences"
