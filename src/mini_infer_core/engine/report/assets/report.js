/* mini-infer engine report: draws the data embedded in the page (#report-data). The graph is
   laid out by dagre and drawn as SVG; the charts are Vega-Lite specs rendered by Vega.
   window.miReport exposes the state (selected node, the Vega views) for tests and users. */
(function () {
  "use strict";
  var D = JSON.parse(document.getElementById("report-data").textContent);
  var R = window.miReport = { data: D, views: {}, selected: null, ready: false, expanded: {} };
  var SVGNS = "http://www.w3.org/2000/svg";
  var PALETTE = ["#8ecae6", "#ffb703", "#90be6d", "#f4a6c6", "#bdb2ff", "#f9844a", "#a0c4ff",
                 "#caffbf", "#ffd6a5", "#e5e5e5"];
  var colourBy = "distribution";
  var LARGE = 400; /* nodes: beyond this, dagre keeps its initial order (see layout) */

  function el(tag, attrs, parent) {
    var e = document.createElementNS(SVGNS, tag);
    for (var k in attrs) { e.setAttribute(k, attrs[k]); }
    if (parent) { parent.appendChild(e); }
    return e;
  }
  function esc(s) {
    return String(s).replace(/[&<>"]/g, function (c) {
      return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[c];
    });
  }
  function mib(b) { return b == null ? "-" : (b / 1048576).toFixed(b < 1048576 ? 3 : 2) + " MiB"; }

  var byName = {};
  D.nodes.forEach(function (n) { byName[n.name] = n; });
  function colours(key) {
    var values = [];
    D.nodes.forEach(function (n) { if (values.indexOf(n[key]) < 0) { values.push(n[key]); } });
    var map = {};
    values.sort().forEach(function (v, i) { map[v] = PALETTE[i % PALETTE.length]; });
    return map;
  }

  /* ---------------- the graph ---------------- */
  var svg = document.getElementById("graph-svg");
  var viewport = el("g", { id: "viewport" }, svg);
  var view = { x: 0, y: 0, k: 1 };
  var laid = null;
  function applyView() {
    viewport.setAttribute("transform", "translate(" + view.x + "," + view.y + ") scale(" + view.k + ")");
  }

  function nodeLines(n) {
    var lines = [n.op_type, n.name];
    if (n.fused.length && R.expanded[n.name]) {
      n.fused.forEach(function (p) { lines.push("+ " + p.op_type + " " + p.name); });
    } else if (n.fused.length) {
      lines.push("[+" + n.fused.length + " fused]");
    }
    return lines;
  }

  /* dagre's initial order (order/init-order.js) without its per-rank graphs: nodes by rank,
     each rank in the order a depth-first walk from the lowest ranks reaches them */
  function depthFirstOrder(g) {
    var nodes = g.nodes().filter(function (v) { return !g.children(v).length; });
    nodes.sort(function (a, b) { return g.node(a).rank - g.node(b).rank; });
    var seen = {}, layers = {};
    nodes.forEach(function (start) {
      var stack = [start];
      while (stack.length) {
        var v = stack.pop();
        if (seen[v]) { continue; }
        seen[v] = true;
        var r = g.node(v).rank;
        (layers[r] = layers[r] || []).push(v);
        var next = g.successors(v) || [];
        for (var i = next.length - 1; i >= 0; i--) { stack.push(next[i]); }
      }
    });
    Object.keys(layers).forEach(function (r) {
      layers[r].forEach(function (v, i) { g.node(v).order = i; });
    });
  }

  function layout() {
    var g = new dagre.graphlib.Graph({ multigraph: true });
    g.setGraph({ rankdir: "TB", nodesep: 18, ranksep: 26, edgesep: 6, marginx: 12, marginy: 12 });
    g.setDefaultEdgeLabel(function () { return {}; });
    function box(id, lines, kind) {
      var w = 0;
      lines.forEach(function (l) { w = Math.max(w, Math.min(l.length, 42)); });
      g.setNode(id, { lines: lines, kind: kind, width: w * 6.7 + 16, height: lines.length * 14 + 10 });
    }
    D.engine.inputs.forEach(function (t) { box("input:" + t.name, ["input", t.name], "io"); });
    D.engine.outputs.forEach(function (t) { box("output:" + t.name, ["output", t.name], "io"); });
    D.nodes.forEach(function (n) { box(n.name, nodeLines(n), "node"); });
    D.edges.forEach(function (e, i) {
      if (g.hasNode(e.source) && g.hasNode(e.target)) {
        g.setEdge(e.source, e.target, { tensor: e.tensor, copy: e.copy }, "e" + i);
      }
    });
    /* past a few hundred nodes dagre's crossing minimisation (its order phase) takes seconds,
       most of it building a graph per rank: large graphs keep the order dagre starts from
       (each rank in depth-first order from the top ranks, its initOrder), given through its
       customOrder option; dagre still ranks and positions everything */
    var opts = { debugTiming: !!window.miReportDebug };
    if (D.nodes.length > LARGE) { opts.customOrder = depthFirstOrder; }
    dagre.layout(g, opts);
    return g;
  }

  function draw() {
    var tl = performance.now();
    laid = layout();
    R.timing = { layout: performance.now() - tl };
    while (viewport.firstChild) { viewport.removeChild(viewport.firstChild); }
    var fill = colours(colourBy);
    var edges = el("g", { "class": "edges" }, viewport);
    laid.edges().forEach(function (e) {
      var ed = laid.edge(e);
      var d = ed.points.map(function (p, i) { return (i ? "L" : "M") + p.x.toFixed(1) + "," + p.y.toFixed(1); }).join("");
      var path = el("path", { d: d, "class": "edge" + (ed.copy ? " copy" : "") }, edges);
      var title = el("title", {}, path);
      title.textContent = ed.tensor + (ed.copy ? " (copied between devices)" : "");
    });
    var nodes = el("g", { "class": "nodes" }, viewport);
    laid.nodes().forEach(function (id) {
      var nd = laid.node(id);
      var info = byName[id];
      var cls = "node" + (nd.kind === "io" ? " io" : "") + (info && info.fused.length ? " fused" : "") +
        (R.selected === id ? " selected" : "");
      var grp = el("g", { "class": cls, "data-node": nd.kind === "io" ? "" : id,
                          transform: "translate(" + (nd.x - nd.width / 2) + "," + (nd.y - nd.height / 2) + ")" }, nodes);
      el("rect", { width: nd.width, height: nd.height, fill: info ? fill[info[colourBy]] : "#fff" }, grp);
      nd.lines.forEach(function (line, i) {
        var t = el("text", { x: 8, y: 16 + i * 14, "class": i >= 2 ? "part" : "" }, grp);
        t.textContent = line.length > 42 ? line.slice(0, 41) + "\u2026" : line;
      });
      if (info) {
        grp.addEventListener("click", function (ev) { ev.stopPropagation(); select(id, false); });
        grp.addEventListener("dblclick", function (ev) { ev.stopPropagation(); toggle(id); });
      }
    });
    legend(fill);
  }

  function legend(fill) {
    var box = document.getElementById("legend");
    box.innerHTML = Object.keys(fill).map(function (k) {
      return '<span style="background:' + fill[k] + '">' + esc(k) + "</span>";
    }).join("");
  }

  function fit() {
    var g = laid.graph();
    var r = svg.getBoundingClientRect();
    var k = Math.min(r.width / (g.width || 1), r.height / (g.height || 1), 1.5);
    view.k = Math.max(k, 0.02);
    view.x = (r.width - g.width * view.k) / 2;
    view.y = 8;
    applyView();
  }

  function centre(id) {
    var nd = laid && laid.node(id);
    if (!nd) { return; }
    var r = svg.getBoundingClientRect();
    view.k = Math.max(view.k, 0.8);
    view.x = r.width / 2 - nd.x * view.k;
    view.y = r.height / 2 - nd.y * view.k;
    applyView();
  }

  function select(id, recentre) {
    R.selected = id;
    var all = viewport.querySelectorAll(".node");
    for (var i = 0; i < all.length; i++) {
      all[i].classList.toggle("selected", all[i].getAttribute("data-node") === id);
    }
    details(byName[id]);
    if (recentre) { centre(id); }
  }

  function toggle(id) {
    if (!byName[id] || !byName[id].fused.length) { return; }
    R.expanded[id] = !R.expanded[id];
    draw();
    applyView();
    select(id, false);
  }
  R.select = function (id) { select(id, true); };
  R.toggle = toggle;

  function details(n) {
    var box = document.getElementById("details");
    if (!n) { box.innerHTML = '<p class="muted">Click a node, or search for one.</p>'; return; }
    function ts(list) {
      return list.map(function (t) {
        return esc(t.name) + " <span class=muted>[" + esc(t.shape.join(", ")) + "] " + esc(t.dtype) + "</span>";
      }).join("<br>");
    }
    var prof = (D.profile || []).filter(function (p) { return p.node === n.name; })[0];
    var rows = [["op", n.op_type], ["plugin", n.plugin + " v" + n.plugin_version],
      ["distribution", n.distribution + " " + n.distribution_version], ["device", n.device],
      ["precision", n.precision.join(", ")], ["tactic", n.tactic || "-"],
      ["time", prof ? prof.ms.toFixed(4) + " ms" : "-"]];
    var html = "<h3>" + esc(n.name) + "</h3><table>" + rows.map(function (r) {
      return "<tr><td>" + r[0] + "</td><td>" + esc(r[1]) + "</td></tr>";
    }).join("") + "<tr><td>inputs</td><td>" + ts(n.inputs) + "</td></tr><tr><td>outputs</td><td>" +
      ts(n.outputs) + "</td></tr></table>";
    if (n.fused.length) {
      html += '<p>Replaces ' + (n.fused.length + 1) + ' ONNX nodes: itself and ' +
        n.fused.map(function (p) { return esc(p.op_type + " " + p.name); }).join(", ") +
        ' <button id="expand">' + (R.expanded[n.name] ? "collapse" : "expand") + "</button></p>";
    }
    box.innerHTML = html;
    var b = document.getElementById("expand");
    if (b) { b.addEventListener("click", function () { toggle(n.name); }); }
  }

  function search(text) {
    var q = text.trim().toLowerCase();
    var hits = [];
    if (q) {
      D.nodes.forEach(function (n) {
        if (n.name.toLowerCase().indexOf(q) >= 0 || n.op_type.toLowerCase().indexOf(q) >= 0) { hits.push(n.name); }
      });
    }
    var all = viewport.querySelectorAll(".node");
    for (var i = 0; i < all.length; i++) {
      all[i].classList.toggle("match", hits.indexOf(all[i].getAttribute("data-node")) >= 0);
    }
    var exact = D.nodes.filter(function (n) { return n.name.toLowerCase() === q; })[0];
    document.getElementById("hits").textContent = q ? hits.length + " match" + (hits.length === 1 ? "" : "es") : "";
    if (exact) { select(exact.name, true); } else if (hits.length) { select(hits[0], true); }
  }

  /* pan and zoom */
  var drag = null;
  svg.addEventListener("mousedown", function (ev) { drag = { x: ev.clientX - view.x, y: ev.clientY - view.y }; svg.parentNode.classList.add("dragging"); });
  window.addEventListener("mouseup", function () { drag = null; svg.parentNode.classList.remove("dragging"); });
  window.addEventListener("mousemove", function (ev) {
    if (drag) { view.x = ev.clientX - drag.x; view.y = ev.clientY - drag.y; applyView(); }
  });
  svg.addEventListener("wheel", function (ev) {
    ev.preventDefault();
    var r = svg.getBoundingClientRect();
    var px = ev.clientX - r.left, py = ev.clientY - r.top;
    var k = Math.min(8, Math.max(0.02, view.k * (ev.deltaY < 0 ? 1.15 : 1 / 1.15)));
    view.x = px - (px - view.x) * k / view.k;
    view.y = py - (py - view.y) * k / view.k;
    view.k = k;
    applyView();
  }, { passive: false });

  /* ---------------- charts ---------------- */
  function chart(id, spec) {
    spec.$schema = "https://vega.github.io/schema/vega-lite/v5.json";
    spec.config = { view: { stroke: null }, axis: { labelLimit: 260 } };
    var v = new vega.View(vega.parse(vegaLite.compile(spec).spec), {
      renderer: "svg", container: "#" + id, hover: true
    });
    R.views[id] = v;
    return v.runAsync();
  }

  function latencyCharts() {
    var P = D.profile;
    var box = document.getElementById("latency-note");
    if (!P) {
      box.textContent = D.profile_note || "No profiled run in this report (mini-infer report --profile).";
      return [];
    }
    var total = P.reduce(function (s, p) { return s + p.ms; }, 0);
    box.textContent = P.length + " nodes, " + total.toFixed(3) + " ms in their steps (median of " +
      D.profile_runs + " runs)" + (D.ort_profile ? "; onnxruntime: " + D.ort_profile.reduce(function (s, p) { return s + p.ms; }, 0).toFixed(3) + " ms in its kernels" : "");
    var jobs = [chart("chart-latency", {
      title: "Time per node (sorted)", data: { name: "latency", values: P },
      mark: { type: "bar", tooltip: true }, height: { step: 13 }, width: 520,
      encoding: { y: { field: "node", type: "nominal", sort: "-x", title: null },
                  x: { field: "ms", type: "quantitative", title: "ms" },
                  color: { field: "distribution", type: "nominal" } }
    })];
    jobs.push(chart("chart-op", {
      title: "Time by operator", data: { values: P }, width: 420, height: { step: 16 },
      mark: { type: "bar", tooltip: true },
      encoding: { y: { field: "op_type", type: "nominal", sort: "-x", title: null },
                  x: { aggregate: "sum", field: "ms", type: "quantitative", title: "ms" } }
    }));
    jobs.push(chart("chart-plugin", {
      title: "Time by plugin and distribution", data: { values: P }, width: 420, height: { step: 16 },
      mark: { type: "bar", tooltip: true },
      encoding: { y: { field: "plugin", type: "nominal", sort: "-x", title: null },
                  x: { aggregate: "sum", field: "ms", type: "quantitative", title: "ms" },
                  color: { field: "distribution", type: "nominal" } }
    }));
    if (D.ort_profile) {
      var both = P.map(function (p) { return { engine: "mini-infer", op_type: p.op_type.split("::").pop(), ms: p.ms }; })
        .concat(D.ort_profile.map(function (p) { return { engine: "onnxruntime", op_type: p.op_type, ms: p.ms }; }));
      jobs.push(chart("chart-compare", {
        title: "Time by operator: mini-infer and onnxruntime (fused nodes count under their host)",
        data: { values: both }, width: 420, height: { step: 12 },
        mark: { type: "bar", tooltip: true },
        encoding: { y: { field: "op_type", type: "nominal", sort: "-x", title: null },
                    yOffset: { field: "engine" },
                    x: { aggregate: "sum", field: "ms", type: "quantitative", title: "ms" },
                    color: { field: "engine", type: "nominal" } }
      }));
    }
    return jobs;
  }

  function memoryChart() {
    var M = D.memory;
    var note = document.getElementById("memory-note");
    if (!M) { note.textContent = "The memory plan is made at run time for this engine (shapes depend on data)."; return []; }
    note.textContent = "Planned peak " + mib(M.peak_bytes) + " for " + M.tensors.length +
      " tensors, against " + mib(M.naive_bytes) + " if each had its own buffer (" +
      (M.naive_bytes ? Math.round(100 * (1 - M.peak_bytes / M.naive_bytes)) : 0) + "% saved).";
    return [chart("chart-memory", {
      title: "Tensor lifetimes (step x tensor), coloured by size", data: { values: M.tensors },
      width: 620, height: { step: 9 }, mark: { type: "bar", tooltip: true },
      encoding: { y: { field: "tensor", type: "nominal", sort: { field: "start" }, title: null, axis: M.tensors.length > 80 ? null : {} },
                  x: { field: "start", type: "quantitative", title: "step", scale: { domain: [0, M.steps] } },
                  x2: { field: "end" },
                  color: { field: "bytes", type: "quantitative", scale: { scheme: "blues" } } }
    })];
  }

  function table(rows, cols) {
    if (!rows.length) { return '<p class="muted">none</p>'; }
    return '<table class="facts"><tr>' + cols.map(function (c) { return "<th>" + esc(c) + "</th>"; }).join("") + "</tr>" +
      rows.map(function (r) {
        return "<tr>" + cols.map(function (c) {
          var v = r[c];
          return "<td>" + esc(v == null ? "-" : typeof v === "object" ? JSON.stringify(v) : v) + "</td>";
        }).join("") + "</tr>";
      }).join("") + "</table>";
  }

  function buildFacts() {
    var B = D.build;
    var facts = [["ONNX nodes imported", B.nodes_imported], ["folded (constants)", B.nodes_folded],
      ["pruned", B.nodes_pruned], ["engine nodes", D.nodes.length], ["fused", B.fused.length],
      ["rewritten", B.rewritten.length], ["placement", JSON.stringify(B.placement)],
      ["copies between devices", B.copies], ["fp16 nodes", B.fp16_nodes],
      ["constants packed", B.constants_packed], ["opsets", JSON.stringify(B.opsets)],
      ["timing cache", D.timing_cache ? D.timing_cache.hits + " of " + D.timing_cache.nodes + " timed nodes found in " + D.timing_cache.path : "not given"]];
    var html = '<table class="facts">' + facts.map(function (f) {
      return "<tr><td>" + esc(f[0]) + "</td><td>" + esc(f[1] == null ? "-" : f[1]) + "</td></tr>";
    }).join("") + "</table>";
    html += "<h2>Plugin distributions the engine is bound to</h2>" + table(B.distributions, ["name", "version"]);
    html += "<h2>Tactics chosen (timings in ms)</h2>" + table(B.tactics, ["node", "chosen", "ms"]);
    html += "<h2>Fusions</h2>" + table(B.fused.map(function (f) { return { fusion: f }; }), ["fusion"]);
    html += "<h2>Rewrites</h2>" + table(B.rewritten.map(function (f) { return { rewrite: f }; }), ["rewrite"]);
    document.getElementById("build-facts").innerHTML = html;
  }

  function diffView() {
    var box = document.getElementById("diff-body");
    var X = D.diff;
    if (!X) { box.innerHTML = '<p class="muted">No second engine: mini-infer report A.engine --diff B.engine.</p>'; return; }
    box.innerHTML = "<p>" + esc(D.title) + " against " + esc(X.other) + ": " + X.removed.length +
      " node(s) removed, " + X.added.length + " added, " + X.changed.length + " change(s).</p>" +
      "<h2>Removed</h2>" + table(X.removed.map(function (n) { return { node: n }; }), ["node"]) +
      "<h2>Added</h2>" + table(X.added.map(function (n) { return { node: n }; }), ["node"]) +
      "<h2>Changed</h2>" + table(X.changed, ["node", "what", "a", "b"]) +
      "<h2>Build facts</h2>" + table(X.facts, ["fact", "a", "b"]);
  }

  /* ---------------- views ---------------- */
  var renderers = { latency: latencyCharts, memory: memoryChart };
  R.rendered = {};
  function render(name) {
    if (!renderers[name] || R.rendered[name] !== undefined) { return; }
    R.rendered[name] = false;
    Promise.all(renderers[name]()).then(function () { R.rendered[name] = true; },
                                         function (err) { console.error(err); });
  }

  function show(name) {
    render(name);
    var secs = document.querySelectorAll("section.view");
    for (var i = 0; i < secs.length; i++) { secs[i].classList.toggle("active", secs[i].id === "view-" + name); }
    var bs = document.querySelectorAll("nav button");
    for (var j = 0; j < bs.length; j++) { bs[j].classList.toggle("active", bs[j].getAttribute("data-view") === name); }
    if (name === "graph" && laid) { fit(); }
  }
  R.show = show;
  var navs = document.querySelectorAll("nav button");
  for (var i = 0; i < navs.length; i++) {
    navs[i].addEventListener("click", function (ev) { show(ev.target.getAttribute("data-view")); });
  }
  document.getElementById("search").addEventListener("input", function (ev) { search(ev.target.value); });
  document.getElementById("colour").addEventListener("change", function (ev) { colourBy = ev.target.value; draw(); applyView(); });
  document.getElementById("fit").addEventListener("click", fit);

  var t0 = performance.now();
  draw();
  var t1 = performance.now();
  fit();
  details(null);
  buildFacts();
  diffView();
  R.timing.draw = t1 - t0; R.timing.start = t0;
  R.ready = true;  /* the graph is drawn: the page is usable; each chart view draws when opened */
  document.body.setAttribute("data-ready", "1");
})();
