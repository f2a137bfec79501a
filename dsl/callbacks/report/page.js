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
// Chart helpers that the report and the playground share (uPlot is loaded after this script).
window.accrue = {
  // The page's data (fill_report_page's data_json), read once the page's own script runs.
  data() {
    return JSON.parse(document.getElementById("accrue-data").textContent);
  },
  // A series' legend value: the one under the cursor, or the series' last when the cursor is
  // elsewhere (a projected chart is read without hovering).
  legend(format) {
    return (u, v, si, idx) => {
      if (idx == null) {
        const d = u.data[si] || [];
        for (let k = d.length - 1; k >= 0; k--) if (d[k] != null) return format(d[k]);
        return "";
      }
      return v == null ? "" : format(v);
    };
  },
  // Sets a chart's data and shows its legend's last values at once.
  setData(chart, data) {
    chart.setData(data);
    chart.setLegend({ idx: null });
  },
  // Keeps `chart` as wide as `box`, and `height()` tall, as the window changes; returns the
  // function that sizes it again (after height() changes).
  fit(chart, box, height) {
    let gone = false, last = "";
    // Only a new size is set: setting one changes the box's height, which would call this again.
    const size = () => {
      const width = Math.max(240, Math.floor(box.clientWidth)), h = height();
      if (gone || last === width + "x" + h) return;
      last = width + "x" + h;
      chart.setSize({ width: width, height: h });
    };
    const observer = new ResizeObserver(size);
    observer.observe(box);
    window.addEventListener("resize", size);
    const destroy = chart.destroy.bind(chart);
    chart.destroy = () => { gone = true; observer.disconnect(); window.removeEventListener("resize", size); destroy(); };
    size();
    return size;
  },
  number(x) { return x === null || x === undefined || !isFinite(x) ? "" : String(+Number(x).toPrecision(4)); },
  // A power of two as one ("2^16"), other numbers as number() writes them: loss scales.
  power(x) { return x > 0 && Number.isInteger(Math.log2(x)) ? "2^" + Math.log2(x) : window.accrue.number(x); },
  // Curves of [x, y] points on one x axis, as uPlot takes them: every x any curve has, sorted, and
  // each curve's y there (null where it has none).
  aligned(curves) {
    const xs = Array.from(new Set([].concat(...curves.map((c) => c.map((p) => p[0]))))).sort((a, b) => a - b);
    return [xs].concat(curves.map((c) => { const m = new Map(c); return xs.map((x) => (m.has(x) ? m.get(x) : null)); }));
  },
};
