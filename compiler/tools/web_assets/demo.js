// The digits page of `pytensor-onnx demo --web`: draw a digit or pick a test
// image; the model (model.onnx, through the glue module model.js) runs in
// onnxruntime-web's WASM backend, or its WebGPU backend with ?backend=webgpu (the
// page's switch), falling back to WASM with a visible message where the browser
// has no WebGPU adapter. Preprocessing follows sklearn's digits
// (UCI optdigits): a 32x32 binary bitmap, on-pixels counted in 4x4 blocks
// (0-16), divided by 16 as the Python demo does.
import { createSession, run, MODEL } from "./model.js";

const $ = (id) => document.getElementById(id);
const demo = { ready: false, error: null, runs: 0, last: null, backend: null, backendNote: null };
globalThis.demo = demo;

// Why WebGPU cannot be used here, or null when an adapter is available.
async function webgpuMissing() {
  if (!globalThis.isSecureContext) return "not a secure context (serve the page over https or from 127.0.0.1)";
  if (!navigator.gpu) return "this browser has no WebGPU (navigator.gpu is undefined)";
  try {
    return (await navigator.gpu.requestAdapter()) ? null : "navigator.gpu.requestAdapter() found no adapter";
  } catch (e) {
    return `requesting a WebGPU adapter failed: ${e && e.message || e}`;
  }
}

function loadScript(src) {
  return new Promise((resolve, reject) => {
    const s = document.createElement("script");
    s.src = src;
    s.onload = resolve;
    s.onerror = () => reject(new Error(`cannot load ${src}`));
    document.head.append(s);
  });
}

demo.backend = new URLSearchParams(location.search).get("backend") === "webgpu" ? "webgpu" : "wasm";
$("backend-switch").value = demo.backend;
$("backend-switch").addEventListener("change", (e) => { location.search = `?backend=${e.target.value}`; });
if (demo.backend === "webgpu") {
  const reason = await webgpuMissing();
  if (reason) {
    demo.backend = "wasm";
    demo.backendNote = `WebGPU is not available (${reason}); running on WebAssembly.`;
    $("backend-note").textContent = demo.backendNote;
  }
}
// The WebGPU build also runs the WASM backend (nodes WebGPU lacks fall back to it).
await loadScript(demo.backend === "webgpu" ? "ort/ort.webgpu.min.js" : "ort/ort.wasm.min.js");
const ort = globalThis.ort;
// The runtime's .mjs/.wasm files sit in ort/ beside this page (no CDN).
ort.env.wasm.wasmPaths = new URL("ort/", document.baseURI).href;
// Two threads need SharedArrayBuffer, i.e. a cross-origin isolated page (COOP/COEP headers).
ort.env.wasm.numThreads = globalThis.crossOriginIsolated ? 2 : 1;


const inputSpec = MODEL.inputs[0];
const outputName = MODEL.outputs[0].name;

function drawPixels(canvas, pixels) {
  const ctx = canvas.getContext("2d");
  const cell = canvas.width / 8;
  for (let i = 0; i < 64; i++) {
    const v = 255 - Math.round((pixels[i] / 16) * 255);
    ctx.fillStyle = `rgb(${v},${v},${v})`;
    ctx.fillRect((i % 8) * cell, Math.floor(i / 8) * cell, cell, cell);
  }
}

function showResult(probs) {
  let top = 0;
  for (let c = 1; c < probs.length; c++) if (probs[c] > probs[top]) top = c;
  $("prediction").innerHTML = `prediction: <b id="predicted-class">${top}</b> (p = ${probs[top].toFixed(4)})`;
  $("bars").innerHTML = Array.from(probs, (p, c) =>
    `<div class="bar${c === top ? " top" : ""}"><span>${c}</span>` +
    `<div class="track"><div class="fill" style="width:${(100 * p).toFixed(2)}%"></div></div>` +
    `<span class="p">${p.toFixed(4)}</span></div>`).join("");
  return top;
}

