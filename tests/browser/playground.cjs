// The playground in a real browser: Debian's chromium, headless, driven by puppeteer-core.
//   node playground.cjs URL SHOTS_DIR     (PUPPETEER_DIR: the folder whose node_modules has puppeteer-core)
// Prints "ok: ..." or "FAILED: ..." per check and exits 1 when one failed.
"use strict";
const path = require("path");
const puppeteer = require(path.join(process.env.PUPPETEER_DIR, "node_modules", "puppeteer-core"));

const [url, shots] = process.argv.slice(2);
let failed = false;
function check(what, ok, detail) {
  console.log((ok ? "ok: " : "FAILED: ") + what + (detail === undefined ? "" : " (" + detail + ")"));
  if (!ok) failed = true;
}

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
const text = (page, id) => page.$eval("#" + id, (el) => el.textContent);
// A real click: the window comes to the front first, as a user's would (a background tab takes no input).
async function click(page, selector) {
  await page.bringToFront();
  await page.click(selector);
}

(async () => {
  const browser = await puppeteer.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--hide-scrollbars"],
  });
  const errors = [];
  const open = async () => {
    const page = await browser.newPage();
    await page.setViewport({ width: 1280, height: 1150 });
    page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
    page.on("pageerror", (e) => errors.push(String(e)));
    await page.goto(url, { waitUntil: "load" });
    await page.waitForFunction(() => document.body.dataset.planFits !== undefined, { timeout: 20000 });
    return page;
  };
  try {
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
    // The browser logs the 409 and 400 answers this test asked for; anything else is an error.
    const unexpected = errors.filter((e) => !/the server responded with a status of (400|409)/.test(e));
    check("no console errors besides the refusals asked for", unexpected.length === 0, unexpected.join(" | "));
  } catch (e) {
    check("the browser test ran to its end", false, String(e));
  } finally {
    await browser.close();
  }
  process.exit(failed ? 1 : 0);
})();
