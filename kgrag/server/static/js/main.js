// Wires the page together: the ask form (validation, loading and error states, the streamed
// answer), sources, trace, feedback and the graph explorer.

import {streamQuery} from "./api.js";
import {$, $$, clear, el} from "./dom.js";
import {t, translatePage} from "./i18n.js";
import {citationOrder, openSource, renderAnswerText, renderFlags, renderSources} from "./answer.js";
import {renderTrace} from "./trace.js";
import {renderFeedback} from "./feedback.js";
import {createExplorer} from "./explorer.js";
import {citedChunks, createThread} from "./thread.js";

const TOP_K = {min: 1, max: 20};

/** What the page knows about the answer on screen. */
function emptyState(question = "") {
  return {question, traceId: null, retrieval: null, text: "", answer: null, order: new Map(), marked: new Set()};
}
let state = emptyState();
let explorer;
let thread;

function showError(message) {
  const box = $("#error");
  box.textContent = message;
  box.hidden = false;
}

function errorMessage(err) {
  if (err.status) return t("http_error", {status: err.status, message: err.message});
  return err.code === "stream_broken" ? t("stream_broken", {detail: err.message}) : t("unreachable", {detail: err.message});
}

function setBusy(busy, text = "") {
  $("#ask-button").disabled = busy;
  $("#ask").setAttribute("aria-busy", String(busy));
  const status = $("#status");
  status.textContent = text;
  status.classList.toggle("busy", busy);
}

function clearResult() {
  $("#error").hidden = true;
  $("#result").hidden = true;
  for (const id of ["#answer", "#flags", "#warnings", "#sources", "#trace", "#feedback"]) clear($(id));
  $("#warnings").hidden = true;
  $("#answer").className = "answer";
}

/** The request from the form, or an error message naming what is wrong. */
function readForm() {
  const question = $("#q").value.trim();
  if (!question) return {error: t("empty_question")};
  const modes = $$("input[name=mode]:checked").map((x) => x.value);
  if (!modes.length) return {error: t("no_modes")};
  const raw = $("#k").value.trim();
  const topK = Number(raw);
  if (!/^\d+$/.test(raw) || topK < TOP_K.min || topK > TOP_K.max) return {error: t("bad_top_k", TOP_K)};
  return {request: {question, modes, top_k: topK}};
}

async function ask(ev) {
  ev.preventDefault();
  const {request, error} = readForm();
  clearResult();
  if (error) { showError(error); $("#q").focus(); return; }
  // The answer on screen becomes an earlier turn of the conversation, sent as history.
  if (state.answer) thread.add(state.question, state.answer.text, citedChunks(state.answer, state.retrieval));
  const history = thread.history();
  if (history.length) request.history = history;
  state = emptyState(request.question);
  const started = performance.now();
  setBusy(true, t("searching"));
  try {
    await streamQuery(request, {retrieval: onRetrieval, token: onToken, answer: onAnswer});
    setBusy(false, t("done", {ms: Math.round(performance.now() - started)}));
  } catch (err) {
    setBusy(false);
    clearResult();
    showError(errorMessage(err));
  }
}

function onRetrieval(retrieval) {
  state.retrieval = retrieval;
  state.traceId = retrieval.trace_id;
  $("#result").hidden = false;
  $("#answer").classList.add("streaming");
  $("#status").textContent = t("writing");
  renderWarnings(retrieval.trace?.warnings ?? []);
  renderTrace($("#trace"), retrieval, null, explorer);
}

/** Options the server ran degraded (kgrag/request_options.py), each naming the missing setting. */
function renderWarnings(warnings) {
  const list = $("#warnings");
  clear(list);
  for (const w of warnings) list.append(el("li", {}, w));
  list.hidden = !warnings.length;
}

function onToken(text) {
  state.text += text;
  renderAnswerText($("#answer"), state.text, state.order, openSource);
}

function onAnswer(answer) {
  state.answer = answer;
  state.text = answer.text;
  state.order = citationOrder(answer.text); // the checked text decides the numbering
  const box = $("#answer");
  box.classList.remove("streaming");
  box.classList.toggle("abstained", Boolean(answer.abstained));
  renderAnswerText(box, answer.text, state.order, openSource);
  renderFlags($("#flags"), answer);
  const hits = new Map((state.retrieval?.hits ?? []).map((h) => [h.chunk_id, h]));
  renderSources($("#sources"), answer.citations, state.order, hits, state.marked);
  if (state.retrieval) renderTrace($("#trace"), state.retrieval, answer, explorer);
  const shown = state;
  renderFeedback($("#feedback"), () => ({
    question: shown.question, answer: shown.answer.text, citations: shown.answer.citations,
    marked: shown.marked, traceId: shown.answer.trace_id ?? shown.traceId,
  }));
}

function start() {
  translatePage();
  explorer = createExplorer();
  thread = createThread($("#thread"), () => { state = emptyState(); clearResult(); setBusy(false); $("#q").focus(); });
  $("#ask").addEventListener("submit", ask);
  $("#new-conversation").addEventListener("click", () => thread.reset());
  $("#entity-search").addEventListener("submit", (ev) => { ev.preventDefault(); explorer.search($("#entity-q").value); });
  $("#q").focus();
  document.body.dataset.ready = "true";
}

start();