/** Classify 64 pixel counts (0-16, row-major 8x8). */
async function classify(pixels, source) {
  const x = Float32Array.from(pixels, (v) => v / 16);
  const t0 = performance.now();
  const out = await run(demo.session, ort, { [inputSpec.name]: x });
  const ms = performance.now() - t0;
  const probs = Array.from(out[outputName].data);
  demo.runs += 1;
  $("infer-time").textContent = `${ms.toFixed(2)} ms`;
  drawPixels($("preview"), pixels);
  const cls = showResult(probs);
  demo.last = { source, pixels: Array.from(pixels), cls, probs, ms, run: demo.runs };
  return demo.last;
}
demo.classify = classify;

// -- drawing ------------------------------------------------------------------
const pad = $("pad");
const pctx = pad.getContext("2d");
function clearPad() {
  pctx.fillStyle = "#fff";
  pctx.fillRect(0, 0, pad.width, pad.height);
}
clearPad();

/** The drawing as sklearn-digits pixels: bounding box scaled into 32x32, thresholded, 4x4 block counts. */
function padPixels() {
  const { data, width, height } = pctx.getImageData(0, 0, pad.width, pad.height);
  let x0 = width, y0 = height, x1 = -1, y1 = -1;
  for (let y = 0; y < height; y++)
    for (let x = 0; x < width; x++)
      if (data[4 * (y * width + x)] < 128) {
        if (x < x0) x0 = x; if (x > x1) x1 = x; if (y < y0) y0 = y; if (y > y1) y1 = y;
      }
  const counts = new Array(64).fill(0);
  if (x1 < 0) return counts;
  const w = x1 - x0 + 1, h = y1 - y0 + 1, scale = 32 / Math.max(w, h);
  const small = document.createElement("canvas");
  small.width = small.height = 32;
  const sctx = small.getContext("2d", { willReadFrequently: true });
  sctx.fillStyle = "#fff";
  sctx.fillRect(0, 0, 32, 32);
  sctx.imageSmoothingEnabled = true;
  sctx.imageSmoothingQuality = "high";
  const dw = w * scale, dh = h * scale;
  sctx.drawImage(pad, x0, y0, w, h, (32 - dw) / 2, (32 - dh) / 2, dw, dh);
  const bits = sctx.getImageData(0, 0, 32, 32).data;
  for (let y = 0; y < 32; y++)
    for (let x = 0; x < 32; x++)
      if (bits[4 * (y * 32 + x)] < 128) counts[(y >> 2) * 8 + (x >> 2)] += 1;
  return counts;
}

let drawing = false, lastPoint = null;
function point(e) {
  const r = pad.getBoundingClientRect();
  return [(e.clientX - r.left) * (pad.width / r.width), (e.clientY - r.top) * (pad.height / r.height)];
}
pad.addEventListener("pointerdown", (e) => {
  document.querySelectorAll("#tests figure.sel").forEach((f) => f.classList.remove("sel"));
  drawing = true;
  lastPoint = point(e);
  pad.setPointerCapture(e.pointerId);
});
pad.addEventListener("pointermove", (e) => {
  if (!drawing) return;
  const p = point(e);
  pctx.strokeStyle = "#000";
  pctx.lineWidth = 20;
  pctx.lineCap = pctx.lineJoin = "round";
  pctx.beginPath();
  pctx.moveTo(...lastPoint);
  pctx.lineTo(...p);
  pctx.stroke();
  lastPoint = p;
});
async function endStroke() {
  if (!drawing) return;
  drawing = false;
  if (demo.ready) await classify(padPixels(), "drawn");
}
pad.addEventListener("pointerup", endStroke);
pad.addEventListener("pointercancel", endStroke);
$("clear").addEventListener("click", () => {
  clearPad();
  $("prediction").textContent = "Draw a digit or pick a test image.";
  $("bars").innerHTML = "";
});

