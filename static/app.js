// Tollgate's pages work without this script; it only shows times in the
// viewer's own zone.
(function () {
  "use strict";
  function localTimes(root) {
    root.querySelectorAll("time[datetime]").forEach(function (el) {
      var d = new Date(el.getAttribute("datetime"));
      if (!isNaN(d)) {
        el.title = d.toLocaleString();
      }
    });
  }
  document.addEventListener("DOMContentLoaded", function () { localTimes(document); });
})();
