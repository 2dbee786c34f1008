// acpscope web: renders the page data (JSON from the server) into the DOM.
// Every string from the store is agent-supplied: it reaches the page only
// through textContent, title or dataset, never as markup.
"use strict";

(function () {
  var body = document.body;
  var selfCheck = { renders: 0 };

  function readData() {
    var el = document.getElementById("page-data");
    return el ? JSON.parse(el.textContent) : null;
  }

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }

  function fmtTime(iso) {
    if (!iso) return "–";
    return iso.replace("T", " ").replace(/\.\d+Z$/, "Z").replace(/Z$/, "");
  }

  function fmtMs(ms) {
    if (ms === null || ms === undefined) return "–";
    if (ms < 1000) return ms + " ms";
    if (ms < 60000) return (ms / 1000).toFixed(1) + " s";
    return Math.floor(ms / 60000) + " min " + Math.round((ms % 60000) / 1000) + " s";
  }

  function fmtNum(n) {
    return n === null || n === undefined ? "not reported" : String(n);
  }

  // serverMs is the server time of this page, from its Server-Timing header.
  function serverMs() {
    var nav = performance.getEntriesByType && performance.getEntriesByType("navigation")[0];
    if (!nav || !nav.serverTiming) return "";
    for (var i = 0; i < nav.serverTiming.length; i++) {
      if (nav.serverTiming[i].name === "app") return nav.serverTiming[i].duration.toFixed(1);
    }
    return "";
  }

  // recordCheck publishes what the page rendered, for the browser tests: a
  // DOM dump shows these attributes. injected counts elements no renderer
  // here creates (an escaping failure would add them; injectedCount).
  function injectedCount() {
    return document.querySelectorAll(
      "main script, main iframe, main object, main embed, main svg, main img, main [onerror], main [onload], " +
      "main [onclick], main [onmouseover], main a[href^='javascript:' i], main form[action]:not(.filter)"
    ).length;
  }

  function recordCheck(extra) {
    selfCheck.renders++;
    var ds = body.dataset;
    ds.renders = String(selfCheck.renders);
    ds.injected = String(injectedCount());
    ds.serverMs = serverMs();
    for (var k in extra) ds[k] = String(extra[k]);
    ds.selfcheck = "done";
  }

  // skew is the server's clock minus this browser's (ms): the running
  // bars and the elapsed times go by the server's time. It is set from
  // the page data's now_ms and from the server-time header of each answer
  // (taken at the middle of the request).
  var skew = 0;
  function serverNow() { return Date.now() + skew; }
  function setSkew(serverMs, sentAt, receivedAt) {
    if (serverMs > 0) skew = serverMs - (sentAt + receivedAt) / 2;
  }
  function timedFetch(url) {
    var sent = Date.now();
    return fetch(url, { credentials: "same-origin", cache: "no-store" }).then(function (r) {
      setSkew(Number(r.headers.get("Acpscope-Server-Time")), sent, Date.now());
      return r;
    });
  }

  function poll(url, token, onChange, interval) {
    function tick() {
      if (document.hidden) { setTimeout(tick, interval); return; } // no reads for a hidden tab
      timedFetch(url)
        .then(function (r) { return r.ok ? r.json() : null; })
        .then(function (d) {
          var live = document.getElementById("live");
          if (live) live.classList.toggle("off", !d);
          if (d && d.token !== token) {
            token = d.token;
            return onChange();
          }
        })
        .catch(function () {
          var live = document.getElementById("live");
          if (live) live.classList.add("off");
        })
        .then(function () { setTimeout(tick, interval); });
    }
    setTimeout(tick, interval);
  }

  // --- sessions page -------------------------------------------------------

  // incompleteTag marks a session whose observation lost lines (the
  // tap's observer fell behind): its cards may miss what they said.
  function incompleteTag(r) {
    var tag = el("span", "tag incomplete", "observation incomplete");
    tag.title = r.unobserved + " lines of its connection were not observed";
    return tag;
  }

  function renderSessions(d) {
    var t0 = performance.now();
    var tbody = document.querySelector("#sessions tbody");
    var frag = document.createDocumentFragment();
    var listed = {};
    d.rows.forEach(function (r) { listed[r.id] = true; });
    var childOf = {};
    d.rows.forEach(function (r) {
      (r.child_sessions || []).forEach(function (c) { if (listed[c]) childOf[c] = r.id; });
    });
    d.rows.forEach(function (r) {
      var tr = el("tr", "st-" + r.status);
      var td = el("td");
      var a = el("a", null, r.id);
      a.href = "/session?id=" + encodeURIComponent(r.id);
      if (childOf[r.id]) {
        td.appendChild(el("span", "child-mark", "↳ "));
        a.title = "subagent session of " + childOf[r.id];
      }
      td.appendChild(a);
      tr.appendChild(td);
      tr.appendChild(el("td", null, r.agent || "–"));
      tr.appendChild(el("td", null, fmtTime(r.started)));
      tr.appendChild(el("td", "num", r.turns));
      tr.appendChild(el("td", "num", r.cards));
      var st = tr.appendChild(el("td", null, r.status));
      st.appendChild(el("span", "dot " + r.status));
      if (r.observation_incomplete) st.appendChild(incompleteTag(r));
      frag.appendChild(tr);
    });
    tbody.replaceChildren(frag);
    document.getElementById("empty").hidden = d.rows.length > 0;
    recordCheck({ rows: d.rows.length, renderMs: (performance.now() - t0).toFixed(1) });
  }

  function sessionsPage(d) {
    renderSessions(d);
    var qs = "agent=" + encodeURIComponent(d.agent) + "&q=" + encodeURIComponent(d.text);
    poll("/api/changes", d.token, function () {
      return fetch("/api/sessions?" + qs, { cache: "no-store" })
        .then(function (r) { return r.json(); })
        .then(renderSessions);
    }, d.poll_ms);
  }

  // --- session page ---------------------------------------------------------

  var current = null; // the SessionView drawn
  var selected = -1;

  function label(c) {
    var head = c.subagent_type || "subagent";
    return c.description ? head + " · " + c.description : head;
  }

  // local is the index in this window of the card at index i of the
  // whole view, or -1 when the card is outside the window.
  function local(view, i) {
    var j = i - (view.offset || 0);
    return i >= 0 && j >= 0 && j < view.cards.length ? j : -1;
  }

  function renderTree(view) {
    var cards = view.cards;
    var kids = cards.map(function () { return []; });
    var roots = [];
    cards.forEach(function (c, i) {
      var p = local(view, c.parent);
      if (p >= 0) kids[p].push(i);
      else roots.push(i);
    });
    var top = el("ul", "tree-root");
    // Iterative depth-first build: a chain may be thousands deep.
    var stack = [];
    for (var r = roots.length - 1; r >= 0; r--) stack.push([roots[r], top]);
    while (stack.length) {
      var item = stack.pop();
      var i = item[0], c = cards[i];
      var li = el("li", "node st-" + c.status + (c.is_async ? " async" : ""));
      li.dataset.i = String(i);
      var row = el("div", "row");
      row.appendChild(el("span", "dot " + c.status));
      var lab = el("span", "label", label(c));
      lab.title = c.tool_call_id;
      row.appendChild(lab);
      if (c.parent >= 0 && local(view, c.parent) < 0) {
        row.appendChild(el("span", "tag", "under card " + (c.parent + 1)));
      }
      if (c.turn > 0 && view.turn_count > 1) row.appendChild(el("span", "tag turn", "turn " + c.turn));
      if (c.child_session_id) row.appendChild(el("span", "tag", "session"));
      if (c.is_async) row.appendChild(el("span", "tag bg", "background"));
      if (c.status === "unknown") row.appendChild(el("span", "tag unknown", "not tracked"));
      if (c.has_earlier_results) row.appendChild(el("span", "tag", "answered again"));
      if (c.referenced_by && c.referenced_by.length) {
        var refTag = el("span", "tag ref", "referenced ×" + c.referenced_by.length);
        refTag.title = "referenced by " + c.referenced_by.join(", ");
        row.appendChild(refTag);
      }
      if (c.error_message) {
        var reason = el("span", "reason", c.error_message);
        reason.title = c.error_message;
        row.appendChild(reason);
      }
      row.appendChild(el("span", "meta", c.tool_status || "pending"));
      li.appendChild(row);
      item[1].appendChild(li);
      if (kids[i].length) {
        var ul = el("ul");
        li.appendChild(ul);
        for (var k = kids[i].length - 1; k >= 0; k--) stack.push([kids[i][k], ul]);
      }
    }
    var tree = document.getElementById("tree");
    tree.replaceChildren(top);
    if (!cards.length) tree.appendChild(el("p", "note", "No subagent cards stored for this session."));
  }

  var LANE = 16; // px per lane
  // MAX_LABEL_ROWS bounds the rows of turn labels above the bars: a label
  // that fits in none of them (turns packed into a few pixels) is not
  // drawn; its mark stays, named by its title.
  var MAX_LABEL_ROWS = 3;
  var LABEL_GAP = 4; // px between two labels of a row

  // running reports whether a card is running: open (not settled, still
  // tracked). Its bar grows with the server's clock.
  function running(c) { return c.status === "open"; }

  // liveMs is the time since the view's origin by the server's clock, or
  // 0 when the view has no origin.
  function liveMs(view) {
    var origin = view.origin ? Date.parse(view.origin) : NaN;
    return isNaN(origin) ? 0 : Math.max(0, serverNow() - origin);
  }

  // timelineSpan is the axis' length: the stored span, or, while a card
  // runs, the time until now (server clock).
  function timelineSpan(view) {
    var span = view.span;
    if (view.cards.some(running)) span = Math.max(span, liveMs(view));
    return Math.max(span, 1);
  }

  var drawn = { bars: [], marks: [], labels: [] };

  function renderTimeline(view) {
    var tl = document.getElementById("timeline");
    var strip = document.getElementById("turn-labels");
    var frag = document.createDocumentFragment(), labels = document.createDocumentFragment();
    drawn = { bars: [], marks: [], labels: [] };
    view.cards.forEach(function (c, i) {
      var bar = el("div", "bar " + c.status + (c.is_async ? " async" : ""));
      bar.dataset.i = String(i);
      bar.title = label(c) + " — " + c.tool_call_id;
      bar.style.top = (c.lane * LANE) + "px";
      drawn.bars.push(bar);
      frag.appendChild(bar);
    });
    (view.turns || []).forEach(function (t) {
      var mark = el("div", "turn-mark");
      mark.title = "turn " + t.n + " began";
      drawn.marks.push(mark);
      frag.appendChild(mark);
      var lab = el("span", "turn-label", "turn " + t.n);
      lab.title = "turn " + t.n + " began";
      drawn.labels.push(lab);
      labels.appendChild(lab);
    });
    tl.replaceChildren(frag);
    if (strip) strip.replaceChildren(labels);
    tl.style.height = (Math.max(view.lanes, 1) * LANE) + "px";
    layoutTimeline(view);
  }

  // layoutTimeline places the bars, marks and turn labels on the axis as
  // it is now: a running card's bar ends at the server's present.
  function layoutTimeline(view) {
    var span = timelineSpan(view), now = liveMs(view);
    view.cards.forEach(function (c, i) {
      var bar = drawn.bars[i];
      if (!bar) return;
      var end = running(c) ? Math.max(c.end, now) : c.end;
      // A bar never passes the right edge, even at its 3 px minimum.
      bar.style.left = "min(" + (100 * c.start / span) + "%, calc(100% - 3px))";
      bar.style.width = "max(3px, " + (100 * (end - c.start) / span) + "%)";
    });
    (view.turns || []).forEach(function (t, k) {
      if (drawn.marks[k]) drawn.marks[k].style.left = (100 * t.start / span) + "%";
    });
    placeTurnLabels(view, span);
    var axis = document.getElementById("axis");
    axis.replaceChildren(el("span", null, "0"), el("span", "end", fmtMs(Math.round(span))));
  }

  // placeTurnLabels puts each turn label beside its mark, inside the
  // strip (to the mark's left when it would pass the right edge), in the
  // first row where it overlaps no other label; one that fits in no row
  // is hidden.
  function placeTurnLabels(view, span) {
    var strip = document.getElementById("turn-labels");
    if (!strip) return;
    // Widths are measured on screen and converted to the strip's own
    // pixels (a CSS zoom makes them differ), rounded up: a label is
    // never placed narrower than it is.
    var width = strip.clientWidth, rowEnds = [], rowHeight = 0, hidden = 0;
    var onScreen = strip.getBoundingClientRect().width, factor = onScreen > 0 && width > 0 ? width / onScreen : 1;
    // Measured first, all at once (every write after every read would lay
    // the page out again per label).
    drawn.labels.forEach(function (lab) { lab.hidden = false; });
    var sizes = drawn.labels.map(function (lab) {
      var box = lab.getBoundingClientRect();
      return [Math.ceil(box.width * factor), Math.ceil(box.height * factor)];
    });
    (view.turns || []).forEach(function (t, k) {
      var lab = drawn.labels[k];
      var w = sizes[k][0], x = width * t.start / span;
      rowHeight = Math.max(rowHeight, sizes[k][1]);
      var left = x + 2;
      if (left + w > width) left = x - 2 - w;
      left = Math.max(0, Math.min(left, width - w));
      var row = 0;
      while (row < rowEnds.length && left < rowEnds[row] + LABEL_GAP) row++;
      if (row >= MAX_LABEL_ROWS || w > width) { lab.hidden = true; hidden++; return; }
      rowEnds[row] = left + w;
      lab.style.left = left + "px";
      lab.dataset.row = String(row);
    });
    drawn.labels.forEach(function (lab) {
      if (!lab.hidden) lab.style.top = (Number(lab.dataset.row) * rowHeight) + "px";
    });
    strip.style.height = (rowEnds.length * rowHeight) + "px";
    body.dataset.turnLabelsHidden = String(hidden);
  }

  // --- status panel: the running children ---------------------------------

  // MAX_RUNNING bounds the running cards the panel lists (the first ones).
  var MAX_RUNNING = 50;
  // live holds /api/live's answer: what the connection said of each
  // running child session (null when the server serves no live facts).
  var live = null;

  function ago(ms) { return ms < 1000 ? "just now" : fmtMs(Math.round(ms / 1000) * 1000) + " ago"; }

  function fact(dl, name, value) {
    var row = el("div", "fact");
    row.appendChild(el("dt", null, name));
    row.appendChild(value instanceof Node ? value : el("dd", null, value));
    dl.appendChild(row);
    return row;
  }

  // renderRunning lists the running cards of this window with their
  // elapsed time (server clock), last activity and, from the connection
  // (when the server watches it), the child's latest message, its tool
  // calls and its pending permission requests, and a Stop button for a
  // child that holds the cancel capability.
  function renderRunning(view) {
    var box = document.getElementById("running");
    if (!box) return;
    var list = document.getElementById("running-list");
    var frag = document.createDocumentFragment(), shown = 0, more = 0;
    view.cards.forEach(function (c, i) {
      if (!running(c)) return;
      if (shown >= MAX_RUNNING) { more++; return; }
      shown++;
      var li = el("li", "run-card");
      li.dataset.i = String(i);
      var head = el("div", "run-head");
      head.appendChild(el("span", "dot open"));
      head.appendChild(el("span", "run-label", label(c)));
      li.appendChild(head);
      var dl = el("dl", "run-facts");
      var elapsed = el("dd", "elapsed");
      elapsed.dataset.observed = c.observed_at;
      fact(dl, "Elapsed", elapsed);
      var act = el("dd", "activity");
      act.dataset.updated = c.updated_at;
      fact(dl, "Last activity", act);
      var l = live && c.child_session_id ? live.children[c.child_session_id] : null;
      if (l && l.seen) {
        var last = el("dd", "activity");
        last.dataset.updated = l.last_activity;
        fact(dl, "Last message seen", last);
        fact(dl, "Latest message", l.latest_message ? el("dd", "text", l.latest_message) : "–");
        var calls = el("dd", "calls");
        if (!l.tool_calls.length) calls.textContent = "none seen";
        l.tool_calls.forEach(function (t) {
          var row = el("div", "call");
          row.appendChild(el("span", "call-title", t.title || t.id));
          row.appendChild(el("span", "meta", t.status || "pending"));
          calls.appendChild(row);
        });
        fact(dl, "Tool calls", calls);
        var perms = el("dd", "perms");
        if (!l.permissions.length) perms.textContent = "none";
        l.permissions.forEach(function (p) { perms.appendChild(el("div", "perm", p.title || p.id)); });
        fact(dl, "Pending permissions", perms);
      } else if (l) {
        fact(dl, "Connection", "no message of this child kept");
      }
      if (l && l.can_stop && live.stop) {
        var stop = el("button", "stop", l.stop_sent ? "Stop again" : "Stop");
        stop.type = "button";
        stop.dataset.child = c.child_session_id;
        stop.title = "send session/cancel for this child";
        head.appendChild(stop);
      }
      if (l && l.stop_sent) head.appendChild(el("span", "tag", "stop sent"));
      li.appendChild(dl);
      frag.appendChild(li);
    });
    if (more) frag.appendChild(el("li", "note", "and " + more + " more running"));
    list.replaceChildren(frag);
    box.hidden = shown === 0;
    tickRunning();
  }

  // tickRunning updates the elapsed times and the times since the last
  // activity by the server's clock.
  function tickRunning() {
    var now = serverNow();
    document.querySelectorAll("#running dd.elapsed").forEach(function (dd) {
      dd.textContent = fmtMs(Math.max(0, Math.round((now - Date.parse(dd.dataset.observed)) / 1000) * 1000));
    });
    document.querySelectorAll("#running dd.activity").forEach(function (dd) {
      var t = Date.parse(dd.dataset.updated);
      dd.textContent = isNaN(t) ? "–" : ago(Math.max(0, now - t)) + " (" + fmtTime(dd.dataset.updated) + ")";
    });
  }

  function renderSummary(view) {
    var s = view.session;
    var parts = [
      "agent " + (s.agent || "unknown"),
      "started " + fmtTime(s.started),
      view.turn_count + (view.turn_count === 1 ? " turn" : " turns"),
      view.total + " cards",
      view.lanes + (view.lanes === 1 ? " lane" : " lanes"),
      "status " + s.status
    ];
    if (view.family.length > 1) parts.push((view.family.length - 1) + " subagent sessions");
    if (s.observation_incomplete) parts.push("observation incomplete: " + s.unobserved + " lines not observed");
    document.getElementById("summary").textContent = parts.join(" · ");
    renderPager(view);
  }

  // renderPager says which cards the page shows and links the windows
  // before and after it: a large session is read a window at a time.
  function renderPager(view) {
    var pager = document.getElementById("pager");
    if (!pager) return;
    var n = view.cards.length, first = view.offset || 0;
    pager.replaceChildren();
    if (first === 0 && n >= view.total) return;
    var id = encodeURIComponent(view.session.id);
    function link(text, offset) {
      var a = el("a", null, text);
      a.href = "/session?id=" + id + "&offset=" + offset + "&limit=" + windowLimit;
      return a;
    }
    if (first > 0) pager.appendChild(link("‹ previous", Math.max(0, first - windowLimit)));
    pager.appendChild(el("span", null, " cards " + (n ? first + 1 : first) + "–" + (first + n) + " of " + view.total + " "));
    if (first + n < view.total) pager.appendChild(link("next ›", first + n));
  }

  // The window this page shows, from its address (the server's defaults
  // when absent).
  var params = new URLSearchParams(location.search);
  var windowOffset = Number(params.get("offset")) || 0;
  var windowLimit = Number(params.get("limit")) || 1000;

  // The texts of the card whose details are open, kept so that a redraw
  // shows them at once while they are read again.
  var texts = { key: null, data: null };
  var textsSeq = 0;

  function cardKey(c) {
    return JSON.stringify([c.session_id, c.execution, c.tool_call_id]);
  }

  // statusText says what a card's status class means.
  function statusText(c) {
    switch (c.status) {
      case "unknown": return "unknown: the agent no longer tracks this child (neither running, finished nor failed)";
      case "open": return "open (not settled)";
    }
    return c.status;
  }

  // cardLink is a link that opens the details of the card at index i of
  // the whole view: in this window, or the window that begins with it.
  function cardLink(view, i, text) {
    var a = el("a", "card-link", text);
    var j = local(view, i);
    if (j >= 0) {
      a.href = "#card-" + j;
      a.dataset.i = String(j);
    } else {
      a.href = "/session?id=" + encodeURIComponent(view.session.id) + "&offset=" + i + "&limit=" + windowLimit + "#card-0";
    }
    return a;
  }

  // MAX_CHILD_LINKS bounds the sub-card links one card's details list.
  var MAX_CHILD_LINKS = 50;

  // relatives fills the parent-card and sub-card cells of card i.
  function relatives(view, i, parentDd, childrenDd) {
    var c = view.cards[i];
    if (c.parent >= 0) {
      var p = view.cards[local(view, c.parent)];
      parentDd.appendChild(cardLink(view, c.parent, p ? label(p) : "card " + (c.parent + 1)));
    } else {
      parentDd.textContent = "– (top level)";
    }
    var whole = i + (view.offset || 0), n = 0, more = 0;
    view.cards.forEach(function (k, j) {
      if (k.parent !== whole) return;
      if (n >= MAX_CHILD_LINKS) { more++; return; }
      if (n++ > 0) childrenDd.appendChild(document.createTextNode(" · "));
      childrenDd.appendChild(cardLink(view, j + (view.offset || 0), label(k)));
    });
    if (more) childrenDd.appendChild(el("span", "note", " (and " + more + " more)"));
    if (!n) childrenDd.textContent = "none";
  }

  // references fills the cell of the tool calls referencing card c's
  // child session: a link to each that is a card of this window, else its
  // id as text.
  function references(view, c, dd) {
    var refs = c.referenced_by || [];
    if (!refs.length) { dd.textContent = "–"; return; }
    var byCall = {};
    view.cards.forEach(function (k, j) { if (k.session_id === c.session_id && !(k.tool_call_id in byCall)) byCall[k.tool_call_id] = j; });
    refs.forEach(function (id, n) {
      if (n > 0) dd.appendChild(document.createTextNode(" · "));
      dd.appendChild(id in byCall ? cardLink(view, byCall[id] + (view.offset || 0), id) : el("code", "ref-id", id));
    });
  }

  // fillFacts shows a card's failure reason and earlier answers: the
  // reason's summary from the session's data at once, the whole reason and
  // the answers (a collapsed list, each as text) once /api/card answered.
  function fillFacts(errDd, earlierDd, c, d) {
    errDd.replaceChildren();
    earlierDd.replaceChildren();
    var f = d && d.facts;
    var reason = f && f.stored ? f.error_message : c.error_message;
    if (reason) {
      errDd.appendChild(el("div", "text reason-text", reason));
      if (!(f && f.stored) && c.error_truncated) errDd.appendChild(el("span", "note", "(summary; the whole reason is loading)"));
    } else {
      errDd.textContent = f && !f.stored ? "not stored (this store keeps no card facts)" : "–";
    }
    if (!d) { earlierDd.textContent = c.has_earlier_results ? "loading…" : "none"; return; }
    if (!f.stored) { earlierDd.textContent = "not stored (this store keeps no card facts)"; return; }
    if (!f.earlier_count) { earlierDd.textContent = "none"; return; }
    var box = el("details", "earlier");
    box.appendChild(el("summary", null, f.earlier_count + (f.earlier_count === 1 ? " earlier answer" : " earlier answers")));
    var skipped = f.earlier_count - f.earlier_results.length;
    if (skipped > 0) box.appendChild(el("p", "note", "the first " + skipped + " not shown (only the latest are served)"));
    var ol = el("ol");
    ol.start = skipped + 1;
    f.earlier_results.forEach(function (text, k) {
      var li = el("li");
      li.appendChild(el("div", "text", text));
      if (k === 0 && f.earlier_truncated) li.appendChild(el("span", "note", "(truncated)"));
      ol.appendChild(li);
    });
    box.appendChild(ol);
    earlierDd.appendChild(box);
  }

  // fillText shows one stored text (prompt or result) in dd, as text.
  function fillText(dd, d, text, bytes, truncated, what) {
    dd.replaceChildren();
    if (!d) { dd.textContent = "loading…"; return; }
    if (!d.stored) { dd.textContent = "not stored (this store keeps no " + what + ")"; return; }
    if (text === null || text === undefined) { dd.textContent = "not reported"; return; }
    dd.appendChild(el("div", "text", text));
    if (truncated) dd.appendChild(el("span", "note", "(truncated, " + bytes + " bytes)"));
  }

  // loadTexts reads a card's prompt and result text (not part of the
  // session's data, so a large session stays a small page) into the two
  // cells, unless another card was opened meanwhile.
  function loadTexts(c, promptDd, resultDd, errDd, earlierDd) {
    var key = cardKey(c);
    function apply(d) {
      fillText(promptDd, d, d && d.prompt, d && d.prompt_bytes, d && d.prompt_truncated, "prompts");
      fillText(resultDd, d, d && d.result_text, d && d.result_bytes, d && d.result_truncated, "result texts");
      fillFacts(errDd, earlierDd, c, d);
      body.dataset.injected = String(injectedCount());
    }
    apply(texts.key === key ? texts.data : null);
    var seq = ++textsSeq;
    var url = "/api/card?session=" + encodeURIComponent(c.session_id) +
      "&execution=" + encodeURIComponent(c.execution) + "&call=" + encodeURIComponent(c.tool_call_id);
    fetch(url, { credentials: "same-origin", cache: "no-store" })
      .then(function (r) { if (!r.ok) throw new Error(String(r.status)); return r.json(); })
      .then(function (d) {
        if (seq !== textsSeq) return;
        texts = { key: key, data: d };
        apply(d);
        body.dataset.cardTexts = d.stored ? "stored" : "not-stored";
        body.dataset.cardFacts = d.facts.stored ? "stored" : "not-stored";
        body.dataset.earlierShown = String(earlierDd.querySelectorAll("li").length);
      })
      .catch(function () {
        if (seq !== textsSeq) return;
        promptDd.textContent = resultDd.textContent = earlierDd.textContent = "could not be read";
        body.dataset.cardTexts = "error";
      });
  }

  function showDetails(i) {
    var aside = document.getElementById("details");
    var c = current && current.cards[i];
    document.querySelectorAll(".sel").forEach(function (e) { e.classList.remove("sel"); });
    if (!c) { aside.hidden = true; selected = -1; textsSeq++; return; }
    selected = i;
    document.querySelectorAll('[data-i="' + i + '"]').forEach(function (e) { e.classList.add("sel"); });
    var dl = document.getElementById("details-list");
    var promptDd = el("dd", "texts"), resultDd = el("dd", "texts");
    var errDd = el("dd", "texts"), earlierDd = el("dd", "texts");
    var parentDd = el("dd"), childrenDd = el("dd"), refsDd = el("dd");
    relatives(current, i, parentDd, childrenDd);
    references(current, c, refsDd);
    var rows = [
      ["Description", c.description || "–"],
      ["Status", statusText(c)],
      ["Failure reason", errDd],
      ["Prompt", promptDd],
      ["Type", c.subagent_type || "–"],
      ["Model", c.model || "–"],
      ["Tokens", fmtNum(c.total_tokens)],
      ["Tool uses", fmtNum(c.tool_use_count)],
      ["Duration", c.duration_ms === null ? "not reported" : fmtMs(c.duration_ms)],
      ["Turn", c.turn > 0 ? "turn " + c.turn + " of " + current.turn_count : "not recorded"],
      ["Result", resultDd],
      ["Earlier results", earlierDd],
      ["Tool status", c.tool_status || "–"],
      ["Agent status", c.agent_status || "–"],
      ["Background", c.is_async ? "yes" : "no"],
      ["Tool call", c.tool_call_id],
      ["Parent card", parentDd],
      ["Sub-cards", childrenDd],
      ["Referenced by", refsDd],
      ["Parent tool call", c.parent_tool_call_id || "–"],
      ["Parent session", c.parent_session_id || "–"],
      ["Session", c.session_id],
      ["Child session", c.child_session_id || "–"],
      ["Agent id", c.agent_id || "–"],
      ["Execution", c.execution],
      ["First seen (UTC)", fmtTime(c.observed_at)],
      ["Settled (UTC)", fmtTime(c.settled_at)],
      ["Source", c.source]
    ];
    var frag = document.createDocumentFragment();
    rows.forEach(function (r) {
      frag.appendChild(el("dt", null, r[0]));
      frag.appendChild(r[1] instanceof Node ? r[1] : el("dd", null, r[1]));
    });
    dl.replaceChildren(frag);
    aside.hidden = false;
    loadTexts(c, promptDd, resultDd, errDd, earlierDd);
  }

  function renderSession(d) {
    var t0 = performance.now();
    current = d.view;
    renderSummary(current);
    renderTree(current);
    renderRunning(current);
    renderTimeline(current);
    if (selected >= 0) showDetails(selected);
    recordCheck({
      treeNodes: document.querySelectorAll("#tree li.node").length,
      bars: document.querySelectorAll("#timeline .bar").length,
      lanes: current.lanes,
      cards: current.cards.length,
      total: current.total,
      turnMarks: document.querySelectorAll("#timeline .turn-mark").length,
      running: document.querySelectorAll("#running li.run-card").length,
      unknown: document.querySelectorAll("#tree li.st-unknown").length,
      reasons: document.querySelectorAll("#tree .reason").length,
      referenced: document.querySelectorAll("#tree .tag.ref").length,
      renderMs: (performance.now() - t0).toFixed(1)
    });
  }

  // loadLive reads what the connection says of the running children
  // (/api/live) and redraws the panel; only while a card runs.
  var liveBusy = false;
  function loadLive(id) {
    if (liveBusy || !current || !current.cards.some(running)) return;
    liveBusy = true;
    timedFetch("/api/live?id=" + id)
      .then(function (r) { if (!r.ok) throw new Error(String(r.status)); return r.json(); })
      .then(function (d) {
        live = d;
        renderRunning(current);
        // The panel's new height may bring or take a scroll bar: the
        // labels are placed again now, not a frame later.
        placeTurnLabels(current, timelineSpan(current));
        body.dataset.live = "read";
      })
      .catch(function () { body.dataset.live = "error"; })
      .then(function () { liveBusy = false; });
  }

  // stopChild asks the server to send session/cancel for a child: a POST
  // with the page's token (the server checks it, the Origin and the Host).
  function stopChild(button, token) {
    var child = button.dataset.child;
    button.disabled = true;
    var form = new URLSearchParams();
    form.set("token", token);
    form.set("session", current.session.id);
    form.set("child", child);
    fetch("/api/stop", { method: "POST", body: form, credentials: "same-origin", cache: "no-store" })
      .then(function (r) {
        body.dataset.stop = String(r.status);
        if (!r.ok) return r.text().then(function (t) { button.title = t; button.disabled = false; });
        button.textContent = "Stop sent";
      })
      .catch(function () { body.dataset.stop = "error"; button.disabled = false; });
  }

  function sessionPage(d) {
    var m = /^#card-(\d+)$/.exec(location.hash);
    if (m) selected = Number(m[1]);
    if (d.now_ms) skew = d.now_ms - Date.now();
    renderSession(d);
    // While a card runs, its bar and the panel's times go with the clock.
    setInterval(function () {
      if (!current || document.hidden || !current.cards.some(running)) return;
      layoutTimeline(current);
      tickRunning();
    }, 1000);
    // The labels are placed in pixels: a strip that changes width (the
    // window, a zoom, a scroll bar coming) places them again.
    var strip = document.getElementById("turn-labels");
    if (strip && window.ResizeObserver) {
      new ResizeObserver(function () { if (current) placeTurnLabels(current, timelineSpan(current)); }).observe(strip);
    }
    window.addEventListener("resize", function () { if (current) layoutTimeline(current); });
    document.querySelector("main").addEventListener("click", function (ev) {
      var stop = ev.target.closest("button.stop");
      if (stop) { if (!stop.disabled) stopChild(stop, d.stop_token); return; }
      var t = ev.target.closest("[data-i]");
      if (t) showDetails(Number(t.dataset.i));
    });
    var id = encodeURIComponent(d.view.session.id);
    poll("/api/changes?id=" + id, d.view.token, function () {
      return fetch("/api/session?id=" + id + "&offset=" + windowOffset + "&limit=" + windowLimit, { cache: "no-store" })
        .then(function (r) { return r.json(); })
        .then(renderSession);
    }, d.poll_ms);
    if (d.live) {
      loadLive(id);
      setInterval(function () { if (!document.hidden) loadLive(id); }, d.poll_ms);
    }
  }

  var data = readData();
  if (!data) return;
  if (body.dataset.page === "sessions") sessionsPage(data);
  else if (body.dataset.page === "session") sessionPage(data);
})();
