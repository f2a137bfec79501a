// The classroom in a real browser (playground --classroom --max-runs 1): two students in browser
// sessions of their own get workspaces of their own, the second student's run waits in the queue
// and the page says so, the teacher's page sees both, pauses and stops them.
//   node classroom.cjs URL TEACHER_URL SHOTS_DIR     (PUPPETEER_DIR as for playground.cjs)
"use strict";
const path = require("path");
const { browserTest, check, text } = require("./browser.cjs");

const [url, teacherUrl, shots] = process.argv.slice(2);

browserTest(async (browser, watch) => {
  // A student: a browser session of their own (its own storage), as another machine would be.
  const student = async () => {
    const context = await (browser.createBrowserContext || browser.createIncognitoBrowserContext).call(browser);
    const page = await context.newPage();
    await page.setViewport({ width: 1280, height: 720 });
    watch(page);
    await page.goto(url, { waitUntil: "load" });
    await page.waitForFunction(() => document.body.dataset.planFits !== undefined && document.body.dataset.workspace, { timeout: 20000 });
    return page;
  };
  const a = await student(), b = await student();
  const names = [await a.evaluate(() => document.body.dataset.workspace), await b.evaluate(() => document.body.dataset.workspace)];
  check("each student has a workspace of their own, named on the page", names[0] !== names[1] &&
        (await text(a, "workspace")).includes(names[0]), names.join(", "));
  // A reload keeps the workspace.
  await a.reload({ waitUntil: "load" });
  await a.waitForFunction(() => document.body.dataset.workspace, { timeout: 20000 });
  check("a reload keeps the workspace", (await a.evaluate(() => document.body.dataset.workspace)) === names[0]);

  const run = async (page) => {
    await page.bringToFront();
    await page.evaluate(() => {
      for (const [id, v] of Object.entries({ max_steps: 0, pace_ms: 40 })) {
        const el = document.getElementById(id);
        el.value = v;
        el.dispatchEvent(new Event("input", { bubbles: true }));
      }
    });
    await page.click("#run");
  };
  await run(a);
  await a.waitForFunction(() => window.playground.steps >= 1, { timeout: 60000 });
  await run(b);
  await b.waitForFunction(() => document.body.dataset.queued === "1", { timeout: 20000 });
  const waiting = await text(b, "queue");
  check("the second run waits in the queue and the page says so", /your run is next/.test(waiting), waiting);

  const teacher = await browser.newPage();
  await teacher.setViewport({ width: 1280, height: 720 });
  watch(teacher);
  await teacher.goto(teacherUrl, { waitUntil: "load" });
  await teacher.waitForFunction(() => document.body.dataset.workspaces === "2" && document.body.dataset.training === "1", { timeout: 20000 });
  const summary = await text(teacher, "summary");
  check("the teacher's page sees both workspaces, one training and one waiting", /1 training · 1 waiting/.test(summary), summary);
  await teacher.waitForFunction(() => Object.values(window.teacher.workspaces).some((w) => w.chart.data[0].length >= 2), { timeout: 30000 });
  check("the teacher's page draws the training student's loss curve", true);
  await teacher.screenshot({ path: path.join(shots, "teacher.png") });
  await teacher.click("#pause");
  await a.waitForFunction(() => /Paused by the teacher/.test(document.getElementById("queue").textContent), { timeout: 10000 });
  const held = await a.evaluate(() => window.playground.events);
  await new Promise((r) => setTimeout(r, 1000));
  const after = await a.evaluate(() => window.playground.events);
  check("Pause all holds the run (at most the micro-batch under way reports)", after - held <= 1, held + " -> " + after);
  await a.screenshot({ path: path.join(shots, "classroom.png") });
  await teacher.click("#resume");
  await a.waitForFunction((n) => window.playground.events > n + 2, { timeout: 20000 }, after);
  check("Resume lets it go on", true);
  await teacher.click("#stop");
  for (const [page, name] of [[a, "first"], [b, "second"]]) {
    await page.waitForFunction(() => document.body.dataset.outcome === "stopped", { timeout: 30000 });
    check("Stop all ends the " + name + " student's run", true);
  }
});
