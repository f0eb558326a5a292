// The conversation on the page: earlier questions and answers stay listed above the current
// answer, and each new question is sent with them as its history (POST /v1/query "history"),
// so "and the next one?" is understood. "New conversation" forgets them.

import {clear, el} from "./dom.js";
import {t} from "./i18n.js";

// The API's bounds (kgrag/server/schemas.py): the last turns only, answers cut to size.
const MAX_TURNS = 20;
const MAX_ANSWER_CHARS = 8000;
const MAX_CITED = 20;

/** The chunks an answer cited, in citation order; an answer citing none: the first hit shown;
 *  an abstention: none. */
export function citedChunks(answer, retrieval) {
  if (answer?.abstained) return [];
  const cited = [...new Set((answer?.citations ?? []).map((c) => c.chunk_id))];
  if (cited.length) return cited;
  const first = retrieval?.hits?.[0]?.chunk_id;
  return first ? [first] : [];
}

export function createThread(list, onReset) {
  let turns = [];

  function render() {
    clear(list);
    list.hidden = !turns.length;
    for (const turn of turns) {
      list.append(el("li", {class: "turn"},
        el("div", {class: "turn-q"}, turn.question),
        el("div", {class: "turn-a"}, turn.answer ?? "")));
    }
  }

  return {
    /** The history to send with the next question, oldest turn first. */
    history: () => turns.slice(-MAX_TURNS).map((turn) => {
      const sent = {question: turn.question};
      if (turn.answer) sent.answer = turn.answer.slice(0, MAX_ANSWER_CHARS);
      if (turn.cited?.length) sent.cited_chunk_ids = turn.cited.slice(0, MAX_CITED);
      return sent;
    }),
    /** Keep an answered question as an earlier turn, with the chunks its answer cited
     *  ("and the next one?" asks for the neighbour of the first). */
    add(question, answer, cited = []) {
      turns.push({question, answer, cited});
      render();
    },
    reset() {
      turns = [];
      render();
      onReset?.();
    },
    get size() { return turns.length; },
  };
}

/** How the trace shows a completed follow-up: "follow-up, searched as: …". */
export function conversationSummary(conversation) {
  if (!conversation) return null;
  if (!conversation.followup) return t("tr_standalone");
  return t("tr_followup", {text: conversation.completed_question});
}
