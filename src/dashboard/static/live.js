// polisd dashboard: live updates. The page works without this script; with it, each change
// the daemon publishes (server-sent events) re-fetches the page and swaps its <main>.
(function () {
  "use strict";
  var meta = document.querySelector('meta[name="polisd-events"]');
  if (!meta || !window.EventSource || !window.fetch || !window.DOMParser) return;
  var busy = false, again = false;
  function refresh() {
    if (busy) { again = true; return; }
    busy = true;
    fetch(window.location.href, { credentials: "same-origin", headers: { "X-Polisd-Live": "1" } })
      .then(function (r) { return r.ok ? r.text() : Promise.reject(r.status); })
      .then(function (text) {
        var doc = new DOMParser().parseFromString(text, "text/html");
        var next = doc.querySelector("main"), cur = document.querySelector("main");
        if (next && cur) cur.replaceWith(document.importNode(next, true));
        document.title = doc.title;
        document.body.setAttribute("data-generation", doc.body.getAttribute("data-generation") || "");
      })
      .catch(function () {})
      .then(function () { busy = false; if (again) { again = false; refresh(); } });
  }
  var source = new EventSource(meta.getAttribute("content"));
  source.addEventListener("open", function () { document.body.setAttribute("data-live", "on"); });
  source.addEventListener("error", function () { document.body.setAttribute("data-live", "off"); });
  source.addEventListener("change", refresh);
})();
