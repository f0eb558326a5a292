"""Quoted phrases: a passage holding the words a question quotes, verbatim, ranks first on the
keyword path — over the real embedded index and the real keyword path, and no such reordering
when the same words come unquoted."""

from __future__ import annotations

from kgrag.retrieve.phrases import holds, quoted_phrases, telling
from kgrag.retrieve.types import Query
from tests.conftest import pages_fixture

PAGES = {
    "training.md": "# Compliance training\n\nEvery manager must ensure that the team finishes its compliance "
                   "training. Compliance reminders ensure nobody misses the compliance deadline, and we ensure "
                   "the compliance records are kept.",
    "outputs.md": "# Organized by output\n\n| Division | Output |\n| --- | --- |\n| Legal | Ensure compliance |\n"
                  "| Finance | Ensure correctness |",
    "channels.md": "# Slack channels\n\nThe `#ciso` channel reaches the security executive; the `#legal` channel "
                   "reaches the legal team.",
}


kb = pages_fixture(PAGES)


def _keyword_sources(kb, question: str) -> list[str]:
    hits = kb.retriever.paths["bm25"].search(Query(question, 5), 5).hits
    return [chunk.source.rsplit("/", 1)[-1] for chunk in kb.chunk_index.get([h.id for h in hits])]


def test_the_passage_holding_a_quoted_phrase_ranks_first(kb):
    # Unquoted, BM25 prefers the page that repeats "ensure" and "compliance" apart ...
    assert _keyword_sources(kb, "Who must ensure compliance?")[0] == "training.md"
    # ... quoted, the words stand together in one passage only.
    assert _keyword_sources(kb, "Who must 'Ensure compliance'?")[0] == "outputs.md"
    assert _keyword_sources(kb, 'Who must "ensure  compliance"?')[0] == "outputs.md"


def test_a_quoted_phrase_held_nowhere_leaves_the_ranking_as_it_was(kb):
    assert _keyword_sources(kb, "Who must 'ensure training'?") == _keyword_sources(kb, "Who must ensure training?")


def test_quoted_phrases_are_read_around_apostrophes_and_in_chinese_quotes():
    assert quoted_phrases("The 'ext-' prefix: what is GitLab's output to 'Ensure  Compliance'?") == \
        ["ext-", "ensure compliance"]
    assert quoted_phrases("Don't the team's pages say it?") == []
    assert quoted_phrases('What does `gitlab.rb` set, and who sang "Hey Jude"?') == ["gitlab.rb", "hey jude"]
    assert quoted_phrases("《红楼梦》的作者是谁？“最近公共祖先”是什么？") == ["红楼梦", "最近公共祖先"]


def test_a_phrase_is_held_whole_and_only_telling_phrases_reorder():
    assert holds("| Legal | Ensure\n compliance |", "ensure compliance")
    assert not holds("awareness grows", "aware") and holds("be aware.", "aware")
    assert holds("use `#ciso` here", "#ciso") and not holds("#cisox", "#ciso")
    assert holds("《红楼梦》的作者是曹雪芹", "红楼梦")
    assert telling("ensure compliance") and telling("#ciso") and telling("红楼梦") and telling("snake_case")
    assert not telling("aware") and not telling("e2e")
