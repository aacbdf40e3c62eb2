// Tollgate's pages work without this script. It shows times in the
// viewer's own zone, lets files be dropped onto an upload form, keeps
// pages current over a websocket and gives a request page its keys.
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
              if (next) {
                settlePanel(el, next, fresh);
              }
              return;
            }
            if (el.querySelector("[data-pending-panel]")) {
              settlePanel(el, next, fresh);
              return;
            }
            if (dirty && el.querySelector("form")) {
              stale();
              return;
            }
            if (el.hasAttribute("data-hold-rows") && holdRows(el, next)) {
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

  // A list a person works through (data-hold-rows) holds still under
  // their pointer: a row that is no longer in the fresh list (decided by
  // someone else) stays where it was, marked, and rows that arrived wait
  // behind a button floating over the page, which shows them when
  // pressed. Rows in both are brought up to date in place. It returns
  // false when nothing would move, and the region is simply swapped.
  function holdRows(el, next) {
    var ids = function (root) {
      var out = {};
      root.querySelectorAll("tr[data-suspension]").forEach(function (r) { out[r.getAttribute("data-suspension")] = r; });
      return out;
    };
    var have = ids(el), fresh = ids(next);
    var arrived = Object.keys(fresh).filter(function (id) { return !have[id]; });
    var left = Object.keys(have).filter(function (id) { return !fresh[id]; });
    if (Object.keys(have).length === 0 || (arrived.length === 0 && left.length === 0)) {
      return false;
    }
    Object.keys(have).forEach(function (id) {
      var row = have[id];
      if (fresh[id]) {
        if (fresh[id].innerHTML !== row.innerHTML) {
          row.innerHTML = fresh[id].innerHTML;
          localTimes(row);
        }
        return;
      }
      if (!row.hasAttribute("data-left")) {
        row.setAttribute("data-left", "");
        var action = row.querySelector('td[data-label="Action"]');
        if (action) {
          action.textContent = "No longer waiting";
        }
      }
    });
    var news = document.querySelector("[data-live-news]");
    if (news) {
      var n = arrived.length;
      news.textContent = n === 0 ? "Refresh the list" : n + (n === 1 ? " new request" : " new requests") + " — show";
      news.hidden = false;
      news.onclick = function () {
        el.innerHTML = next.innerHTML;
        localTimes(el);
        news.hidden = true;
      };
    }
    return true;
  }

  // A request's form (data-pending-panel) is never swapped out under the
  // person using it: when the request changes its buttons are disabled
  // at once (holdPanels) and, once the fresh page is read, either enabled
  // again (it still waits) or left disabled with a notice naming who
  // decided, in the space kept for it. What was typed stays.
  function holdPanels() {
    document.querySelectorAll("[data-pending-panel]").forEach(function (form) {
      if (form.hasAttribute("data-decided")) {
        return;
      }
      form.setAttribute("data-held", "");
      form.querySelectorAll("button").forEach(function (b) { b.disabled = true; });
      decideKeys(false);
      var note = form.querySelector("[data-decided-notice]");
      if (note && !note.textContent) {
        note.textContent = "This request changed. Checking…";
      }
    });
  }

  // decideKeys shows or hides the hint of the keys that decide (a, r):
  // they do nothing while the buttons they press are disabled.
  function decideKeys(on) {
    document.querySelectorAll("[data-decide-keys]").forEach(function (k) { k.hidden = !on; });
  }

  function settlePanel(el, next, fresh) {
    var form = el.querySelector("[data-pending-panel]");
    if (!form) {
      return;
    }
    var note = form.querySelector("[data-decided-notice]");
    if (next.querySelector("[data-pending-panel]")) {
      if (form.hasAttribute("data-held")) {
        form.removeAttribute("data-held");
        form.querySelectorAll("button").forEach(function (b) { b.disabled = false; });
        decideKeys(true);
        if (note) {
          note.textContent = "";
        }
      }
      return;
    }
    form.removeAttribute("data-held");
    form.setAttribute("data-decided", "");
    form.querySelectorAll("button").forEach(function (b) { b.disabled = true; });
    var said = fresh.querySelector("[data-decided-text]");
    if (note) {
      note.textContent = (said ? said.textContent.replace(/^[\s·]+/, "").replace(/\s+/g, " ").trim() : "This request was decided.") +
        " Your answer was not sent; what you typed is still here to copy.";
      note.classList.add("shown");
    }
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
    var url = (location.protocol === "https:" ? "wss://" : "ws://") + location.host + (document.documentElement.getAttribute("data-base") || "") + "/live?scope=" + encodeURIComponent(scope);
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
      ws.onmessage = function () {
        holdPanels();
        refresh();
      };
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

  // The browser's time zone, for the server to write times in.
  function rememberZone() {
    try {
      var tz = Intl.DateTimeFormat().resolvedOptions().timeZone;
      if (tz && document.cookie.indexOf("tz=" + encodeURIComponent(tz)) < 0) {
        document.cookie = "tz=" + encodeURIComponent(tz) + "; path=/; max-age=31536000; SameSite=Lax";
      }
    } catch (e) { /* no Intl: the server writes UTC */ }
  }

  // Keys on a request page: a approves and r rejects (through the
  // "& next" buttons, so the form's own rules, a required comment
  // included, apply), j and k open the next and previous request. In the
  // inbox j and k move the focus down and up its requests, and Enter
  // opens the one focused, as it does any link. None acts while the
  // person types in a field.
  function shortcuts() {
    if (!document.querySelector("[data-shortcuts]")) {
      return;
    }
    document.addEventListener("keydown", function (e) {
      if (e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey || e.isComposing) {
        return;
      }
      var t = e.target;
      var ticks = t && t.tagName === "INPUT" && /^(checkbox|radio)$/.test(t.type);
      if (t && !ticks && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName))) {
        return;
      }
      var target = null;
      switch (e.key) {
        case "a":
          target = document.querySelector('[data-pending-panel] button[data-action="approve"]');
          break;
        case "r":
          target = document.querySelector('[data-pending-panel] button[data-action="reject"]');
          break;
        case "j":
        case "k":
          if (document.querySelector("[data-inbox-list]")) {
            e.preventDefault();
            moveInInbox(e.key === "j" ? 1 : -1);
            return;
          }
          target = document.querySelector(e.key === "j" ? 'a[data-queue="next"]' : 'a[data-queue="prev"]');
          break;
        default:
          return;
      }
      if (!target || target.disabled) {
        return;
      }
      e.preventDefault();
      if (target.tagName === "A") {
        location.href = target.href;
        return;
      }
      target.focus();
      target.form.requestSubmit(target);
    });
  }

  // moveInInbox focuses the request by step rows from the focused one
  // (the first, when none is), skipping rows no longer waiting.
  function moveInInbox(step) {
    var links = Array.prototype.slice.call(document.querySelectorAll("[data-inbox-list] tr[data-suspension]:not([data-left]) a.title"));
    if (links.length === 0) {
      return;
    }
    var at = links.indexOf(document.activeElement);
    var next = at < 0 ? (step > 0 ? 0 : links.length - 1) : Math.min(Math.max(at + step, 0), links.length - 1);
    links[next].focus();
    links[next].scrollIntoView({ block: "nearest" });
  }

  document.addEventListener("DOMContentLoaded", function () {
    folds();
    rememberZone();
    var summary = document.querySelector("[data-error-summary]");
    if (summary) {
      summary.focus();
    }
    shortcuts();
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
