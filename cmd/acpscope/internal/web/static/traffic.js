// acpscope web: the traffic view. Renders the messages /api/traffic
// sends; every string in them came from an agent or an editor and reaches
// the page only through textContent and attribute values, never as markup.
"use strict";

(function () {
  var body = document.body;
  var data = JSON.parse(document.getElementById("page-data").textContent);
  var framesEl = document.getElementById("frames");
  var statusEl = document.getElementById("t-status");
  var emptyEl = document.getElementById("t-empty");
  var last = 0;
  var shown = 0;
  // maxShown bounds the messages kept in the page: the oldest go first.
  var maxShown = 2000;

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }

  // visible escapes what could reorder or hide text (controls, line and
  // paragraph separators, bidirectional formatting) as \uXXXX, as the
  // server escapes the messages' text.
  function visible(s) {
    return String(s).replace(/[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g, function (c) {
      return "\\u" + ("000" + c.charCodeAt(0).toString(16)).slice(-4);
    });
  }

  function fmtMs(ms) {
    if (ms < 1000) return "+" + ms.toFixed(1) + " ms";
    return "+" + (ms / 1000).toFixed(3) + " s";
  }

  function fmtBytes(n) {
    if (n < 1024) return n + " B";
    if (n < 1 << 20) return (n / 1024).toFixed(1) + " KiB";
    return (n / (1 << 20)).toFixed(1) + " MiB";
  }

  function query(extra) {
    var q = "";
    if (data.session) q += "&session=" + encodeURIComponent(data.session);
    if (data.method) q += "&method=" + encodeURIComponent(data.method);
    return q + (extra || "");
  }

  function link(cls, text, href, title) {
    var a = el("a", cls, text);
    a.href = href;
    if (title) a.title = title;
    return a;
  }

  function frameNode(f) {
    var d = el("details", "frame from-" + (f.from === "agent" ? "agent" : "client"));
    d.dataset.seq = String(f.seq);
    var s = el("summary");
    s.appendChild(el("span", "seq", "#" + f.seq));
    s.appendChild(el("span", "ms", fmtMs(f.ms)));
    s.appendChild(el("span", "dir", f.from === "agent" ? "agent → client" : "client → agent"));
    s.appendChild(el("span", "kind k-" + f.kind, f.kind));
    if (f.method) s.appendChild(el("span", "fact method", visible(f.method)));
    if (f.id) s.appendChild(el("span", "fact id", "id " + visible(f.id)));
    if (f.update) s.appendChild(el("span", "fact update", visible(f.update)));
    if (f.session) {
      s.appendChild(link("fact session", "session " + visible(f.session),
        "/traffic?session=" + encodeURIComponent(f.session), "this session's messages"));
    }
    if (f.session && f.call) {
      s.appendChild(link("fact card", "card " + visible(f.call),
        "/traffic/card?session=" + encodeURIComponent(f.session) + "&call=" + encodeURIComponent(f.call), "the card of this tool call"));
    } else if (f.session && f.kind !== "response") {
      s.appendChild(link("fact card", "session card",
        "/traffic/card?session=" + encodeURIComponent(f.session), "the card of this (child) session"));
    }
    s.appendChild(el("span", "fact size", fmtBytes(f.size)));
    if (f.truncated) {
      s.appendChild(el("span", "cut", "cut: the first " + fmtBytes(Math.min(data.limits.frame_bytes, f.size)) + " of " + fmtBytes(f.size) + " shown"));
    }
    d.appendChild(s);
    var j = el("div", "json", f.text);
    if (f.truncated) j.appendChild(el("span", "cut", " … [cut: the message is " + f.size + " bytes]"));
    d.appendChild(j);
    return d;
  }

  function fillSelect(id, values, current) {
    var sel = document.getElementById(id);
    var have = {};
    for (var i = 1; i < sel.options.length; i++) have[sel.options[i].value] = true;
    var all = values.slice();
    if (current && all.indexOf(current) < 0) all.push(current);
    for (var k = 0; k < all.length; k++) {
      if (have[all[k]]) continue;
      var o = el("option", null, visible(all[k]));
      o.value = all[k];
      sel.appendChild(o);
    }
    sel.value = current || "";
  }

  function injectedCount() {
    return document.querySelectorAll(
      "main script, main iframe, main object, main embed, main svg, main img, main [onerror], main [onload], " +
      "main [onclick], main [onmouseover], main a[href^='javascript:' i], main form[action]:not(.filter)"
    ).length;
  }

  function render(a) {
    for (var i = 0; i < a.frames.length; i++) {
      framesEl.appendChild(frameNode(a.frames[i]));
      shown++;
    }
    while (shown > maxShown) {
      framesEl.removeChild(framesEl.firstChild);
      shown--;
    }
    last = a.last;
    fillSelect("f-session", a.sessions || [], data.session);
    fillSelect("f-method", a.methods || [], data.method);
    var L = data.limits;
    statusEl.textContent = (data.source ? data.source + ": " : "") + a.kept + " messages kept (" + fmtBytes(a.bytes) +
      "), " + a.dropped + " older ones dropped; the log keeps at most " + L.frames + " messages and " +
      fmtBytes(L.bytes) + ", each cut to " + fmtBytes(L.frame_bytes) + " for display; the page shows the last " + maxShown + ".";
    emptyEl.hidden = shown > 0;
    var ds = body.dataset;
    ds.frames = String(framesEl.childElementCount);
    ds.cut = String(framesEl.querySelectorAll("summary .cut").length);
    ds.last = String(last);
    ds.injected = String(injectedCount());
    ds.selfcheck = "done";
  }

  function fetchMore() {
    // The first read starts at the latest messages the page keeps.
    var tail = last === 0 ? "&tail=" + maxShown : "";
    return fetch("/api/traffic?after=" + last + query(tail), { credentials: "same-origin", cache: "no-store" })
      .then(function (r) { if (!r.ok) throw new Error(String(r.status)); return r.json(); })
      .then(function (a) {
        render(a);
        document.getElementById("live").classList.remove("stale");
        return a.more;
      });
  }

  function tick() {
    if (document.hidden) { setTimeout(tick, data.poll_ms); return; }
    fetchMore().then(function (more) {
      setTimeout(tick, more ? 0 : data.poll_ms);
    }, function () {
      document.getElementById("live").classList.add("stale");
      body.dataset.selfcheck = "done";
      body.dataset.failed = "1";
      setTimeout(tick, data.poll_ms);
    });
  }

  tick();
})();
