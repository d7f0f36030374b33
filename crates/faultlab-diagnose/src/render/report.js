// Enhancements only: the page reads the same without this script.
(function () {
  // "Only messages with findings" hides the rest of that trace's timeline; the label says how many stay.
  document.querySelectorAll("input.only-findings").forEach(function (box) {
    var timeline = box.closest("section").querySelector("ol.timeline");
    var count = document.createElement("span");
    count.className = "filter-count";
    count.textContent = " (" + timeline.querySelectorAll(".entry.evidence").length + " of " +
      timeline.querySelectorAll(".entry").length + ")";
    box.parentNode.appendChild(count);
    box.addEventListener("change", function () {
      timeline.classList.toggle("only-findings", box.checked);
    });
  });
  // A summary row jumps to the message where its finding happens, and flashes it.
  document.querySelectorAll("tr.finding-row").forEach(function (row) {
    row.addEventListener("click", function (event) {
      if (event.target.closest("a")) return;
      var target = document.getElementById(row.dataset.target);
      if (!target) return;
      target.scrollIntoView({ behavior: "smooth", block: "center" });
      target.classList.remove("flash");
      void target.offsetWidth;
      target.classList.add("flash");
    });
  });
})();
