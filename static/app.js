// Tollgate's pages work without this script. It shows times in the
// viewer's own zone and lets files be dropped onto an upload form.
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

  function dropzones(root) {
    root.querySelectorAll("[data-dropzone]").forEach(function (zone) {
      var input = zone.querySelector("input[type=file]");
      if (!input) {
        return;
      }
      ["dragenter", "dragover"].forEach(function (type) {
        zone.addEventListener(type, function (e) {
          e.preventDefault();
          zone.classList.add("over");
        });
      });
      ["dragleave", "drop"].forEach(function (type) {
        zone.addEventListener(type, function () {
          zone.classList.remove("over");
        });
      });
      zone.addEventListener("drop", function (e) {
        e.preventDefault();
        if (e.dataTransfer && e.dataTransfer.files.length) {
          input.files = e.dataTransfer.files;
          input.dispatchEvent(new Event("change", { bubbles: true }));
        }
      });
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    localTimes(document);
    dropzones(document);
  });
})();
