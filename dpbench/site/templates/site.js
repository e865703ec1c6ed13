(function () {
  "use strict";
  function key(cell) {
    var v = cell.getAttribute("data-sort");
    if (v === null) { v = cell.textContent.trim(); }
    var n = parseFloat(v);
    return (v !== "" && /^[-+]?(\d|\.\d)/.test(v) && !isNaN(n)) ? [0, n, ""] : [v === "" || v === "\u2014" ? 2 : 1, 0, v.toLowerCase()];
  }
  function compare(a, b) {
    if (a[0] !== b[0]) { return a[0] - b[0]; }
    if (a[0] === 0) { return a[1] - b[1]; }
    return a[2] < b[2] ? -1 : (a[2] > b[2] ? 1 : 0);
  }
  function sortBy(table, index, th) {
    var body = table.tBodies[0];
    var up = th.getAttribute("aria-sort") !== "ascending";
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (r, s) {
      var a = key(r.cells[index] || r), b = key(s.cells[index] || s);
      if (a[0] === 2 || b[0] === 2) { return a[0] - b[0]; }   /* empty cells last, both ways */
      return up ? compare(a, b) : compare(b, a);
    });
    rows.forEach(function (r) { body.appendChild(r); });
    Array.prototype.forEach.call(th.parentNode.cells, function (c) { c.setAttribute("aria-sort", "none"); });
    th.setAttribute("aria-sort", up ? "ascending" : "descending");
  }
  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), function (table) {
    if (!table.tHead || !table.tBodies.length) { return; }
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, i) {
      th.classList.add("sort");
      th.tabIndex = 0;
      th.setAttribute("aria-sort", "none");
      th.title = "sort by this column";
      th.addEventListener("click", function () { sortBy(table, i, th); });
      th.addEventListener("keydown", function (e) { if (e.key === "Enter") { sortBy(table, i, th); } });
    });
  });
  Array.prototype.forEach.call(document.querySelectorAll("table.filterable"), function (table) {
    var input = document.createElement("input");
    input.type = "search";
    input.className = "filter";
    input.placeholder = "filter rows (text in any column)";
    input.setAttribute("aria-label", "filter the rows of the table below");
    var box = table.parentNode.classList.contains("scroll") ? table.parentNode : table;
    box.parentNode.insertBefore(input, box);
    input.addEventListener("input", function () {
      var q = input.value.toLowerCase();
      Array.prototype.forEach.call(table.tBodies[0].rows, function (r) {
        r.hidden = q !== "" && r.textContent.toLowerCase().indexOf(q) < 0;
      });
    });
  });
}());
