// The pass explorer (compiler/core/explorer_page.py): renders the JSON that
// compiler/core/explorer.py records. State is on globalThis.explorer for the
// browser test (tests/web/explorer.mjs).
"use strict";
const FOLD_NODES = 120; // graphs with more nodes are folded (drawn when opened)
const data = JSON.parse(document.getElementById("explorer-data").textContent);
const explorer = globalThis.explorer = { data, stage: -1, node: null, rendered: [], drawn: [], errors: [],
  ready: false };
const $ = (id) => document.getElementById(id);
const el = (tag, props = {}, text) => { const e = Object.assign(document.createElement(tag), props);
  if (text !== undefined) e.textContent = text; return e; };
let viz = null;

function sourceText(o) { return `${o.op || "?"} at ${o.source || "(no source line)"}`; }

function timeline() {
  const nav = $("timeline");
  data.stages.forEach((s, i) => {
    const b = el("button", { id: `stage-${i}`, className: s.changed ? "changed" : "",
      title: s.changed ? "changed the graph" : "left the graph unchanged" });
    b.append(el("span", {}, String(i)), el("span", {}, s.name + (s.changed ? " *" : "")),
      el("span", { className: "time" }, `${(s.seconds * 1e3).toFixed(2)} ms`),
      el("span", { className: "count" }, `${s.nodes}`));
    b.onclick = () => select(i);
    nav.append(b);
  });
  const changed = data.stages.filter((s) => s.changed).length;
  $("summary").textContent = `${data.stages.length} stages, ${changed} changed the graph (*); ` +
    `${data.onnx.length} ONNX nodes`;
}

function rules(s) {
  const box = $("rules");
  box.replaceChildren();
  const fired = el("ul", { id: "fired" });
  for (const [rule, n] of s.fired) fired.append(el("li", {}, `${rule} x${n}`));
  const declined = el("ul", { id: "declined", className: "declined" });
  for (const [rule, reason, n] of s.declined) declined.append(el("li", {}, `${rule} x${n}: ${reason}`));
  box.append(el("h3", {}, "Rules fired"), s.fired.length ? fired : el("p", { className: "note" }, "(none)"),
    el("h3", {}, "Rules declined (the pattern matched, the rewrite said no)"),
    s.declined.length ? declined : el("p", { className: "note" }, "(none)"));
}

function diff(s, i) {
  const pre = $("diff");
  pre.replaceChildren();
  const byLine = new Map(s.ir.map((n) => [n.line, n]));
  let line = 0;
  for (const [mark, text] of s.diff) {
    const row = el("div", { className: mark === "+" ? "add" : mark === "-" ? "del" : "" }, `${mark} ${text}`);
    if (mark !== "-") {
      const node = byLine.get(line);
      if (node) {
        row.classList.add("node");
        row.dataset.node = node.id;
        row.onclick = () => pick(node.id);
      }
      line += 1;
    }
    pre.append(row);
  }
}

function dot(s, previous) {
  const before = new Set(previous ? previous.ir.map((n) => n.id) : []);
  const lines = ["digraph ir {", "rankdir=TB; node [shape=box, style=\"rounded,filled\", fillcolor=white, " +
    "fontname=\"Helvetica\", fontsize=10];"];
  for (const n of s.ir) {
    const fresh = previous && !before.has(n.id);
    lines.push(`n${n.id} [id="ir-${n.id}", label=${JSON.stringify(n.op)}` +
      `${fresh ? ", fillcolor=\"#dcfce4\"" : ""}];`);
    for (const p of n.inputs) lines.push(`n${p} -> n${n.id};`);
  }
  lines.push("}");
  return lines.join("\n");
}

