// Browser driver of the browser test job (tests/web/test_browser.py): launches
// Debian's Chromium through playwright-core (no browser download), runs the
// demo page and the model harness served on 127.0.0.1, and writes what the
// page computed as JSON for Python to compare with onnxruntime.
//
//   node tests/web/run_browser.mjs PLAN.json RESULTS.json
//
// PLAN: {"chromium": path, "demo": {"url", "screenshot", "strokes": [[[x, y], ...], ...]} | null,
//        "plain": {"url"} | null  (the demo page from a server without COOP/COEP: one thread),
//        "gpuDemo": {"url"} | null  (the demo page with ?backend=webgpu: every test image),
//        "cases": {"url", "names": [...]} | null,
//        "webgpu": {"url", "names": [...]} | null  (the cases on onnxruntime-web's WebGPU build where Chromium
//                   has an adapter; results.webgpu = {probe: {adapter, reason}, cases: {name: result},
//                   fallback: {name: result with ["webgpu", "wasm"] where ["webgpu"] failed}, log: {name: ort log lines}})}
// Chromium gets SwiftShader's Vulkan WebGPU adapter (software, no GPU needed); the page must be a secure
// context (http://127.0.0.1), not about:blank.
import { readFileSync, writeFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

const [planPath, resultsPath] = process.argv.slice(2);
const plan = JSON.parse(readFileSync(planPath, "utf8"));
const userDataDir = mkdtempSync(join(tmpdir(), "pytensor-onnx-chromium-"));
const args = ["--no-sandbox", "--enable-unsafe-webgpu", "--enable-features=Vulkan", "--use-angle=swiftshader",
  "--use-webgpu-adapter=swiftshader", "--disable-quic", "--no-first-run", "--disable-background-networking",
  "--disable-component-update", "--disable-sync"];
const results = { console: [], errors: [] };

// onnxruntime's own verbose/info/warning log lines (wasm stderr, hence console.error): "DATE [V:onnxruntime:...".
const ORT_LOG = /^(\x1b\[[0-9;]*m)?\S+ \S+ \[[VIW]:onnxruntime:/;

function watch(page, tag, ortLog = null) {
  page.on("console", (m) => {
    if (ortLog && ORT_LOG.test(m.text())) ortLog.push(m.text());
    else if (m.type() === "error") results.console.push(`${tag}: ${m.text()}`);
  });
  page.on("pageerror", (e) => results.errors.push(`${tag}: ${e.message}`));
  page.on("response", (r) => { if (r.status() >= 400) results.errors.push(`${tag}: HTTP ${r.status()} ${r.url()}`); });
  page.on("requestfailed", (r) => results.errors.push(`${tag}: request failed ${r.url()}`));
}

async function runDemo(browser, demo) {
  const page = await browser.newPage();
  watch(page, "demo");
  await page.goto(demo.url);
  await page.waitForFunction(() => globalThis.demo && (globalThis.demo.ready || globalThis.demo.error), null,
    { timeout: 60000 });
  const state = await page.evaluate(() => ({ error: demo.error, sessionMs: demo.sessionMs,
    isolated: globalThis.crossOriginIsolated, threads: ort.env.wasm.numThreads, n: demo.examples.length }));
  const out = { ...state, tests: [], drawn: null };
  if (state.error) return out;
  await page.waitForFunction(() => demo.variants !== undefined, null, { timeout: 60000 });
  out.variants = await page.evaluate(() => demo.variants);
  for (let i = 0; i < state.n; i++) {
    const before = await page.evaluate(() => demo.runs);
    await page.click(`#test-${i}`);
    await page.waitForFunction((b) => demo.runs > b, before);
    out.tests.push(await page.evaluate(() => demo.last));
  }
  const box = await page.locator("#pad").boundingBox();
  const before = await page.evaluate(() => demo.runs);
  for (const stroke of demo.strokes) {
    await page.mouse.move(box.x + stroke[0][0], box.y + stroke[0][1]);
    await page.mouse.down();
    for (const [x, y] of stroke.slice(1)) await page.mouse.move(box.x + x, box.y + y, { steps: 4 });
    await page.mouse.up();
  }
  await page.waitForFunction((b) => demo.runs === b, before + demo.strokes.length);
  out.drawn = await page.evaluate(() => demo.last);
  out.predictedText = await page.textContent("#predicted-class");
  out.stats = await page.evaluate(() => ["model-size", "session-time", "infer-time", "backend"].map(
    (id) => document.getElementById(id).textContent));
  await page.screenshot({ path: demo.screenshot, fullPage: true });
  // The glue module on its own: default model URL, explicit dims (batch 2), its errors.
  out.glue = await page.evaluate(async () => {
    const g = await import("./model.js");
    const session = await g.createSession(ort);
    const spec = g.MODEL.inputs[0];
    const r = await g.run(session, ort, { [spec.name]: { data: new Float32Array(128).fill(0.5),
      dims: [2, ...spec.shape.slice(1)] } });
    const o = r[g.MODEL.outputs[0].name];
    const error = (f) => { try { f(); return null; } catch (e) { return e.message; } };
    return { dims: o.dims, dtype: o.dtype, data: Array.from(o.data),
      wrongType: error(() => g.makeFeeds(ort, { [spec.name]: new Float64Array(64) })),
      wrongLength: error(() => g.makeFeeds(ort, { [spec.name]: new Float32Array(65) })),
      missing: error(() => g.makeFeeds(ort, {})) };
  });
  await page.close();
  return out;
}

async function runPlain(browser, plain) {
  const page = await browser.newPage();
  watch(page, "plain");
  await page.goto(plain.url);
  await page.waitForFunction(() => globalThis.demo && (demo.ready || demo.error), null, { timeout: 60000 });
  const out = await page.evaluate(() => ({ error: demo.error, isolated: globalThis.crossOriginIsolated,
    threads: ort.env.wasm.numThreads }));
  if (!out.error) {
    await page.click("#test-0");
    await page.waitForFunction(() => demo.runs === 1);
    out.test0 = await page.evaluate(() => demo.last);
  }
  await page.close();
  return out;
}

async function runGpuDemo(browser, gpuDemo) {
  const page = await browser.newPage();
  watch(page, "gpuDemo", []);
  await page.goto(gpuDemo.url);
  await page.waitForFunction(() => globalThis.demo && (demo.ready || demo.error), null, { timeout: 60000 });
  const out = await page.evaluate(() => ({ error: demo.error, backend: demo.backend, note: demo.backendNote,
    noteText: document.getElementById("backend-note").textContent,
    backendText: document.getElementById("backend").textContent,
    switchValue: document.getElementById("backend-switch").value, n: demo.examples?.length ?? 0 }));
  await page.waitForFunction(() => demo.variants !== undefined, null, { timeout: 60000 });
  out.variants = await page.evaluate(() => demo.variants);
  out.tests = [];
  for (let i = 0; !out.error && i < out.n; i++) {
    await page.click(`#test-${i}`);
    await page.waitForFunction((k) => demo.runs === k, i + 1);
    out.tests.push(await page.evaluate(() => demo.last));
  }
  await page.close();
  return out;
}

async function runCases(browser, cases) {
  const page = await browser.newPage();
  watch(page, "cases");
  await page.goto(cases.url);
  await page.waitForFunction(() => globalThis.harnessReady === true, null, { timeout: 30000 });
  const out = {};
  for (const name of cases.names) {
    out[name] = await page.evaluate((n) => globalThis.runCase(n).catch((e) => ({ error: String(e && e.stack || e) })),
      name);
  }
  out.__env = await page.evaluate(() => ({ isolated: globalThis.crossOriginIsolated, threads: ort.env.wasm.numThreads }));
  await page.close();
  return out;
}

// The cases on the WebGPU build with executionProviders ["webgpu"], after probing for an adapter; the
// verbose log lines saying which nodes onnxruntime placed on which execution provider are kept.
async function runWebGPU(browser, webgpu) {
  const page = await browser.newPage();
  const log = [];
  watch(page, "webgpu", log);
  await page.goto(webgpu.url);
  await page.waitForFunction(() => globalThis.harnessReady === true, null, { timeout: 30000 });
  const out = { probe: await page.evaluate(() => globalThis.probeWebGPU()), cases: {}, fallback: {}, log: {} };
  if (out.probe.adapter) {
    const run = (name, eps) => page.evaluate(([n, e]) => globalThis.runCase(n, e)
      .catch((err) => ({ error: String(err && err.stack || err) })), [name, eps]);
    for (const name of webgpu.names) {
      const start = log.length;
      out.cases[name] = await run(name, ["webgpu"]);
      out.log[name] = log.slice(start);
      // Where the WebGPU session cannot be made, the same model with the WebAssembly EP listed second.
      if (out.cases[name].error) out.fallback[name] = await run(name, ["webgpu", "wasm"]);
    }
  }
  await page.close();
  return out;
}

const started = Date.now();
// A fresh profile (the persistent context's user data dir), removed afterwards.
const browser = await chromium.launchPersistentContext(userDataDir, { executablePath: plan.chromium, headless: true,
  args, viewport: { width: 900, height: 760 } });
try {
  results.version = browser.browser()?.version() ?? null;
  if (plan.demo) results.demo = await runDemo(browser, plan.demo);
  if (plan.plain) results.plain = await runPlain(browser, plan.plain);
  if (plan.gpuDemo) results.gpuDemo = await runGpuDemo(browser, plan.gpuDemo);
  if (plan.cases) results.cases = await runCases(browser, plan.cases);
  if (plan.webgpu) results.webgpu = await runWebGPU(browser, plan.webgpu);
} catch (err) {
  results.errors.push(`driver: ${err && err.stack || err}`);
} finally {
  await browser.close();
  rmSync(userDataDir, { recursive: true, force: true });
  results.seconds = (Date.now() - started) / 1000;
  writeFileSync(resultsPath, JSON.stringify(results));
}
