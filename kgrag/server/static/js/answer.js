// The answer text with clickable citations, and the numbered sources.
//
// The API numbers sources as the prompt did ([2] [3] [5] when 1 and 4 went uncited); the page
// renumbers them 1..n in the order the answer first cites them, the same way while tokens
// stream in and once the checked answer arrives.

import {$, clear, el, joinParts} from "./dom.js";
import {t} from "./i18n.js";

const MARKER = /\[(\d+)\]/g;

/** original source number -> display number (1..n by first citation), extending ``order``. */
export function citationOrder(text, order = new Map()) {
  for (const m of text.matchAll(MARKER)) {
    const n = Number(m[1]);
    if (!order.has(n)) order.set(n, order.size + 1);
  }
  return order;
}

/** The answer text, its [n] markers renumbered and linked to their source. */
export function renderAnswerText(node, text, order, onCite) {
  citationOrder(text, order);
  clear(node);
  let last = 0;
  for (const m of text.matchAll(MARKER)) {
    node.append(text.slice(last, m.index));
    const shown = order.get(Number(m[1]));
    node.append(el("a", {class: "cite", href: `#src-${shown}`, dataset: {n: shown},
      onclick: (ev) => { ev.preventDefault(); onCite(shown); }}, `[${shown}]`));
    last = m.index + m[0].length;
  }
  node.append(text.slice(last));
}

/** The checker's remarks under the answer. */
export function renderFlags(list, answer) {
  clear(list);
  const add = (text) => list.append(el("li", {}, text));
  if (answer.invalid_citations?.length) add(t("invalid_citations", {list: answer.invalid_citations.join(" ")}));
  if (answer.unsupported_sentences?.length) {
    add(t("unsupported", {count: answer.unsupported_sentences.length, list: answer.unsupported_sentences.join(" / ")}));
  }
  if (answer.fallback_reason) add(t("fallback", {reason: answer.fallback_reason}));
}

/** Where a chunk comes from: section path, page, file. */
export function whereOf(item) {
  return joinParts([item.section_path, item.page != null ? t("page", {page: item.page}) : "", item.source]);
}

/** Sources in display order; each expands to its full chunk with the cited sentences marked. */
export function renderSources(list, citations, order, hitsById, marked) {
  clear(list);
  if (!citations.length) {
    list.append(el("li", {class: "meta"}, t("no_citations")));
    return;
  }
  for (const c of citations) if (!order.has(c.n)) order.set(c.n, order.size + 1);
  const sorted = [...citations].sort((a, b) => order.get(a.n) - order.get(b.n));
  for (const c of sorted) list.append(sourceItem(c, order.get(c.n), hitsById.get(c.chunk_id), marked));
}

function sourceItem(citation, shown, hit, marked) {
  const full = el("div", {class: "chunk-text", hidden: true});
  highlighted(full, hit?.text ?? citation.snippet, hit ? citation.highlights ?? [] : []);
  const toggle = el("button", {type: "button", class: "link expand", "aria-expanded": "false",
    onclick: () => setExpanded(item, full.hidden)}, t("show_chunk"));
  const box = el("input", {type: "checkbox", class: "mark-right", dataset: {chunk: citation.chunk_id},
    onchange: (ev) => (ev.target.checked ? marked.add(citation.chunk_id) : marked.delete(citation.chunk_id))});
  box.checked = marked.has(citation.chunk_id);
  const item = el("li", {class: "source", id: `src-${shown}`, dataset: {chunk: citation.chunk_id, n: shown}},
    el("div", {}, el("span", {class: "num"}, `[${shown}]`), el("b", {}, citation.title || citation.doc_id)),
    el("div", {class: "meta where"}, whereOf(citation)),
    el("p", {class: "snippet"}, citation.snippet),
    toggle, full,
    el("label", {class: "right-source"}, box, " ", t("right_source")));
  return item;
}

function setExpanded(item, open) {
  const full = $(".chunk-text", item);
  const toggle = $("button.expand", item);
  full.hidden = !open;
  toggle.setAttribute("aria-expanded", String(open));
  toggle.textContent = t(open ? "hide_chunk" : "show_chunk");
}

/** Show source ``shown``: expand it, scroll to it, flash it. */
export function openSource(shown) {
  const item = document.getElementById(`src-${shown}`);
  if (!item) return;
  setExpanded(item, true);
  item.scrollIntoView({block: "nearest", behavior: "smooth"});
  item.classList.add("flash");
  setTimeout(() => item.classList.remove("flash"), 1500);
}

/** ``text`` into ``node`` with the [start, end) ``spans`` wrapped in <mark>. */
export function highlighted(node, text, spans) {
  clear(node);
  let at = 0;
  for (const [start, end] of [...spans].sort((a, b) => a[0] - b[0])) {
    if (end <= at) continue;
    const from = Math.max(start, at);
    node.append(text.slice(at, from), el("mark", {}, text.slice(from, end)));
    at = end;
  }
  node.append(text.slice(at));
}
