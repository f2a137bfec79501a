// What the browser tests share: headless chromium (Debian's) through puppeteer-core, checks printed
// as "ok: ..." or "FAILED: ...", a test's run with the pages' errors watched, and a page's text.
"use strict";
const path = require("path");
const puppeteer = require(path.join(process.env.PUPPETEER_DIR, "node_modules", "puppeteer-core"));

let failed = false;
function check(what, ok, detail) {
  console.log((ok ? "ok: " : "FAILED: ") + what + (detail === undefined ? "" : " (" + detail + ")"));
  if (!ok) failed = true;
}

// Flags for a closed network: no background connections, no first-run work.
function launch() {
  return puppeteer.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--hide-scrollbars"],
  });
}

const text = (page, id) => page.$eval("#" + id, (el) => el.textContent);

// Runs `test(browser, watch)` in a new browser, where watch(page) collects the page's console and
// script errors. Then checks that there were none but the refusals the test asked for (the
// browser logs the server's 400 and 409 answers), or that the test ran to its end when it threw;
// closes the browser and ends the process, 1 when a check failed.
function browserTest(test) {
  (async () => {
    const browser = await launch();
    const errors = [];
    const watch = (page) => {
      page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
      page.on("pageerror", (e) => errors.push(String(e)));
    };
    try {
      await test(browser, watch);
      const unexpected = errors.filter((e) => !/the server responded with a status of (400|409)/.test(e));
      check("no console errors besides the refusals asked for", unexpected.length === 0, unexpected.join(" | "));
    } catch (e) {
      check("the browser test ran to its end", false, String(e));
    } finally {
      await browser.close();
    }
    process.exit(failed ? 1 : 0);
  })();
}

module.exports = { browserTest, check, text };