// -- start-up -----------------------------------------------------------------
async function main() {
  const info = await (await fetch("digits.json")).json();
  $("model-title").textContent = info.title;
  const bytes = new Uint8Array(await (await fetch(MODEL.model)).arrayBuffer());
  $("model-size").textContent = `${(bytes.byteLength / 1024).toFixed(1)} KiB (${bytes.byteLength} bytes)`;
  const t0 = performance.now();
  demo.session = await createSession(ort, bytes, { executionProviders: [demo.backend] });
  demo.sessionMs = performance.now() - t0;
  $("session-time").textContent = `${demo.sessionMs.toFixed(1)} ms`;
  $("backend").textContent = `onnxruntime-web ${info.ort_version || ort.env.versions?.web || ""} ${demo.backend}, ` +
    `${ort.env.wasm.numThreads} thread${ort.env.wasm.numThreads > 1 ? "s" : ""}` +
    (globalThis.crossOriginIsolated ? " (cross-origin isolated)" : "");
  demo.examples = info.examples;
  info.examples.forEach((ex, i) => {
    const fig = document.createElement("figure");
    fig.id = `test-${i}`;
    const c = document.createElement("canvas");
    c.width = c.height = 40;
    drawPixels(c, ex.pixels);
    fig.append(c, `label ${ex.label}`);
    fig.addEventListener("click", async () => {
      document.querySelectorAll("#tests figure.sel").forEach((f) => f.classList.remove("sel"));
      fig.classList.add("sel");
      await classify(ex.pixels, `test-${i}`);
    });
    $("tests").append(fig);
  });
  demo.ready = true;
  $("status").textContent = "Ready.";
  demo.variants = await compareVariants(info);
}

// The float32, float16 and int8 models (digits.json's "variants") on this page's backend: each
// classifies the test images in one batch; one row per model with its size and accuracies.
async function compareVariants(info) {
  const n = info.examples.length;
  const x = new Float32Array(n * 64);
  info.examples.forEach((ex, i) => ex.pixels.forEach((p, j) => { x[i * 64 + j] = p / 16; }));
  const rows = [];
  for (const v of info.variants || []) {
    const row = { name: v.name, sizeBytes: v.size_bytes, pyAccuracy: v.test_accuracy, classes: null, error: null };
    try {
      const session = await createSession(ort, new URL(v.file, document.baseURI).href,
        { executionProviders: [demo.backend] });
      const t0 = performance.now();
      const out = await run(session, ort, { [inputSpec.name]: { data: x, dims: [n, ...inputSpec.shape.slice(1)] } });
      row.ms = performance.now() - t0;
      const probs = out[outputName].data;
      row.classes = info.examples.map((_, i) => {
        const p = Array.from(probs.subarray(i * 10, i * 10 + 10));
        return p.indexOf(Math.max(...p));
      });
      row.accuracy = row.classes.filter((c, i) => c === info.examples[i].label).length / n;
      await session.release();
    } catch (err) {
      row.error = String(err && err.message || err);
    }
    const tr = document.createElement("tr");
    tr.id = `variant-${v.name}`;
    const cells = [v.name, `${(v.size_bytes / 1024).toFixed(1)} KiB`, `${(100 * v.test_accuracy).toFixed(1)}% of ${v.n_test}`,
      row.error ? `error: ${row.error}` : `${(100 * row.accuracy).toFixed(1)}% of ${n}`,
      row.error ? "–" : `${row.ms.toFixed(1)} ms`];
    for (const c of cells) { const td = document.createElement("td"); td.textContent = c; tr.append(td); }
    $("variants").querySelector("tbody").append(tr);
    rows.push(row);
  }
  return rows;
}
main().catch((err) => {
  demo.error = String(err && err.stack || err);
  $("status").textContent = `Error: ${err}`;
  $("status").className = "error";
});
