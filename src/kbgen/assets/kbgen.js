// kbgen: click a column heading of a `.kb-sortable` table to sort it; type to filter its rows.
// Works with instant navigation: Material re-runs `document$` subscribers on every page.
(function () {
  "use strict";

  function cellKey(cell) {
    var marked = cell.querySelector("[data-sort]");
    var text = (marked ? marked.getAttribute("data-sort") : cell.textContent).trim();
    var number = Number(text);
    return text !== "" && !isNaN(number) ? number : text.toLowerCase();
  }

  function compare(a, b) {
    if (typeof a === typeof b) return a < b ? -1 : a > b ? 1 : 0;
    return typeof a === "number" ? -1 : 1;
  }

  function makeSortable(table) {
    var body = table.tBodies[0];
    if (!body || table.dataset.kbSortable) return;
    table.dataset.kbSortable = "1";
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, column) {
      th.setAttribute("role", "button");
      th.addEventListener("click", function () {
        var ascending = th.getAttribute("aria-sort") !== "ascending";
        Array.prototype.forEach.call(th.parentNode.cells, function (other) {
          other.removeAttribute("aria-sort");
        });
        th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (r1, r2) {
          var order = compare(cellKey(r1.cells[column]), cellKey(r2.cells[column]));
          return ascending ? order : -order;
        });
        rows.forEach(function (row) { body.appendChild(row); });
      });
    });
    addFilter(table, body);
  }

  function addFilter(table, body) {
    if (body.rows.length < 8) return;
    var input = document.createElement("input");
    input.type = "search";
    input.className = "kb-filter";
    input.placeholder = "Filter rows";
    input.setAttribute("aria-label", "Filter the table");
    var count = document.createElement("span");
    count.className = "kb-filter-count";
    input.addEventListener("input", function () {
      var words = input.value.toLowerCase().split(/\s+/).filter(Boolean);
      var shown = 0;
      Array.prototype.forEach.call(body.rows, function (row) {
        var text = row.textContent.toLowerCase();
        var match = words.every(function (w) { return text.indexOf(w) !== -1; });
        row.hidden = !match;
        if (match) shown += 1;
      });
      count.textContent = words.length ? shown + " of " + body.rows.length : "";
    });
    var wrapper = table.closest(".md-typeset__table") || table;
    wrapper.parentNode.insertBefore(input, wrapper);
    wrapper.parentNode.insertBefore(count, wrapper);
  }

  // Under `kbgen serve` the server writes kbgen-problem.json after every build: while a kb/
  // file has a problem, the last good site stays up and this banner names the file and line.
  var script = document.currentScript;
  var problemUrl = script ? new URL("../kbgen-problem.json", script.src).href : null;

  function showProblem() {
    if (!problemUrl || !window.fetch || location.protocol === "file:") return;
    fetch(problemUrl, { cache: "no-store" })
      .then(function (r) { return r.ok ? r.json() : {}; })
      .then(function (data) {
        var old = document.getElementById("kb-problem");
        if (old) old.remove();
        if (!data || !data.problem) return;
        var box = document.createElement("div");
        box.id = "kb-problem";
        box.className = "kb-problem";
        box.setAttribute("role", "alert");
        var head = document.createElement("strong");
        head.textContent = "kb/ has a problem; this is the last good site. Fix it and save: the page reloads.";
        var text = document.createElement("pre");
        text.textContent = data.problem;
        box.appendChild(head);
        box.appendChild(text);
        document.body.insertBefore(box, document.body.firstChild);
      })
      .catch(function () {});
  }

  // On a phone a table wider than the screen is cut off at the right (it scrolls, but nothing
  // says so): such a table is marked data-kb-rows and kbgen.css lays it out as one labelled
  // block per row. The bug index keeps its scrolling frame (its headings sort), and the
  // troubleshooting index has a phone layout of its own.
  var phone = window.matchMedia ? window.matchMedia("(max-width: 44.984375em)") : null;

  function labelCells(table) {
    var head = table.tHead && table.tHead.rows[0];
    if (!head || table.dataset.kbLabelled) return;
    table.dataset.kbLabelled = "1";
    var names = Array.prototype.map.call(head.cells, function (th) { return th.textContent.trim(); });
    Array.prototype.forEach.call(table.tBodies, function (body) {
      Array.prototype.forEach.call(body.rows, function (row) {
        Array.prototype.forEach.call(row.cells, function (cell, i) {
          if (names[i]) cell.setAttribute("data-label", names[i]);
        });
      });
    });
  }

  function fitTables() {
    var tables = document.querySelectorAll(".md-typeset table:not([class])");
    Array.prototype.forEach.call(tables, function (table) {
      if (table.closest(".kb-sortable, .kb-errors")) return;
      table.removeAttribute("data-kb-rows");
    });
    if (!phone || !phone.matches) return;
    Array.prototype.forEach.call(tables, function (table) {
      if (table.closest(".kb-sortable, .kb-errors") || !table.tHead) return;
      var frame = table.closest(".md-typeset__scrollwrap") || table.parentNode;
      if (frame.scrollWidth > frame.clientWidth + 1) {
        labelCells(table);
        table.setAttribute("data-kb-rows", "");
      }
    });
  }

  var pending = null;
  function refit() {
    if (pending) clearTimeout(pending);
    pending = setTimeout(fitTables, 100);
  }
  window.addEventListener("resize", refit);
  document.addEventListener("toggle", fitTables, true); // a table in a closed <details> measures 0
  if (document.fonts && document.fonts.ready) document.fonts.ready.then(fitTables);

  function init() {
    document.querySelectorAll(".kb-sortable table").forEach(makeSortable);
    fitTables();
    showProblem();
  }

  if (typeof document$ !== "undefined") {
    document$.subscribe(init);
  } else {
    document.addEventListener("DOMContentLoaded", init);
  }
})();
