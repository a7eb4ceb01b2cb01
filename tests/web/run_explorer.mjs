// Browser driver of the pass explorer test (tests/web/test_explorer_browser.py):
// opens DIR/index.html (file://, no server, no network) in Debian's Chromium
// through playwright-core, selects every stage, the conv-recovery stage and
// the first ONNX node, and writes what the page shows as JSON.
//
//   node tests/web/run_explorer.mjs PLAN.json RESULTS.json
//   PLAN: {"chromium": path, "url": "file:///.../index.html", "stage": "conv-recovery"}
import { readFileSync, writeFileSync } from "node:fs";
import { chromium } from "playwright-core";

const [planPath, resultsPath] = process.argv.slice(2);
const plan = JSON.parse(readFileSync(planPath, "utf8"));
const results = { errors: [], requests: [] };
const browser = await chromium.launch({ executablePath: plan.chromium, headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"] });
try {
  const page = await browser.newPage();
  page.on("console", (m) => { if (m.type() === "error") results.errors.push(`console: ${m.text()}`); });
  page.on("pageerror", (e) => results.errors.push(`page: ${e.message}`));
  page.on("request", (r) => { if (!r.url().startsWith("file:")) results.requests.push(r.url()); });
  await page.goto(plan.url);
  await page.waitForFunction(() => globalThis.explorer && explorer.ready, null, { timeout: 60000 });
  results.stages = await page.evaluate(() => explorer.data.stages.map((s, i) => {
    explorer.select(i);
    return { name: s.name, rendered: !!explorer.rendered[i], drawn: !!explorer.drawn[i],
      svgNodes: document.querySelectorAll("#graph svg g.node").length,
      diffRows: document.querySelectorAll("#diff div").length,
      title: document.getElementById("stage-title").textContent };
  }));
  results.vizErrors = await page.evaluate(() => explorer.errors);
  results.diff = await page.evaluate((name) => {
    explorer.select(explorer.data.stages.findIndex((s) => s.name === name));
    const rows = (cls) => [...document.querySelectorAll(`#diff div.${cls}`)].map((r) => r.textContent);
    return { removed: rows("del"), added: rows("add"), fired: [...document.querySelectorAll("#fired li")].map(
      (li) => li.textContent), addedSvg: [...document.querySelectorAll("#graph svg g.node polygon, " +
      "#graph svg g.node path")].filter((p) => p.getAttribute("fill") === "#dcfce4").length };
  }, plan.stage);
  await page.click("#onnx-0");
  results.onnx = await page.evaluate(() => ({
    heading: document.querySelector("#onnx-provenance p").textContent,
    sources: [...document.querySelectorAll("#onnx-origins li")].map((li) => li.textContent),
    irSources: [...document.querySelectorAll("#ir-origins li")].map((li) => li.textContent),
    picked: document.querySelector("#diff .picked")?.textContent ?? null,
    stage: explorer.stage }));
  await page.screenshot({ path: plan.screenshot, fullPage: true });
} finally {
  await browser.close();
}
writeFileSync(resultsPath, JSON.stringify(results));
