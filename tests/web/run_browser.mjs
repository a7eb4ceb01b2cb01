// Browser driver of the browser test job (tests/web/test_browser.py): launches
// Debian's Chromium through playwright-core (no browser download), runs the
// demo page and the model harness served on 127.0.0.1, and writes what the
// page computed as JSON for Python to compare with onnxruntime.
//
//   node tests/web/run_browser.mjs PLAN.json RESULTS.json
//
// PLAN: {"chromium": path, "demo": {"url", "screenshot", "strokes": [[[x, y], ...], ...]} | null,
//        "plain": {"url"} | null  (the demo page from a server without COOP/COEP: one thread),
//        "cases": {"url", "names": [...]} | null}
import { readFileSync, writeFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

const [planPath, resultsPath] = process.argv.slice(2);
const plan = JSON.parse(readFileSync(planPath, "utf8"));
const userDataDir = mkdtempSync(join(tmpdir(), "pytensor-onnx-chromium-"));
const args = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
  "--disable-component-update", "--disable-sync"];
const results = { console: [], errors: [] };

function watch(page, tag) {
  page.on("console", (m) => { if (m.type() === "error") results.console.push(`${tag}: ${m.text()}`); });
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

const started = Date.now();
// A fresh profile (the persistent context's user data dir), removed afterwards.
const browser = await chromium.launchPersistentContext(userDataDir, { executablePath: plan.chromium, headless: true,
  args, viewport: { width: 900, height: 760 } });
try {
  results.version = browser.browser()?.version() ?? null;
  if (plan.demo) results.demo = await runDemo(browser, plan.demo);
  if (plan.plain) results.plain = await runPlain(browser, plan.plain);
  if (plan.cases) results.cases = await runCases(browser, plan.cases);
} catch (err) {
  results.errors.push(`driver: ${err && err.stack || err}`);
} finally {
  await browser.close();
  rmSync(userDataDir, { recursive: true, force: true });
  results.seconds = (Date.now() - started) / 1000;
  writeFileSync(resultsPath, JSON.stringify(results));
}
