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

  function poll(url, token, onChange, interval) {
    function tick() {
      if (document.hidden) { setTimeout(tick, interval); return; } // no reads for a hidden tab
      fetch(url, { credentials: "same-origin", cache: "no-store" })
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

  function renderTimeline(view) {
    var tl = document.getElementById("timeline");
    var span = Math.max(view.span, 1);
    var frag = document.createDocumentFragment();
    view.cards.forEach(function (c, i) {
      var bar = el("div", "bar " + c.status + (c.is_async ? " async" : ""));
      bar.dataset.i = String(i);
      bar.title = label(c) + " — " + c.tool_call_id;
      bar.style.left = (100 * c.start / span) + "%";
      bar.style.width = "max(3px, " + (100 * (c.end - c.start) / span) + "%)";
      bar.style.top = (c.lane * LANE) + "px";
      frag.appendChild(bar);
    });
    (view.turns || []).forEach(function (t) {
      var mark = el("div", "turn-mark");
      mark.title = "turn " + t.n + " began";
      mark.style.left = (100 * t.start / span) + "%";
      mark.appendChild(el("span", "turn-label", "turn " + t.n));
      frag.appendChild(mark);
    });
    tl.replaceChildren(frag);
    tl.style.height = (Math.max(view.lanes, 1) * LANE) + "px";
    var axis = document.getElementById("axis");
    axis.replaceChildren(el("span", null, "0"), el("span", "end", fmtMs(view.span)));
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
    renderTimeline(current);
    if (selected >= 0) showDetails(selected);
    recordCheck({
      treeNodes: document.querySelectorAll("#tree li.node").length,
      bars: document.querySelectorAll("#timeline .bar").length,
      lanes: current.lanes,
      cards: current.cards.length,
      total: current.total,
      turnMarks: document.querySelectorAll("#timeline .turn-mark").length,
      unknown: document.querySelectorAll("#tree li.st-unknown").length,
      reasons: document.querySelectorAll("#tree .reason").length,
      referenced: document.querySelectorAll("#tree .tag.ref").length,
      renderMs: (performance.now() - t0).toFixed(1)
    });
  }

  function sessionPage(d) {
    var m = /^#card-(\d+)$/.exec(location.hash);
    if (m) selected = Number(m[1]);
    renderSession(d);
    document.querySelector("main").addEventListener("click", function (ev) {
      var t = ev.target.closest("[data-i]");
      if (t) showDetails(Number(t.dataset.i));
    });
    var id = encodeURIComponent(d.view.session.id);
    poll("/api/changes?id=" + id, d.view.token, function () {
      return fetch("/api/session?id=" + id + "&offset=" + windowOffset + "&limit=" + windowLimit, { cache: "no-store" })
        .then(function (r) { return r.json(); })
        .then(renderSession);
    }, d.poll_ms);
  }

  var data = readData();
  if (!data) return;
  if (body.dataset.page === "sessions") sessionsPage(data);
  else if (body.dataset.page === "session") sessionPage(data);
})();
