// The console page: polls /api/overview and draws it; every text from the API goes in with
// textContent (never as HTML), so a document cannot inject markup.
"use strict";

const POLL_MS = 2000;
const KIND_COLORS = { unique: "#7a8599", exact: "#d64545", near: "#e39b1b", contained: "#3b82c4", empty: "#b8bfcc" };
const $ = (id) => document.getElementById(id);

function el(tag, text, cls) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (cls) node.className = cls;
  return node;
}

function fmt(x, digits) {
  return x === null || x === undefined ? "–" : Number(x).toFixed(digits);
}

function when(epoch) {
  return epoch ? new Date(epoch * 1000).toISOString().slice(11, 19) : "";
}

function fillRows(tbody, rows) {
  tbody.replaceChildren(...rows);
}

function chartOpts(title, series, height, node) {
  return {
    width: Math.max(300, node.clientWidth - 10), height: height, title: title, legend: { show: true },
    scales: { x: { time: true } }, series: [{}, ...series],
    axes: [{}, { size: 50 }],
  };
}

let rateChart = null;
let mixChart = null;

function drawCharts(body) {
  const rate = [body.rate.t, body.rate.docs_per_s];
  const kinds = ["unique", "exact", "near", "contained"];
  const mix = [body.mix.t, ...kinds.map((k) => body.mix[k])];
  if (typeof uPlot === "undefined") return;
  if (!rateChart) {
    rateChart = new uPlot(chartOpts("", [{ label: "documents/s", stroke: "#1d4ed8", fill: "#1d4ed822" }], 200,
      $("rate-chart")), rate, $("rate-chart"));
    mixChart = new uPlot(chartOpts("", kinds.map((k) => ({ label: k, stroke: KIND_COLORS[k], width: 2 })), 200,
      $("mix-chart")), mix, $("mix-chart"));
    window.addEventListener("resize", () => {
      for (const [chart, id] of [[rateChart, "rate-chart"], [mixChart, "mix-chart"]]) {
        chart.setSize({ width: Math.max(300, $(id).clientWidth - 10), height: 200 });
      }
    });
  } else {
    rateChart.setData(rate);
    mixChart.setData(mix);
  }
}

function drawStatus(body) {
  const s = body.status;
  const node = $("status");
  node.classList.toggle("error", Boolean(s.error) || s.missing.length > 0);
  let text = `${s.broker} · ${s.caught_up ? "live" : "reading the topics…"} · updated ${when(body.now)}`;
  if (s.missing.length) text += ` · waiting for ${s.missing.join(", ")}`;
  if (s.error) text += ` · stopped reading: ${s.error}`;
  node.textContent = text;
}

function drawTotals(body) {
  const t = body.totals;
  $("documents-total").textContent = t.documents;
  for (const kind of ["unique", "exact", "near", "contained"]) $(`current-${kind}`).textContent = t.current[kind];
  $("revisions-total").textContent = t.revisions;
  $("deleted-total").textContent = t.deleted;
  $("dead-total").textContent = t.dead_letters;
  const l = body.latency_ms;
  $("latency").textContent = l.p50 === null ? "–" : `${fmt(l.p50, 0)} / ${fmt(l.p90, 0)} / ${fmt(l.p99, 0)} ms`;
}

function drawTables(body) {
  fillRows($("pairs").tBodies[0], body.pairs.map((p) => {
    const tr = el("tr");
    tr.dataset.id = p.id;
    tr.dataset.canonical = p.canonical;
    tr.append(el("td", p.id), el("td", p.canonical), el("td", p.kind), el("td", fmt(p.similarity, 3), "num"),
      el("td", fmt(p.containment, 3), "num"), el("td", when(p.at)));
    tr.addEventListener("click", () => showPair(p.id, p.canonical));
    return tr;
  }));
  fillRows($("clusters").tBodies[0], body.clusters.map((c) => {
    const tr = el("tr");
    tr.dataset.canonical = c.canonical;
    tr.append(el("td", c.canonical), el("td", c.size, "num"), el("td", c.grown ? `+${c.grown}` : "", "num"));
    tr.addEventListener("click", () => search(c.canonical));
    return tr;
  }));
  fillRows($("dead").tBodies[0], Object.entries(body.dead_letters).map(([code, n]) => {
    const tr = el("tr");
    tr.append(el("td", code), el("td", n, "num"));
    return tr;
  }));
  fillRows($("lag").tBodies[0], Object.entries(body.lag).map(([p, n]) => {
    const tr = el("tr");
    tr.append(el("td", p), el("td", n, "num"));
    return tr;
  }));
}

