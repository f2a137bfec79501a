// The playground in a real browser: Debian's chromium, headless, driven by puppeteer-core.
//   node playground.cjs URL SHOTS_DIR     (PUPPETEER_DIR: the folder whose node_modules has puppeteer-core)
// Prints "ok: ..." or "FAILED: ..." per check and exits 1 when one failed.
"use strict";
const path = require("path");
const { browserTest, check, text } = require("./browser.cjs");

const [url, shots] = process.argv.slice(2);

// Sets inputs as a user would (value, then an input event).
async function set(page, values) {
  await page.bringToFront();
  await page.evaluate((values) => {
    for (const [id, v] of Object.entries(values)) {
      const el = document.getElementById(id);
      if (el.type === "checkbox") el.checked = v; else el.value = v;
      el.dispatchEvent(new Event("input", { bubbles: true }));
    }
  }, values);
}
// Runs with the settings shown and waits for that run (not the one before) to finish.
async function runToEnd(page, timeout) {
  const before = await page.evaluate(() => window.playground.run);
  await click(page, "#run");
  await page.waitForFunction((b) => window.playground.run !== b && document.body.dataset.outcome, { timeout: timeout }, before);
  const outcome = await page.evaluate(() => document.body.dataset.outcome);
  if (outcome !== "finished") throw new Error("the run ended " + outcome + ": " + (await text(page, "end")));
}
// A real click: the window comes to the front first, as a user's would (a background tab takes no input).
async function click(page, selector) {
  await page.bringToFront();
  await page.click(selector);
}

