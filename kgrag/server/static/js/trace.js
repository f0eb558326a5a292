// The retrieval trace, readable: per path found / skipped and why, alias expansions, linked
// entities (an ambiguous alias's candidates listed once), timings, and per chunk the paths
// that found it and the graph paths that led to it (which open in the graph explorer).

import {clear, el} from "./dom.js";
import {t} from "./i18n.js";
import {conversationSummary} from "./thread.js";

const PATHS = ["dense", "bm25", "graph"];

export function renderTrace(node, retrieval, answer, handlers) {
  clear(node);
  const trace = retrieval.trace;
  const hits = retrieval.hits;
  const rows = [
    [t("tr_paths"), pathSummary(trace, hits)],
    [t("tr_linked"), linkedSummary(trace.linked_entities, handlers)],
    [t("tr_expansions"), trace.expansions.length ? trace.expansions.join(", ") : t("tr_none")],
  ];
  const conversation = conversationSummary(trace.conversation);
  if (conversation) rows.unshift([t("tr_conversation"), conversation]);
  if (trace.described_entities?.length) rows.push([t("tr_described"), linkedSummary(trace.described_entities, handlers)]);
  if (trace.feedback_entities?.length) rows.push([t("tr_feedback"), trace.feedback_entities.join(", ")]);
  if (trace.path_weights) rows.push([t("tr_weights"), weightSummary(trace)]);
  rows.push([t("tr_reranker"), trace.reranker ?? t("tr_none")]);
  if (answer) rows.push([t("tr_answer"), answer.model ? `${answer.mode} (${answer.model})` : answer.mode]);
  rows.push([t("tr_timings"), Object.entries(trace.timings_ms).map(([k, v]) => `${k} ${v}`).join(", ")]);
  node.append(el("dl", {}, rows.flatMap(([term, value]) => [el("dt", {}, term), el("dd", {}, value)])));
  node.append(el("h3", {}, t("tr_hits")), el("ol", {class: "hits"}, hits.map((h) => hitItem(h, handlers))));
}

function pathSummary(trace, hits) {
  return el("ul", {}, PATHS.map((path) => {
    const label = t(`path_${path}`);
    if (trace.skipped_paths?.[path]) return el("li", {}, t("tr_skipped", {path: label, reason: trace.skipped_paths[path]}));
    if (!trace.modes.includes(path)) return el("li", {}, t("tr_not_asked", {path: label}));
    const count = hits.filter((h) => path in h.trace.paths).length;
    return el("li", {}, t("tr_found", {path: label, count}));
  }));
}

/** One line per question span: "LCA → Lowest Common Ancestor (exact)", candidates once. */
function linkedSummary(linked, handlers) {
  if (!linked.length) return t("tr_none");
  const bySurface = new Map();
  for (const e of linked) {
    if (!bySurface.has(e.surface)) bySurface.set(e.surface, []);
    bySurface.get(e.surface).push(e);
  }
  return el("ul", {}, [...bySurface].map(([surface, entities]) => {
    const first = entities[0];
    const names = entities.map((e) => entityButton(e.key, e.name, handlers));
    const line = el("li", {}, `${surface} → `, ...names.flatMap((b, i) => (i ? [", ", b] : [b])),
      ` (${first.method}${first.method === "exact" ? "" : " " + first.score.toFixed(2)})`);
    if (first.candidates?.length > 1) line.append(" · ", t("tr_ambiguous", {list: first.candidates.join(", ")}));
    return line;
  }));
}

function entityButton(key, label, handlers) {
  return el("button", {type: "button", class: "link entity-link", dataset: {key},
    onclick: () => handlers.openEntity(key)}, label ?? key);
}

function hitItem(hit, handlers) {
  const found = Object.entries(hit.trace.paths).map(([p, r]) => `${t(`path_${p}`)} #${r.rank}`).join(", ");
  const ranks = [t("tr_fused", {rank: hit.trace.fused_rank})];
  const placed = placedBy(hit.trace.placed_by);
  if (placed) ranks.push(placed);
  if (hit.trace.rerank_rank != null) ranks.push(t("tr_reranked", {rank: hit.trace.rerank_rank}));
  const item = el("li", {},
    el("b", {}, hit.title || hit.doc_id), " ", el("code", {}, hit.chunk_id),
    el("div", {class: "meta"}, `${t("tr_found_by", {list: found})} · ${ranks.join(" · ")}`));
  if (hit.trace.graph_paths.length) {
    item.append(el("div", {class: "meta"}, t("tr_graph_paths")),
      el("ul", {}, hit.trace.graph_paths.map((p) => el("li", {}, pathChain(p, handlers), " ",
        el("button", {type: "button", class: "link open-path", onclick: () => handlers.openPath(p)}, t("tr_open_path"))))));
  }
  return item;
}

/** "graph 0.2 (why) · bm25 1 · dense 1": the weight each path voted with in fusion. */
function weightSummary(trace) {
  return Object.entries(trace.path_weights).map(([path, w]) => {
    const why = trace.path_weight_reasons?.[path];
    return `${t(`path_${path}`)} ${w}${why ? ` (${why})` : ""}`;
  }).join(" · ");
}

/** Why fusion put the hit where it is, when a rule (not the fused score) did. */
function placedBy(placed) {
  if (!placed || placed.rule === "fusion") return null;
  if (placed.rule === "path_head") return t("tr_placed_head", {path: t(`path_${placed.path}`)});
  if (placed.rule === "entity_page") return t("tr_placed_page", {entity: placed.surface});
  if (placed.rule === "bridge") return t("tr_placed_bridge", {entity: placed.surface, page: placed.page_of});
  if (placed.rule === "previous_answer") return t("tr_placed_previous");
  if (placed.rule === "position") return t(`tr_placed_${placed.direction}`);
  return placed.rule;
}

/** "a —2→ b —1→ c" with every entity clickable. */
export function pathChain(path, handlers) {
  const chain = el("span", {class: "chain"});
  path.nodes.forEach((key, i) => {
    if (i) {
      const w = path.weights?.[i - 1];
      chain.append(el("span", {class: "weight"}, w != null ? `—${Number(w.toFixed ? w.toFixed(2) : w)}→` : "→"));
    }
    chain.append(entityButton(key, key, handlers));
  });
  return chain;
}
