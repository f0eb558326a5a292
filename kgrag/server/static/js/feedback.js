// Rating an answer: helpful / wrong / missing source, an optional comment, and the sources the
// reader marked as right; sent to POST /v1/feedback with the answer's trace id.

import {postJson} from "./api.js";
import {clear, el} from "./dom.js";
import {t} from "./i18n.js";

const RATINGS = [["helpful", "fb_helpful"], ["wrong", "fb_wrong"], ["missing_source", "fb_missing"]];

/** Build the feedback bar for one answer; ``current()`` returns what to send with it. */
export function renderFeedback(node, current) {
  clear(node);
  let rating = null;
  const note = el("span", {class: "meta fb-status", role: "status"});
  const buttons = RATINGS.map(([value, key]) => el("button", {type: "button", class: "secondary", "aria-pressed": "false",
    dataset: {rating: value}, onclick: () => choose(value)}, t(key)));
  const comment = el("textarea", {class: "fb-comment", maxlength: 2000, placeholder: t("fb_comment"), "aria-label": t("fb_comment")});
  const send = el("button", {type: "button", class: "fb-send", onclick: submit}, t("fb_send"));

  function choose(value) {
    rating = value;
    for (const b of buttons) b.setAttribute("aria-pressed", String(b.dataset.rating === value));
  }

  async function submit() {
    if (!rating) { note.textContent = t("fb_pick"); return; }
    send.disabled = true;
    try {
      const {question, answer, citations, marked, traceId} = current();
      await postJson("/v1/feedback", {
        rating, question, answer, comment: comment.value.trim(), trace_id: traceId ?? null,
        citations: citations.map((c) => ({n: c.n, chunk_id: c.chunk_id})),
        relevant_chunks: [...marked],
      });
      note.textContent = t("fb_sent");
      node.dataset.sent = "true";
    } catch (err) {
      note.textContent = err.status ? t("http_error", {status: err.status, message: err.message})
        : t("unreachable", {detail: err.message});
      send.disabled = false;
    }
  }

  node.append(el("span", {}, t("fb_prompt")), ...buttons, comment, send, note);
}