async function poll() {
  try {
    const response = await fetch("/api/overview");
    const body = await response.json();
    drawStatus(body);
    drawTotals(body);
    drawTables(body);
    drawCharts(body);
  } catch (err) {
    $("status").textContent = `console unreachable: ${err}`;
    $("status").classList.add("error");
  }
}

function marked(segments, side) {
  // side 1: the canonical's text (what only it has is struck), side 2: the later document's
  const nodes = [];
  for (const [op, a, b] of segments) {
    const text = side === 1 ? a : b;
    if (!text) continue;
    if (op === "equal") nodes.push(document.createTextNode(text));
    // a difference of spaces or line breaks alone gets a visible sign (CSS, outside the text)
    else nodes.push(el("mark", text, (side === 1 ? "del" : "ins") + (text.trim() ? "" : " ws")));
  }
  return nodes;
}

async function showPair(doc, canonical) {
  const section = $("diff");
  section.hidden = false;
  $("diff-title").textContent = `${doc} ~ ${canonical}`;
  $("diff-summary").textContent = "reading both texts from the documents topic…";
  $("diff-a").replaceChildren();
  $("diff-b").replaceChildren();
  const response = await fetch(`/api/pair?a=${encodeURIComponent(doc)}&b=${encodeURIComponent(canonical)}`);
  if (!response.ok) {
    $("diff-summary").textContent = await response.text();
    return;
  }
  const body = await response.json();
  const head = (d) => `${d.id}${d.title ? " · " + d.title : ""} (${d.position.topic}:${d.position.partition}:${d.position.offset})`;
  $("diff-a-head").textContent = "canonical: " + head(body.a);
  $("diff-b-head").textContent = "later: " + head(body.b);
  const v = body.verdict || {};
  $("diff-summary").textContent = `${v.verdict || ""} · similarity ${fmt(v.similarity, 3)} · containment ` +
    `${fmt(v.containment, 3)} · ${Math.round(body.shared * 100)}% of the text shared` +
    (body.truncated ? " (compared on their beginnings)" : "");
  $("diff-a").replaceChildren(...marked(body.segments, 1));
  $("diff-b").replaceChildren(...marked(body.segments, 2));
  section.scrollIntoView({ behavior: "smooth" });
}

async function search(id) {
  const section = $("search-result");
  section.hidden = false;
  section.replaceChildren(el("p", `looking up ${id}…`));
  const body = await (await fetch(`/api/document/${encodeURIComponent(id)}`)).json();
  const parts = [el("h2", `document ${id}`)];
  if (!body.known) {
    parts.push(el("p", "No verdict for this id."));
  } else {
    if (body.deleted) parts.push(el("p", "deleted: the id's latest record is a tombstone", "deleted"));
    const table = el("table");
    table.id = "history";
    const head = el("tr");
    for (const h of ["time", "verdict", "canonical", "similarity", "containment", "matches", "revised"]) head.append(el("th", h));
    table.append(el("thead"), el("tbody"));
    table.tHead.append(head);
    for (const v of body.history) {
      const tr = el("tr");
      if (v.deleted) tr.append(el("td", when(v.at)), el("td", "deleted", "deleted"));
      else tr.append(el("td", when(v.processed_at)), el("td", v.verdict), el("td", v.canonical || "–"),
        el("td", fmt(v.similarity, 3), "num"), el("td", fmt(v.containment, 3), "num"),
        el("td", v.match_count, "num"), el("td", v.revised ? "yes" : ""));
      table.tBodies[0].append(tr);
    }
    parts.push(table);
    if (body.cluster) {
      parts.push(el("h3", `cluster of ${body.cluster.canonical}: ${body.cluster.members.length + 1} documents`));
      const list = el("ul");
      list.id = "cluster-members";
      for (const m of body.cluster.members) list.append(el("li", m));
      parts.push(list);
    }
    if (body.latest && body.latest.canonical) {
      const button = el("button", `compare with ${body.latest.canonical}`);
      button.addEventListener("click", () => showPair(id, body.latest.canonical));
      parts.push(button);
    }
  }
  section.replaceChildren(...parts);
}

$("search").addEventListener("submit", (event) => {
  event.preventDefault();
  const id = $("search-input").value.trim();
  if (id) search(id);
});
poll();
setInterval(poll, POLL_MS);
