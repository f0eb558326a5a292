"""Builds the parts of the system from one Settings object (factories by name).

The CLI, the server and the eval harness all assemble their pipeline here, so the same
configuration yields the same components everywhere. Models load lazily: a command that needs
no model (``stats``, an ingest that finds nothing new) never pays for one.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from kgrag.config import Settings
from kgrag.errors import ConfigError
from kgrag.ingest.chunking import Chunker
from kgrag.ingest.job import IngestJob
from kgrag.ingest.revision import revision, stale
from kgrag.ingest.sources import Sources
from kgrag.models.base import Embedder, Reranker
from kgrag.stores.base import ChunkIndex, GraphStore
from kgrag.stores.consistency import FileCheck, WriteJournal
from kgrag.stores.factory import build_chunk_index, build_graph_store, build_journal

log = logging.getLogger(__name__)
MINILM_DIM = 384  # all-MiniLM-L6-v2, the embedder of every knowledge base built before "routed"

if TYPE_CHECKING:  # imported lazily at run time: the models they load are heavy
    from kgrag.asking import Asking
    from kgrag.conversations import ConversationStore
    from kgrag.generate.generator import Generator
    from kgrag.models.meaning import CrossLingualMeaning
    from kgrag.retrieve.llm_rewrites import LLMDriver
    from kgrag.retrieve.pipeline import Retriever
    from kgrag.retrieve.query_llm import LLMQueryRewriter


class Components:
    """Stores and models for one process, each created once on first use."""

    def __init__(self, settings: Settings, *, embedder: Embedder | None = None, recognizer=None):
        """``embedder``/``recognizer`` share already-loaded models (tests, the eval harness)."""
        self.settings = settings
        self._chunk_index: ChunkIndex | None = None
        self._graph: GraphStore | None = None
        self._journal: WriteJournal | None = None
        self._embedder = embedder
        self._recognizer = recognizer
        self._owns_recognizer = False  # a shared recognizer is closed by whoever made it
        self._retriever: Retriever | None = None
        self._reranker: Reranker | None = None
        self._reranker_loaded = False
        self.reranker_failure: str | None = None  # why the configured reranker did not load
        self._generator: Generator | None = None
        self._meaning: CrossLingualMeaning | None = None
        self._meaning_built = False
        self._query_llm: LLMQueryRewriter | None = None
        self._llm_driver: LLMDriver | None = None
        self._asking: Asking | None = None
        self._conversations: ConversationStore | None = None

    @property
    def chunk_index(self) -> ChunkIndex:
        if self._chunk_index is None:
            self._chunk_index = build_chunk_index(self.settings)
        return self._chunk_index

    @property
    def graph(self) -> GraphStore:
        if self._graph is None:
            self._graph = build_graph_store(self.settings)
        return self._graph

    @property
    def journal(self) -> WriteJournal:
        """The write journal of this knowledge base (``<data_dir>/journal.sqlite``)."""
        if self._journal is None:
            self._journal = build_journal(self.settings)
        return self._journal

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            from kgrag.models.embedder import build_embedder

            self._embedder = build_embedder(self._embedder_for_this_knowledge_base())
        return self._embedder

    def _embedder_for_this_knowledge_base(self):
        """A knowledge base's vectors fix its embedding space: one embedded by MiniLM alone
        (before the script-routed default, 384-dim) keeps being searched and extended with
        MiniLM, so an upgrade does not turn every query into a dimension error. Chinese dense
        search there needs a re-ingest into a new data dir (docs/languages.md, "Which model embeds
        what")."""
        settings = self.settings.embedder
        if settings.name == "routed" and self.chunk_index.dim == MINILM_DIM:
            log.warning("%s holds %d-dim MiniLM vectors: using MiniLM for it (re-ingest into a new data dir "
                        "for the Chinese dense path)", self.settings.data_dir, MINILM_DIM)
            return settings.model_copy(update={"name": "minilm"})
        return settings

    @property
    def recognizer(self):
        if self._recognizer is None and self.settings.extraction.use_ner:
            from kgrag.models.ner import EntityRecognizer

            self._recognizer = EntityRecognizer(
                self.settings.extraction, processes=self.settings.extraction.ner_process_count()
            )
            self._owns_recognizer = True
        return self._recognizer

    def chunker(self) -> Chunker:
        count = None
        if self.settings.chunking.unit == "tokens":
            count = self.embedder.count_tokens
        return Chunker(self.settings.chunking, count)

    def build_extractor(self, graph: GraphStore):
        from kgrag.ingest.extract import Extractor
        from kgrag.lexicon.gazetteer import Gazetteer
        from kgrag.lexicon.glossary import glossary_aliases

        # Curated names (glossary, alias admin) also match written in lower case ("heap").
        any_case = glossary_aliases(graph.curated_entities())
        return Extractor(
            self.settings.extraction, Gazetteer(graph.alias_table(), any_case=any_case), self.recognizer,
            self.term_extractor(), self.llm_extractor(),
        )

    def llm_extractor(self):
        """Optional LLM extraction (``kgrag.ingest.llm_extract``), or None when switched off."""
        if not self.settings.extraction.llm:
            return None
        if not self.settings.llm.model:
            raise ConfigError("extraction.llm is on but no LLM is configured (set llm.model)")
        from kgrag.ingest.llm_extract import LLMExtractor

        return LLMExtractor(self.settings.llm, self.settings.extraction)

    def term_extractor(self):
        """Domain terms and structure (``kgrag.ingest.terms``), or None when switched off."""
        from kgrag.ingest.terms import TermExtractor

        ex = self.settings.extraction
        if ex.terms == "off":
            return None
        return TermExtractor(ex.spacy_model, ex.terms, ex.structure)

    def ingest_job(self) -> IngestJob:
        return IngestJob(
            self.chunk_index,
            self.graph,
            self.chunker(),
            embedder_factory=lambda: self.embedder,
            extractor_factory=lambda: self.build_extractor(self.graph),
            journal=self.journal,
            metadata=self.settings.metadata,
            revision=self.ingest_revision(),
            data_dir=self.settings.data_dir,
            sources=Sources(self.settings.data_dir),
        )

    def ingest_revision(self) -> str:
        """The revision documents are ingested under now (``kgrag.ingest.revision``): these
        settings, with the embedder this knowledge base really uses."""
        return revision(self.settings, self._embedder_for_this_knowledge_base())

    def stale_documents(self) -> list[str]:
        """Documents stored under another revision (other settings, an older kgrag): answered
        from as they were built until their sources are ingested again."""
        return stale(self.graph.document_hashes(), self.ingest_revision())

    @property
    def reranker(self) -> Reranker | None:
        """The shared cross-encoder, or None when ``retrieval.reranker_path`` is unset or names a
        model that cannot be loaded: then ``reranker_failure`` says why, the fused order stands
        and every request that reranks carries the reason in its trace."""
        if not self._reranker_loaded:
            if self.settings.retrieval.reranker_path:
                from kgrag.models.reranker import build_reranker

                try:
                    self._reranker = build_reranker(self.settings.retrieval)
                except Exception as exc:  # noqa: BLE001 - any failure to load (files, libraries) falls back
                    self.reranker_failure = (f"the reranker at retrieval.reranker_path "
                                             f"{self.settings.retrieval.reranker_path!r} could not be loaded "
                                             f"({type(exc).__name__}: {str(exc)[:300]}): fused order kept")
                    log.warning("%s", self.reranker_failure)
            self._reranker_loaded = True
        return self._reranker

    @property
    def retriever(self):
        if self._retriever is None:
            from kgrag.retrieve.pipeline import Retriever

            rewriter = None
            if self.settings.llm.model:
                from functools import partial

                from kgrag.retrieve.followup_llm import rewrite_followup

                rewriter = partial(rewrite_followup, self.settings.llm)
            self._retriever = Retriever(
                self.settings.retrieval, self.chunk_index, self.graph, self.embedder,
                reranker=self.reranker, rewriter=rewriter, query_llm=self.query_llm,
                across_meaning=self._across_meaning(),
                reranker_failure=self.reranker_failure,
            )
            if self.settings.retrieval.iterate_driver == "llm" and self.llm_driver is not None:
                self._retriever.driver = self.llm_driver
        return self._retriever

    @property
    def query_llm(self) -> LLMQueryRewriter | None:
        """The LLM that rewrites questions and judges iteration rounds (None without llm.model)."""
        if self._query_llm is None and self.settings.llm.model:
            from kgrag.retrieve.query_llm import LLMQueryRewriter

            self._query_llm = LLMQueryRewriter(self.settings.llm)
        return self._query_llm

    @property
    def llm_driver(self) -> LLMDriver | None:
        """The LLM iteration driver (``kgrag.retrieve.llm_rewrites.LLMDriver``), falling back to the
        retriever's LLM-free one; None without llm.model."""
        if self._llm_driver is None and self.query_llm is not None:
            from kgrag.retrieve.llm_rewrites import LLMDriver

            retriever = self.retriever
            self._llm_driver = LLMDriver(
                self.query_llm, retriever.entity_driver, self._texts_in_order,
                lambda text: [le.key for le in retriever.linker.link(text)])
        return self._llm_driver

    def iteration_driver(self, name: str):
        """The driver named ``entities`` or ``llm``; ``llm`` without llm.model is an LLM driver
        whose every round is the LLM-free plan, the trace saying no LLM is configured."""
        if name == "entities":
            return self.retriever.entity_driver
        if self.llm_driver is not None:
            return self.llm_driver
        from kgrag.retrieve.llm_rewrites import LLMDriver

        retriever = self.retriever
        return LLMDriver(None, retriever.entity_driver, self._texts_in_order,
                         lambda text: [le.key for le in retriever.linker.link(text)])

    def _texts_in_order(self, ids: list[str]) -> list[str]:
        by_id = {c.id: c.text for c in self.chunk_index.get(ids)}
        return [by_id[i] for i in ids if i in by_id]

    @property
    def generator(self):
        if self._generator is None:
            from kgrag.generate.generator import Generator

            self._generator = Generator(self.settings.llm, meaning=self.meaning())
        return self._generator

    def _across_meaning(self):
        """The gate's reading of other-script sentences (``kgrag.generate.other_script``), or None
        without a multilingual model."""
        meaning = self.meaning()
        if meaning is None:
            return None
        from kgrag.generate.other_script import OtherScriptMeaning
        from kgrag.models.routed import ScriptRoutedEmbedder
        from kgrag.retrieve.tuning import CROSS_SCRIPT

        embedder, index = self.embedder, self.chunk_index
        if isinstance(embedder, ScriptRoutedEmbedder):  # e5 stays unloaded for an English corpus
            return OtherScriptMeaning(meaning, CROSS_SCRIPT.meaning_sources,
                                      lambda: embedder.searches_multilingual(index.holds_dense_columns))
        return OtherScriptMeaning(meaning, CROSS_SCRIPT.meaning_sources)

    def meaning(self):
        """Language-neutral similarity (``kgrag.models.meaning``) over the embedder's multilingual
        model, or None when it has none (an English-only model); one, whose sentence vectors the
        gate and the answerer share."""
        if not self._meaning_built:
            self._meaning, self._meaning_built = self._new_meaning(), True
        return self._meaning

    def _new_meaning(self):
        from kgrag.models import language_means
        from kgrag.models.embedder import E5Embedder
        from kgrag.models.meaning import CrossLingualMeaning
        from kgrag.models.routed import ScriptRoutedEmbedder

        embedder = self.embedder
        if isinstance(embedder, ScriptRoutedEmbedder) and embedder.language_means is not None:
            return CrossLingualMeaning(lambda: embedder.multilingual_model, embedder.language_means)
        if isinstance(embedder, E5Embedder):
            return CrossLingualMeaning(lambda: embedder, language_means.load())
        return None

    @property
    def asking(self) -> Asking:
        """The seam every front end asks through (``kgrag.asking``), over this process's
        retriever and generator; the conversation store opens on first use."""
        if self._asking is None:
            from kgrag.asking import Asking
            from kgrag.conversations import ConversationStore

            opened = ConversationStore.on_demand(self.settings)

            def conversations() -> ConversationStore:
                self._conversations = opened()
                return self._conversations

            self._asking = Asking(self, conversations)
        return self._asking

    def close(self, *, check_files: bool = False) -> list[str]:
        """``check_files``: then run the integrity check of each store file just closed, so a
        passed one is noted beside the file (``SqliteDatabase.problems``) and the server's next
        start skips it. The ingest job asks for it: it just wrote the files, and closing
        checkpoints their WAL, so only a check after the close stays valid (8.5 s at 100k
        passages, paid once by an ingest of hours instead of by the first start after it).
        Returns what the checks found ([] when sound or not asked)."""
        if self._retriever is not None:
            self._retriever.close()
        if self._owns_recognizer and self._recognizer is not None:
            self._recognizer.close()
        for store in (self._chunk_index, self._graph, self._journal, self._conversations):
            if store is not None:
                store.close()
        found: list[str] = []
        if check_files:
            for store in (self._chunk_index, self._graph):
                if isinstance(store, FileCheck):
                    found += store.check_file()
        return found
