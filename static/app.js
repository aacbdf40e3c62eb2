// Tollgate's pages work without this script. It shows times in the
// viewer's own zone, lets files be dropped onto an upload form and keeps
// pages current over a websocket.
(function () {
  "use strict";

  // Relative times ("waiting 3 days") keep their text and get the local
  // date as a tooltip; absolute ones (data-local), written in UTC by the
  // server, are rewritten in the viewer's zone with UTC as the tooltip.
  function localTimes(root) {
    root.querySelectorAll("time[datetime]").forEach(function (el) {
      var d = new Date(el.getAttribute("datetime"));
      if (isNaN(d) || el.hasAttribute("data-localized")) {
        return;
      }
      el.setAttribute("data-localized", "");
      var mode = el.getAttribute("data-local");
      if (!mode) {
        el.title = d.toLocaleString();
        return;
      }
      el.title = el.textContent;
      el.textContent = mode === "time"
        ? d.toLocaleTimeString(undefined, { hour: "2-digit", minute: "2-digit", second: "2-digit", fractionalSecondDigits: 3 })
        : d.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "medium" });
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
      var chosen = zone.querySelector("[data-chosen]");
      if (chosen) {
        input.addEventListener("change", function () { listChosen(input, chosen); });
        listChosen(input, chosen); // a file kept by the browser on back
      }
    });
  }

  // listChosen names the files chosen or dropped, so a person sees what
  // they are about to send.
  function listChosen(input, list) {
    list.textContent = "";
    Array.prototype.forEach.call(input.files || [], function (f) {
      var li = document.createElement("li");
      li.textContent = f.name;
      list.appendChild(li);
    });
  }

  // Live updates: the server says which run changed; the parts of this
  // page marked data-live-region are re-read with a normal GET and swapped
  // in. A region holding a form the viewer is using is left alone and a
  // note offers a reload instead. After a dropped connection the page is
  // re-read once, so nothing that happened meanwhile is missed.
  var dirty = false;
  var pending = null;

  function refresh() {
    if (pending) {
      return;
    }
    pending = setTimeout(function () {
      pending = null;
      fetch(location.href, { credentials: "same-origin", headers: { "Accept": "text/html" } })
        .then(function (r) {
          if (r.redirected || !r.ok) {
            throw new Error("status " + r.status);
          }
          return r.text();
        })
        .then(function (html) {
          var fresh = new DOMParser().parseFromString(html, "text/html");
          document.querySelectorAll("[data-live-region]").forEach(function (el) {
            var name = el.getAttribute("data-live-region");
            var next = fresh.querySelector('[data-live-region="' + name + '"]');
            if (!next || next.innerHTML === el.innerHTML) {
              return;
            }
            if (dirty && el.querySelector("form")) {
              stale();
              return;
            }
            el.innerHTML = next.innerHTML;
            localTimes(el);
            dropzones(el);
          });
          document.dispatchEvent(new CustomEvent("tollgate:updated"));
        })
        .catch(function () { stale(); });
    }, 150);
  }

  // The note floats over the page's bottom edge (#live-note, reserved in
  // the layout) so that showing it never moves what the viewer reads.
  function stale() {
    var note = document.getElementById("live-note");
    if (!note || !note.hidden) {
      return;
    }
    note.innerHTML = 'This page has changed. <a href="">Reload</a> to see it.';
    note.hidden = false;
  }

  function live() {
    var marker = document.querySelector("[data-live-scope]");
    if (!marker || !window.WebSocket) {
      return;
    }
    var scope = marker.getAttribute("data-live-scope");
    var url = (location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/live?scope=" + encodeURIComponent(scope);
    var backoff = 1000;
    var opened = false;
    function connect() {
      var ws = new WebSocket(url);
      ws.onopen = function () {
        if (opened) {
          refresh(); // re-sync after a reconnect
        }
        opened = true;
        backoff = 1000;
        document.documentElement.setAttribute("data-live", "connected");
      };
      ws.onmessage = function () { refresh(); };
      ws.onclose = function () {
        document.documentElement.setAttribute("data-live", "reconnecting");
        setTimeout(connect, backoff + Math.random() * 500);
        backoff = Math.min(backoff * 2, 30000);
      };
    }
    connect();
  }

  // Folded sections (the menu, the inbox filters) are open on wide
  // screens. The stylesheet does it where ::details-content is known;
  // elsewhere they are opened here.
  function folds() {
    var wide = window.matchMedia && window.matchMedia("(min-width: 768px)").matches;
    var css = window.CSS && CSS.supports && CSS.supports("selector(::details-content)");
    if (wide && !css) {
      document.querySelectorAll("details.fold").forEach(function (d) { d.open = true; });
    }
  }

  document.addEventListener("DOMContentLoaded", function () {
    folds();
    localTimes(document);
    dropzones(document);
    document.addEventListener("input", function (e) {
      if (e.target.closest && e.target.closest("[data-live-region] form")) {
        dirty = true;
      }
    });
    live();
  });
})();
