// What every page of Accrue's runs first (callbacks::fill_report_page puts it at PAGE_JS, first in
// the body): script errors and console errors are counted on the page, in the body's data-errors
// attribute, for tests and for a reader.
(function () {
  const errors = [];
  const note = (text) => { errors.push(String(text)); document.body.dataset.errors = errors.join("\n"); };
  window.addEventListener("error", (e) => note(e.message));
  const consoleError = console.error.bind(console);
  console.error = (...args) => { note(args.join(" ")); consoleError(...args); };
  document.body.dataset.errors = "";
})();
