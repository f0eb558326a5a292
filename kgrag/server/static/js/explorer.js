// The graph explorer: find an entity by any alias, see its aliases, neighbours within two hops
// (with edge weights) and the chunks that mention it, and click through. Reads only
// GET /v1/entities?q= and GET /v1/entities/<key>, so it works on every graph store.

import {getJson} from "./api.js";
import {$, clear, el, joinParts} from "./dom.js";
import {t} from "./i18n.js";
import {pathChain} from "./trace.js";
import {highlighted, whereOf} from "./answer.js";
import {drawNeighbourhood, legendItems} from "./graph.js";

const HOPS = 2;
const LIMIT = 20;

export function createExplorer() {
  const status = $("#explorer-status");
  const error = $("#explorer-error");
  const results = $("#entity-results");
  const view = $("#entity-view");
  const pathBox = $("#entity-path");
  let generation = 0; // a slower, older request must not overwrite a newer one

  const handlers = {openEntity, openPath};

  async function run(task) {
    const mine = ++generation;
    error.hidden = true;
    status.textContent = t("looking_up");
    status.classList.add("busy");
    try {
      const out = await task();
      return mine === generation ? out : undefined;
    } catch (err) {
      if (mine === generation) {
        error.textContent = err.status ? t("http_error", {status: err.status, message: err.message})
          : t("unreachable", {detail: err.message});
        error.hidden = false;
      }
      return undefined;
    } finally {
      if (mine === generation) { status.textContent = ""; status.classList.remove("busy"); }
    }
  }

  async function search(query) {
    const q = query.trim();
    if (!q) { error.textContent = t("type_name"); error.hidden = false; return; }
    const body = await run(() => getJson(`/v1/entities?q=${encodeURIComponent(q)}&limit=${LIMIT}`));
    if (!body) return;
    clear(results);
    if (!body.entities.length) { results.append(el("li", {class: "meta"}, t("no_entities"))); return; }
    for (const e of body.entities) {
      results.append(el("li", {},
        el("button", {type: "button", class: "link entity-link", dataset: {key: e.key}, onclick: () => openEntity(e.key)}, e.name),
        " ", el("span", {class: "meta"}, joinParts([e.type, e.aliases.slice(0, 6).join(", "), t("chunks_count", {count: e.chunks})]))));
    }
    if (body.entities.length === 1) openEntity(body.entities[0].key);
  }

  async function openEntity(key, {keepPath = false} = {}) {
    if (!keepPath) pathBox.hidden = true;
    const entity = await run(() => getJson(`/v1/entities/${encodeURIComponent(key)}?hops=${HOPS}&limit=${LIMIT}`));
    if (!entity) return;
    renderEntity(entity);
    document.getElementById("explorer").scrollIntoView({block: "start", behavior: "smooth"});
  }

  /** A graph path from an answer's trace: the chain, then its first entity opened. */
  function openPath(path) {
    clear(pathBox);
    pathBox.append(el("h3", {}, t("path_title")), pathChain(path, handlers));
    pathBox.hidden = false;
    openEntity(path.nodes[path.nodes.length - 1], {keepPath: true});
  }

  function renderEntity(entity) {
    clear(view);
    view.dataset.key = entity.key;
    view.append(el("h3", {}, entity.name, entity.curated ? el("span", {class: "badge"}, t("curated")) : null),
      el("div", {class: "meta"}, joinParts([entity.type, entity.key, t("mentioned_in", {count: entity.mention_chunks})])));
    view.append(el("h4", {}, t("aliases")), el("ul", {class: "chips aliases"}, entity.aliases.map((a) => el("li", {}, a))));
    view.append(el("h4", {}, t("neighbours")));
    if (entity.neighbours.length) {
      const drawing = el("div", {id: "entity-graph", class: "entity-graph", role: "img",
                                 "aria-label": t("graph_label", {name: entity.name})});
      const evidence = el("div", {id: "edge-evidence", class: "edge-evidence", hidden: true});
      view.append(drawing, el("ul", {class: "legend"}, legendItems(entity).map(({type, colour}) =>
        el("li", {}, el("span", {class: "swatch", style: `background:${colour}`}), type))),
        el("p", {class: "meta"}, t("graph_hint")), evidence);
      view.hidden = false; // drawn into a visible box, so it has a size
      drawNeighbourhood(drawing, entity, {onNode: (key) => openEntity(key), onEdge: (a, b) => openEdge(evidence, a, b)});
    }
    view.append(neighbourList(entity.neighbours));
    view.append(el("h4", {}, t("chunks_count", {count: entity.chunks.length})),
      el("ul", {class: "entity-chunks"}, entity.chunks.map(chunkItem)));
    view.hidden = false;
  }

  /** The chunks that evidence the edge a–b, under the drawing. */
  async function openEdge(box, a, b) {
    const edge = await run(() => getJson(`/v1/relations?a=${encodeURIComponent(a.key)}&b=${encodeURIComponent(b.key)}&limit=${LIMIT}`));
    if (!edge) return;
    clear(box);
    box.dataset.edge = `${a.key}\u0000${b.key}`;
    box.append(el("h4", {}, t("edge_title", {a: a.name, b: b.name})),
      el("div", {class: "meta"}, joinParts([t("weight", {w: Number(edge.weight.toFixed(2))}),
        [...new Set(edge.relations.map((r) => r.type))].join(", ")])),
      el("ul", {class: "entity-chunks"}, edge.chunks.map(chunkItem)));
    box.hidden = false;
  }

  function neighbourList(neighbours) {
    if (!neighbours.length) return el("p", {class: "meta"}, t("no_neighbours"));
    const box = el("div", {});
    for (const hops of [1, 2]) {
      const group = neighbours.filter((n) => n.hops === hops);
      if (!group.length) continue;
      box.append(el("div", {class: "meta"}, t(`hop${hops}`)), el("ul", {class: "neighbours", dataset: {hops}},
        group.map((n) => el("li", {},
          el("button", {type: "button", class: "link neighbour", dataset: {key: n.key}, onclick: () => openEntity(n.key)}, n.name),
          " ", el("span", {class: "meta"}, joinParts([n.relation,
            n.weight != null ? t("weight", {w: Number(n.weight.toFixed(2))}) : "",
            n.via.length ? t("via", {list: n.via.join(" → ")}) : ""]))))));
    }
    return box;
  }

  function chunkItem(chunk) {
    const text = el("div", {class: "chunk-text", hidden: true});
    highlighted(text, chunk.text ?? "", []);
    return el("li", {},
      el("button", {type: "button", class: "link", onclick: () => { text.hidden = !text.hidden; }}, chunk.title || chunk.chunk_id),
      " ", el("span", {class: "meta"}, joinParts([whereOf(chunk), t("mentions", {count: chunk.count})])), text);
  }

  return {search, openEntity, openPath};
}
