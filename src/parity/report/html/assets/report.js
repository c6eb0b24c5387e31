/* Draws every chart of the report from the JSON data block; the tables are already on the page. */
(function () {
  "use strict";
  var root = document.documentElement;
  var data = JSON.parse(document.getElementById("parity-data").textContent);
  var pending = 0;

  function countMarks(el) {
    return el.querySelectorAll(
      "g.role-mark > path, g.role-mark > line, g.role-mark > rect, g.role-mark > text, g.role-mark > g"
    ).length;
  }

  function done() {
    pending -= 1;
    if (pending === 0) {
      root.setAttribute("data-charts-done", "true");
    }
  }

  data.charts.forEach(function (chart) {
    if (!chart.draw) {
      return;
    }
    var el = document.getElementById("vis-" + chart.id);
    if (!el) {
      console.error("no container for chart " + chart.id);
      return;
    }
    pending += 1;
    vegaEmbed(el, chart.spec, { actions: false, renderer: "svg" })
      .then(function () {
        el.setAttribute("data-marks", String(countMarks(el)));
        el.setAttribute("data-rendered", "true");
      })
      .catch(function (err) {
        el.setAttribute("data-rendered", "error");
        el.textContent = "chart failed: " + err;
        console.error(err);
      })
      .then(done);
  });
  if (pending === 0) {
    root.setAttribute("data-charts-done", "true");
  }
})();