browserTest(async (browser, watch) => {
  const open = async () => {
    const page = await browser.newPage();
    await page.setViewport({ width: 1280, height: 1150 });
    watch(page);
    await page.goto(url, { waitUntil: "load" });
    await page.waitForFunction(() => document.body.dataset.planFits !== undefined, { timeout: 20000 });
    return page;
  };
  const page = await open();
  const watcher = await open();  // a second browser window, watching

  // Two windows of real training, slow enough to see each micro-batch.
  await set(page, { model: "mlp", micro_batch: 16, accumulate: 4, memory_cap_mib: 0, max_steps: 2, pace_ms: 100 });
  await click(page, "#run");
  await page.waitForFunction(() => document.body.dataset.outcome === "finished", { timeout: 60000 });
  const steps = await text(page, "steps");
  check("the page shows \"optimizer steps: 2\"", steps === "optimizer steps: 2", steps);
  const losses = await page.evaluate(() => window.playground.losses.map((p) => p[1]));
  check("one loss per optimizer step, falling", losses.length === 2 && losses[1] < losses[0], JSON.stringify(losses));
  await watcher.waitForFunction(() => document.body.dataset.outcome === "finished", { timeout: 10000 });
  check("the second window watched the same run", (await text(watcher, "steps")) === "optimizer steps: 2");

  // A longer run: the other window is told a run is going, the picture, then Stop.
  await set(page, { max_steps: 0, pace_ms: 20 });
  await click(page, "#run");
  await page.waitForFunction(() => window.playground.steps >= 40, { timeout: 60000 });
  const notice = await text(watcher, "notice");
  const runDisabled = await watcher.$eval("#run", (b) => b.disabled);
  check("the second window is told a run is going", /started by another page/.test(notice) && runDisabled, notice);
  const second = await watcher.evaluate(async () => (await window.playground.api("POST", "/api/runs", {})));
  check("a second start is refused while a run goes (409)", second.status === 409 && /a run is going/.test(second.body.error),
        JSON.stringify(second.body.error));
  await page.screenshot({ path: path.join(shots, "playground.png") });
  await click(page, "#stop");
  await page.waitForFunction(() => document.body.dataset.outcome === "stopped", { timeout: 30000 });
  check("Stop ends the run", true);

  // Past the cap: the OOM panel with the micro-batch Accrue advises.
  await set(page, { micro_batch: 64, accumulate: 1, memory_cap_mib: 5.3 });
  await page.waitForFunction(() => document.getElementById("oom").style.display === "block", { timeout: 20000 });
  const advised = await text(page, "advised");
  check("a configuration past the cap shows the OOM panel with the advised micro-batch",
        /advised micro-batch: 16/.test(advised), advised);
  await page.screenshot({ path: path.join(shots, "playground_oom.png") });

  // Projection: at 1280 x 720 and 1920 x 1080 the memory plan, the loss curves, the loop and the
  // second chart lie in the first screen, nothing scrolls sideways, and no legend shows "--".
  const projected = async (name) => {
    for (const [w, h] of [[1280, 720], [1920, 1080]]) {
      await page.setViewport({ width: w, height: h });
      await new Promise((r) => setTimeout(r, 600));
      const box = await page.evaluate(() => {
        const out = { scrollWidth: document.documentElement.scrollWidth, dashes: [] };
        for (const id of ["plan-chart", "loss-chart", "loop-cell", "second-cell"]) {
          const r = document.getElementById(id).getBoundingClientRect();
          out[id] = { right: Math.round(r.right), bottom: Math.round(r.bottom), width: Math.round(r.width) };
        }
        for (const row of document.querySelectorAll(".u-legend .u-series:not(.u-off)"))
          if (row.offsetParent && row.querySelector(".u-value") && row.querySelector(".u-value").textContent === "--")
            out.dashes.push(row.textContent);
        return out;
      });
      const inside = ["plan-chart", "loss-chart", "loop-cell", "second-cell"].every((id) => box[id].bottom <= h && box[id].right <= w);
      check(name + " at " + w + "x" + h + ": the key views are in the first screen, nothing scrolls sideways",
            inside && box.scrollWidth <= w, JSON.stringify(box));
      check(name + " at " + w + "x" + h + ": the charts fill their row", box["loss-chart"].width >= (w - 400) / 2 - 40, JSON.stringify(box["loss-chart"]));
      check(name + " at " + w + "x" + h + ": no legend shows --", box.dashes.length === 0, box.dashes.join(" | "));
      await page.screenshot({ path: path.join(shots, name + "_" + w + "x" + h + ".png") });
    }
    await page.setViewport({ width: 1280, height: 1150 });
  };
  await projected("playground");

  // Mixed precision you can see: float16 whose loss scale starts at 2^40 overflows, skips steps,
  // backs off and then trains.
  await set(page, { model: "mlp", micro_batch: 16, accumulate: 1, memory_cap_mib: 0, precision: "float16", overflow: true,
                    max_steps: 40, pace_ms: 0 });
  await runToEnd(page, 120000);
  const scales = await page.evaluate(() => window.playground.scales);
  const skipped = scales.filter((p) => p[2]).length, last = scales[scales.length - 1];
  check("float16 with the scale at 2^40: skipped steps, the scale backs off, then steps apply",
        skipped >= 1 && last[1] < 2 ** 40 && !last[2] && (await text(page, "precision-effect")).includes("float16"),
        skipped + " skipped, last scale " + (last && last[1]));
  check("the loss scale chart is the one shown", await page.$eval("#scale-chart", (e) => e.style.display !== "none"));
  await projected("playground_float16");

  // The mistake, demonstrated: uneven micro-batches, per_window then per_micro_batch, overlaid.
  await set(page, { model: "mlp", micro_batch: 16, accumulate: 4, precision: "float32", overflow: false, uneven: true,
                    normalization: "per_window", max_steps: 30, pace_ms: 0 });
  await runToEnd(page, 60000);
  await set(page, { normalization: "per_micro_batch" });
  await runToEnd(page, 60000);
  const overlay = await page.evaluate(() => {
    const P = window.playground, before = P.history[P.history.length - 1];
    let largest = 0;
    for (const [step, loss] of P.losses) {
      const other = before.losses.find((p) => p[0] === step);
      if (other) largest = Math.max(largest, Math.abs(other[1] - loss));
    }
    return { label: before.label, largest: largest, perWindow: Number(document.body.dataset.checkPerWindow),
             perMicroBatch: Number(document.body.dataset.checkPerMicroBatch), check: document.getElementById("check").textContent };
  });
  check("uneven micro-batches: verify_accumulation's per_micro_batch drifts, per_window agrees",
        overlay.perMicroBatch > 1e-3 && overlay.perWindow < 1e-5, JSON.stringify(overlay));
  check("the per_window run stays on the loss chart beside the per_micro_batch run, and they differ",
        /per_window.*uneven/.test(overlay.label) && overlay.largest > 1e-4, overlay.label + ", largest difference " + overlay.largest);
  await projected("playground_uneven");

  // Malformed requests: 400 with a message.
  const answers = await page.evaluate(async () => {
    const post = async (body) => {
      const r = await fetch("/api/runs", { method: "POST", headers: { "Content-Type": "application/json" }, body: body });
      return [r.status, (await r.json()).error];
    };
    return [await post('{"micro_batch": 0}'), await post('{"accumulate": "many"}'), await post("not json")];
  });
  check("malformed requests get 400 with a message",
        answers.every(([status, error]) => status === 400 && typeof error === "string" && error.length > 10),
        JSON.stringify(answers));

  for (const p of [page, watcher]) check("no script errors on the page", (await p.evaluate(() => document.body.dataset.errors)) === "");
});
