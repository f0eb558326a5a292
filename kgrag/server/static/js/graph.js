// The graph explorer's drawing: an entity's neighbourhood (1-2 hops) with cytoscape.js
// (vendored: /static/vendor/cytoscape.min.js, loaded by index.html as the global `cytoscape`).
// Edge width is the edge's weight, node colour its type. Clicking a node opens that entity;
// clicking an edge lists the chunks that evidence it (GET /v1/relations). The neighbour list
// below the drawing says the same in text (keyboard and screen readers).

const PALETTE = ["#1f77b4", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#ff7f0e"];
const NO_TYPE = "#7f8793";

/** type → colour for the types of one drawing: distinct colours in the types' sorted order
 * (a hash of the name made CONCEPT and PERSON the same purple). */
export function typeColours(entity) {
  const types = [...new Set([entity.type, ...entity.neighbours.map((n) => n.type)].filter(Boolean))].sort();
  return new Map(types.map((type, i) => [type, PALETTE[i % PALETTE.length]]));
}

/** Nodes and edges of the neighbourhood: each neighbour's path from the entity, edges once. */
export function neighbourhood(entity) {
  const nodes = new Map([[entity.key, {key: entity.key, name: entity.name, type: entity.type, hops: 0}]]);
  for (const n of entity.neighbours) nodes.set(n.key, {key: n.key, name: n.name, type: n.type, hops: n.hops});
  const edges = new Map();
  for (const n of entity.neighbours) {
    const chain = [entity.key, ...n.via, n.key];
    chain.forEach((key, i) => {
      if (!nodes.has(key)) nodes.set(key, {key, name: key, type: null, hops: i});
      if (i === 0) return;
      const [a, b] = [chain[i - 1], key];
      const id = [a, b].sort().join("\u0000");
      const weight = n.weights[i - 1] ?? 1;
      if (!edges.has(id) || edges.get(id).weight < weight) edges.set(id, {id, a, b, weight});
    });
  }
  return {nodes: [...nodes.values()], edges: [...edges.values()]};
}

/**
 * Draws ``entity``'s neighbourhood into ``box`` (returns the cytoscape instance, also kept as
 * ``box.cy``). ``onNode(key)``: a neighbour was clicked; ``onEdge(a, b)``: an edge was (each
 * ``{key, name}``).
 */
export function drawNeighbourhood(box, entity, {onNode, onEdge}) {
  if (typeof window.cytoscape !== "function") return null; // the page still lists neighbours
  const {nodes, edges} = neighbourhood(entity);
  const colours = typeColours(entity);
  const heaviest = Math.max(1, ...edges.map((e) => e.weight));
  const cy = window.cytoscape({
    container: box,
    elements: [
      ...nodes.map((n) => ({data: {id: n.key, label: n.name, colour: colours.get(n.type) ?? NO_TYPE, hops: n.hops, type: n.type ?? ""},
                            classes: n.hops === 0 ? "centre" : ""})),
      ...edges.map((e) => ({data: {id: e.id, source: e.a, target: e.b, weight: e.weight,
                                   width: 1.5 + 6 * (e.weight / heaviest)}})),
    ],
    style: [
      {selector: "node", style: {"background-color": "data(colour)", label: "data(label)", "font-size": 11,
                                 "text-valign": "bottom", "text-margin-y": 3, width: 18, height: 18,
                                 "text-wrap": "ellipsis", "text-max-width": 110, color: "#1d2330"}},
      {selector: "node.centre", style: {width: 28, height: 28, "border-width": 3, "border-color": "#0d2f5c",
                                        "font-weight": "bold"}},
      {selector: "edge", style: {width: "data(width)", "line-color": "#9aa3b5", "curve-style": "bezier"}},
      {selector: "edge.chosen", style: {"line-color": "#1f4e8c"}},
    ],
    layout: {name: "concentric", concentric: (node) => 3 - node.data("hops"), levelWidth: () => 1,
             minNodeSpacing: 24, padding: 16, animate: false},
    minZoom: 0.3, maxZoom: 3, boxSelectionEnabled: false, autoungrabify: true,
  });
  cy.on("tap", "node", (ev) => { if (ev.target.id() !== entity.key) onNode(ev.target.id()); });
  cy.on("tap", "edge", (ev) => {
    cy.edges().removeClass("chosen");
    ev.target.addClass("chosen");
    const [a, b] = [ev.target.source(), ev.target.target()];
    onEdge({key: a.id(), name: a.data("label")}, {key: b.id(), name: b.data("label")});
  });
  box.cy = cy;
  box.dataset.nodes = String(nodes.length);
  box.dataset.edges = String(edges.length);
  return cy;
}

/** The type colours drawn, as a legend. */
export function legendItems(entity) {
  return [...typeColours(entity)].map(([type, colour]) => ({type, colour}));
}
