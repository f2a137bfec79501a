// What the browser tests share: headless chromium (Debian's) through puppeteer-core, checks printed
// as "ok: ..." or "FAILED: ...", and a page's text.
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

module.exports = { check, launch, text, failed: () => failed };
