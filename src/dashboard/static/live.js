// polisd dashboard: live updates. The page works without this script; with it, each change
// the daemon publishes (server-sent events) re-fetches the page and swaps its <main>. When the
// stream breaks a banner says the server is not answering; when it comes back the page is
// fetched again, since changes made meanwhile sent no event to this page.
(function () {
  "use strict";
  var meta = document.querySelector('meta[name="polisd-events"]');
  if (!meta || !window.EventSource || !window.fetch || !window.DOMParser) return;
  var banner = document.getElementById("offline");
  var busy = false, again = false, lost = false;
  function say(text) {
    if (!banner) return;
    banner.textContent = text;
    banner.hidden = !text;
  }
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
  var source;
  function connect() {
    source = new EventSource(meta.getAttribute("content"));
    source.addEventListener("open", function () {
      document.body.setAttribute("data-live", "on");
      say("");
      if (lost) { lost = false; refresh(); }
    });
    source.addEventListener("error", function () {
      document.body.setAttribute("data-live", "off");
      lost = true;
      if (source.readyState === EventSource.CLOSED) {
        // Refused (the server is busy, or gone before the stream opened): try again later.
        say("Live updates paused: the server is busy or not answering. Retrying…");
        source.close();
        setTimeout(connect, 5000);
      } else {
        say("Offline: the server is not answering. Reconnecting…");
      }
    });
    source.addEventListener("change", refresh);
  }
  connect();
})();