function draw(i) {
  const s = data.stages[i];
  const box = $("graph");
  box.replaceChildren();
  if (!viz) {
    box.append(el("p", { className: "note" }, "Graph drawing needs viz-global.js beside this page " +
      "(npm ci in the project before compiling, or run: pytensor-onnx explore DIR)."));
    return;
  }
  try {
    const svg = viz.renderSVGElement(dot(s, data.stages[i - 1]));
    svg.querySelectorAll("g.node").forEach((g) => {
      const id = Number(g.id.replace("ir-", ""));
      g.style.cursor = "pointer";
      g.onclick = () => pick(id);
    });
    box.append(svg);
    explorer.drawn[i] = true;
  } catch (e) {
    explorer.errors.push(`stage ${i}: ${e.message}`);
    box.append(el("p", { className: "note" }, `Graphviz failed: ${e.message}`));
  }
}

function select(i) {
  const s = data.stages[i];
  explorer.stage = i;
  document.querySelectorAll("#timeline button").forEach((b, k) => b.classList.toggle("selected", k === i));
  $("stage-title").textContent = `${i}: ${s.name} (${s.file}) - ${(s.seconds * 1e3).toFixed(2)} ms, ` +
    `${s.nodes} nodes, ${s.changed ? "changed the graph" : "no change"}`;
  rules(s);
  diff(s, i);
  const box = $("graph-box");
  const folded = s.ir.length > FOLD_NODES;
  $("graph-summary").textContent = `graph (${s.ir.length} nodes${folded ? ", folded: open to draw" : ""})`;
  box.open = !folded;
  box.ontoggle = () => { if (box.open && !explorer.drawn[i]) draw(i); };
  $("graph").replaceChildren();
  if (!folded) draw(i);
  explorer.rendered[i] = true;
}

function pick(id) {
  explorer.node = id;
  document.querySelectorAll("#diff .picked").forEach((r) => r.classList.remove("picked"));
  const row = document.querySelector(`#diff div[data-node="${id}"]`);
  if (row) { row.classList.add("picked"); row.scrollIntoView({ block: "nearest" }); }
  const node = data.stages[explorer.stage].ir.find((n) => n.id === id);
  const box = $("provenance");
  box.replaceChildren();
  if (!node) { box.textContent = `node ${id} is not in this stage`; return; }
  box.append(el("p", {}, `IR node #${id}: ${node.op} (line ${node.line + 1})`));
  const list = el("ul", { id: "ir-origins" });
  for (const o of node.origins) list.append(el("li", {}, sourceText(o)));
  box.append(el("p", {}, "From PyTensor:"), node.origins.length ? list : el("p", { className: "note" }, "(no origin)"));
}

function onnxList() {
  const ul = $("onnx");
  data.onnx.forEach((n, k) => {
    const li = el("li", { id: `onnx-${k}` }, `${n.op} (${n.name})`);
    li.onclick = () => pickOnnx(k);
    ul.append(li);
  });
}

function pickOnnx(k) {
  const n = data.onnx[k];
  document.querySelectorAll("#onnx li").forEach((li, j) => li.classList.toggle("picked", j === k));
  select(data.stages.length - 1);
  if (n.ir.length) pick(n.ir[0]);
  const box = $("provenance");
  const head = el("div", { id: "onnx-provenance" });
  head.append(el("p", {}, `ONNX node ${n.name} (${n.op}) was emitted for IR node(s) ` +
    n.ir.map((i) => `#${i}`).join(", ") + " of the final stage; it computes:"));
  const list = el("ul", { id: "onnx-origins" });
  for (const o of n.origins) list.append(el("li", {}, sourceText(o)));
  head.append(list);
  box.prepend(head);
  explorer.onnx = k;
}

explorer.select = select;
explorer.pick = pick;
explorer.pickOnnx = pickOnnx;

async function main() {
  timeline();
  onnxList();
  if (globalThis.Viz) {
    try { viz = await Viz.instance(); } catch (e) { explorer.errors.push(`viz: ${e.message}`); }
  }
  select(data.stages.length - 1);
  explorer.ready = true;
}
main();
