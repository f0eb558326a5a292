"""Tuned numbers of retrieval: one frozen dataclass per concern, each number named and described
in one line. The runs that chose them are in docs/decisions.md ("Tuned numbers"); a setting a
user may change lives in ``kgrag.config`` instead, and these are what its defaults do not cover.

Code reads them through the module-level instances (``GRAPH_WALK.hop_decay``); a test or an
experiment swaps one with ``dataclasses.replace`` on the module that reads it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GraphWalkTuning:
    """How the graph path scores the chunks it reaches (``kgrag.retrieve.paths``, ``walk_scores``)."""

    hop_decay: float = 0.7  # an entity reached in h hops counts hop_decay**h as much as one the question names
    edge_half: float = 1.0  # an edge of weight w passes w / (w + edge_half) of the score on
    max_entity_df: float = 0.05  # an entity in more than this share of the chunks is too general to follow
    mentions_per_entity: int = 50  # most-mentioning chunks taken per reached entity
    evidence_per_chunk: int = 3  # paths kept as a chunk's evidence in the trace
    home_bonus: float = 3.0  # a path into the chunk whose title names the entity gains this factor
    home_candidates: int = 150  # chunks read when looking for entities' home chunks
    home_candidates_per_seed: int = 20  # ... of them per seed entity
    feedback_confidence: float = 0.8  # a seed taken from the best keyword hit, not from the question
    words_weight: float = 1.0  # a reached chunk × (1 + this × share of the question's content words it holds)
    table_weight: float = 1.0  # ... plus this when a table of it has a column the question asks for
    frontier: int = 20  # entities a walk continues from at each further hop
    secondary_share: float = 0.1  # weight of a chunk's other paths from the same question entity
    mention_boost: float = 0.25  # a chunk mentioning an entity n times gains 1 + mention_boost × ln n


@dataclass(frozen=True)
class LinkingTuning:
    """How a question's names are linked to entities (``linking``, ``word_forms``, ``acronyms``,
    ``describe``, ``types.Excluded``)."""

    max_expansions_per_entity: int = 8  # aliases of one linked entity added to the keyword query
    min_fuzzy_chars: int = 8  # shorter question spans are linked exactly only
    min_fuzzy_word: int = 6  # shorter words are not spelled "near" anything (Flight/Light)
    fuzzy_word_ratio: int = 85  # rapidfuzz ratio from which two words are one spelled differently
    acronym_max_parts: int = 50  # an acronym with more sections next to it is not a list of its letters
    acronym_neighbours_read: int = 400  # its parts are among its heaviest neighbours
    described_min_coverage: float = 1.0  # share of a described entity's name (IDF-weighted) the question must hold
    max_described: int = 5  # entities a description ("the rule about X") may link
    described_confidence: float = 0.5  # a described entity's link confidence (an exact link's is 1.0)
    max_type_reads: int = 40  # candidates whose type is read before giving up on structural ones
    excluded_min_mentions: int = 2  # a chunk naming an excluded topic this often is about it
    pinyin_confidence: float = 0.8  # a link made by a name's pinyin (an exact link's is 1.0)
    pinyin_max_han: int = 4  # longest Chinese alias a question may spell in pinyin


@dataclass(frozen=True)
class FollowUpTuning:
    """How a follow-up is told from a question that stands alone (``kgrag.retrieve.followup``)."""

    max_short_words: int = 8  # an English follow-up longer than this says enough to stand alone
    max_short_han: int = 14  # the same for a Chinese one, in characters
    max_referring_words: int = 12  # a question referring back ("the next one") may say this much more
    max_referring_han: int = 16  # the same for a Chinese one, in characters
    max_carried_turns: int = 3  # a chain of follow-ups is completed from at most this many questions
    replayed_turns: int = 6  # the last turns read again to know what the conversation is about
    asking_han: int = 2  # a Chinese question with at most this many characters besides its asking only asks


@dataclass(frozen=True)
class RankingTuning:
    """Fusion, the abstention gate's reading depth, and positional follow-ups."""

    structure_top: int = 10  # graph hits ``evidence.graph_has_structure`` looks at
    gate_depth: int = 5  # hits the gate reads (the answer is built from the first few)
    coverage_depth: int = 3  # hits whose words the gate's coverage counts
    neighbour_scan: int = 12  # chunks either way a cited section's neighbour is looked for


@dataclass(frozen=True)
class VouchTuning:
    """What vouches for text in another script than a question of one script (the gate)."""

    min_meaning: float  # best language-neutral similarity of the question with an other-script sentence
    min_dense: float | None  # ... and the best hit's dense similarity (None: not read)


@dataclass(frozen=True)
class CrossScriptTuning:
    """Questions answered from text in another script (``kgrag.retrieve.cross_script``)."""

    min_dense_across: float = 0.80  # dense similarity a best hit in the other script needs without sentence meaning, or with a name missing
    imputed_gap: float = 0.03  # blind paths vote for an other-script chunk this far under the own script's best
    # The translation's first hit keeps a place in the first ``translated_head_place`` when its
    # BM25 score is at least this share of the question's own keyword search's first
    # (docs/decisions.md, "The translation's first hit keeps a place in the first five": the sweep)
    translated_head_share: float = 1.25
    translated_head_place: int = 5
    meaning_sources: int = 3  # the first hits whose other-script sentences the gate weighs by meaning
    # share of an English question's relation words one English sentence of a mixed Chinese passage
    # must hold to vouch for it (the gate; docs/decisions.md, "Mixed passages")
    own_sentence_relation: float = 0.75
    latin_question: VouchTuning = VouchTuning(min_meaning=0.815, min_dense=None)  # an English question
    non_latin_question: VouchTuning = VouchTuning(min_meaning=0.85, min_dense=0.80)  # a Chinese one


GRAPH_WALK = GraphWalkTuning()
LINKING = LinkingTuning()
FOLLOW_UPS = FollowUpTuning()
RANKING = RankingTuning()
CROSS_SCRIPT = CrossScriptTuning()
