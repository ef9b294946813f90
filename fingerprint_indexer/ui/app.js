// Duplicates explorer: plain JavaScript over the service's /v1 API (no libraries, works offline).
"use strict";
const $ = (sel, root = document) => root.querySelector(sel);
const PAGE = 20;
const state = { query: null, clusters: 0, recent: 0 };

function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  Object.assign(node, props);
  for (const c of children) node.append(c instanceof Node ? c : document.createTextNode(String(c ?? "")));
  return node;
}

function status(msg) { $("#status").textContent = msg; }

async function api(method, path, body) {
  const headers = { "Content-Type": "application/json" };
  const key = $("#key").value || sessionStorage.getItem("fpi-key");
  if (key) { headers["X-API-Key"] = key; sessionStorage.setItem("fpi-key", key); }
  const index = $("#index").value.trim();
  let url = path;
  if (index) url += (url.includes("?") ? "&" : "?") + "index=" + encodeURIComponent(index);
  const r = await fetch(url, { method, headers, body: body ? JSON.stringify({ ...body, ...(index ? { index_name: index } : {}) }) : undefined });
  const data = await r.json().catch(() => ({}));
  if (!r.ok) {
    const reason = (data.error && (data.error.reason || data.error.type)) || r.statusText;
    throw new Error(r.status === 401 ? "this service needs an API key (enter it above)" : reason);
  }
  return data;
}

function show(id, on = true) { $("#" + id).hidden = !on; }
function clear(id) { const tb = $("#" + id + " tbody") || $("#" + id + " ul"); if (tb) tb.replaceChildren(); }

// text with [start, end) ranges wrapped in <mark>
function highlighted(text, ranges) {
  const frag = document.createDocumentFragment();
  const rs = ranges.map(([s, e]) => [s, e]).sort((x, y) => x[0] - y[0]);
  let at = 0;
  for (const [s, e] of rs) {
    if (e <= at) continue;
    const from = Math.max(s, at);
    frag.append(text.slice(at, from));
    frag.append(el("mark", {}, text.slice(from, e)));
    at = e;
  }
  frag.append(text.slice(at));
  return frag;
}

function queryRef() {
  return state.query.id !== undefined ? { id: state.query.id } : { text: state.query.text };
}

// two documents side by side, the passages B copies of A highlighted (A: the query unless given)
async function compare(otherId, aId) {
  status("comparing…");
  const aRef = aId !== undefined ? { id: aId } : queryRef();
  const r = await api("POST", "/v1/copies", { a: aRef, b: { id: otherId }, with_text: true });
  const a = $("#side-a"), b = $("#side-b");
  $("h3", a).textContent = aRef.id !== undefined ? aRef.id : "pasted text";
  $("h3", b).textContent = otherId;
  $(".text", a).replaceChildren(highlighted(r.a_text, r.passages.map(p => [p.a_start, p.a_end])));
  $(".text", b).replaceChildren(highlighted(r.b_text, r.passages.map(p => [p.b_start, p.b_end])));
  const chars = r.passages.reduce((n, p) => n + p.length, 0);
  $("#compare .summary").textContent = `· ${r.passages.length} copied passage(s), ${chars} characters`;
  show("compare");
  status("");
  $("#compare").scrollIntoView({ behavior: "instant", block: "start" });
}

// a cluster's members; each can be compared with the cluster's canonical (or with the query, if any)
async function showCluster(cid, fromHome) {
  const r = await api("GET", "/v1/clusters/" + encodeURIComponent(cid));
  $("#cluster .cid").textContent = `${cid} (${r.size} documents)`;
  clear("cluster");
  const canonical = r.members.length ? r.members[0].id : undefined;
  const against = id => fromHome || !state.query ? (id === canonical ? undefined : canonical) : null;
  for (const m of r.members) {
    const other = against(m.id);
    const pick = () => (other === null ? compare(m.id) : compare(m.id, other)).catch(e => status(e.message));
    const link = el("a", { onclick: pick }, m.id);
    const button = other === undefined ? "" : compareButton(m.id, other === null ? undefined : other);
    $("#cluster tbody").append(el("tr", {}, el("td", { className: "id" }, link), el("td", { lang: "zh" }, m.title || ""),
      el("td", {}, m.decision || ""), el("td", { className: "id" }, m.duplicate_of || ""), el("td", {}, m.distance ?? ""), el("td", {}, button)));
  }
  show("cluster");
  if (fromHome) $("#cluster").scrollIntoView({ behavior: "instant", block: "start" });
}

function compareButton(id, aId) {
  return el("button", { type: "button", className: "compare", onclick: () => compare(id, aId).catch(e => status(e.message)) }, "compare");
}

// what the verification rule said of a duplicate and its canonical (the "why" of /v1/overview)
function reasonOf(row) {
  if (row.decision === "exact_duplicate") return "the same text";
  const why = row.why;
  if (!why) return `fingerprints ${row.distance} bits apart (through its cluster)`;
  const where = why.matched === "document" ? "whole article" : why.matched === "sketch band" ? "shared passage (sketch band)" : why.matched;
  let text = `${where}: fingerprints ${why.distance} bits apart, text overlap ≈ ${Math.round(why.similarity * 100)}%`;
  if (!why.accepted) text += ` (direct check: ${why.rejected_because}; joined through its cluster)`;
  return text;
}

function label(id, title) {
  return el("span", {}, el("span", { className: "title", lang: "zh" }, title || id), title ? el("span", { className: "muted id" }, " " + id) : "");
}

function pager(id, offset, total, go) {
  const box = $("#" + id);
  $(".where", box).textContent = total ? `${offset + 1}–${Math.min(offset + PAGE, total)} of ${total.toLocaleString("en")}` : "none";
  $(".prev", box).disabled = offset === 0;
  $(".next", box).disabled = offset + PAGE >= total;
  $(".prev", box).onclick = () => go(Math.max(0, offset - PAGE)).catch(e => status(e.message));
  $(".next", box).onclick = () => go(offset + PAGE).catch(e => status(e.message));
}

async function homeClusters(offset) {
  const minSize = $("#all-clusters").checked ? 1 : 2;
  const r = await api("GET", `/v1/clusters?offset=${offset}&limit=${PAGE}&min_size=${minSize}`);
  state.clusters = offset;
  clear("clusters");
  for (const c of r.clusters) {
    const open = el("button", { type: "button", className: "open", onclick: () => showCluster(c.id, true).catch(e => status(e.message)) }, "open");
    $("#clusters tbody").append(el("tr", {}, el("td", {}, c.size), el("td", {}, label(c.canonical, c.title)), el("td", {}, open)));
  }
  if (!r.clusters.length) $("#clusters tbody").append(el("tr", {}, el("td", { colSpan: 3, className: "muted" }, "no cluster holds more than one document")));
  pager("clusters-pager", offset, r.total, homeClusters);
}

async function homeRecent(offset) {
  const r = await api("GET", `/v1/overview?offset=${offset}&limit=${PAGE}`);
  state.recent = offset;
  clear("recent");
  for (const d of r.recent) {
    $("#recent tbody").append(el("tr", {}, el("td", {}, label(d.id, d.title)), el("td", {}, label(d.duplicate_of, d.duplicate_title)),
      el("td", {}, reasonOf(d)), el("td", {}, compareButton(d.id, d.duplicate_of))));
  }
  if (!r.recent.length) $("#recent tbody").append(el("tr", {}, el("td", { colSpan: 4, className: "muted" }, "no duplicates yet")));
  pager("recent-pager", offset, r.recent_total, homeRecent);
  if (r.duplicates > r.recent_total) $("#recent-pager .where").textContent += ` (the latest of ${r.duplicates.toLocaleString("en")} duplicates)`;
  return r;
}

// the first view: counts by decision, the largest clusters and the latest near-duplicates
async function home() {
  for (const s of ["photos", "doc", "dups", "copies", "related", "cluster", "compare"]) show(s, false);
  status("reading the store…");
  const r = await homeRecent(0);
  const n = k => (r.counts[k] || 0).toLocaleString("en");
  $("#counts").textContent = `${r.documents.toLocaleString("en")} documents: ${n("new")} new, ${n("exact_duplicate")} exact duplicates, ` +
    `${n("near_duplicate")} near duplicates · ${r.clusters.toLocaleString("en")} clusters`;
  $("#where").textContent = r.read_only ? "read-only" : "";
  $("#texts-note").hidden = !r.texts;
  $("#texts-note").textContent = r.texts ? "Texts cannot be shown: " + r.texts : "";
  await homeClusters(0);
  show("home");
  status("");
}

// a chosen file as base64 (what /v1/similar takes as "image")
function base64Of(file) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(String(reader.result).replace(/^data:[^,]*,/, ""));
    reader.onerror = () => reject(new Error("cannot read " + file.name));
    reader.readAsDataURL(file);
  });
}

function thumb(b64, alt) {
  return b64 ? el("img", { src: "data:image/jpeg;base64," + b64, alt, className: "thumb" }) : el("span", { className: "muted" }, "no thumbnail");
}

async function searchPhoto(file) {
  status("looking for the photo…");
  const data = await base64Of(file);
  const r = await api("POST", "/v1/similar", { image: data });
  $("#photos .query").replaceChildren(el("img", { src: "data:" + (file.type || "image/jpeg") + ";base64," + data, alt: file.name, className: "thumb" }),
    el("span", { className: "muted" }, ` ${file.name}`));
  clear("photos");
  for (const m of r.images) {
    $("#photos tbody").append(el("tr", {}, el("td", {}, thumb(m.thumbnail, m.image)), el("td", {}, m.id), el("td", {}, m.image),
      el("td", {}, m.exact ? "same pixels" : `windows ${m.distance} bits apart`)));
  }
  if (!r.images.length) $("#photos tbody").append(el("tr", {}, el("td", { colSpan: 4, className: "muted" }, "no document has a picture of this photo")));
  show("photos");
  return r.images.length;
}

async function search(ev) {
  ev && ev.preventDefault();
  const q = $("#q").value.trim();
  const file = $("#photo").files[0];
  if (!q && !file) { status("enter a document id or text, or choose a photo"); return; }
  for (const s of ["home", "photos", "doc", "dups", "copies", "related", "cluster", "compare"]) show(s, false);
  if (file) {
    const n = await searchPhoto(file);
    status(`${n} document picture(s) of the same photo`);
    if (!q) return;
  }
  status("searching…");
  let doc = null;
  if (!$("#as-text").checked && q.length <= 512 && !/\s{2,}|\n/.test(q)) {
    try { doc = await api("GET", "/v1/documents/" + encodeURIComponent(q)); } catch (e) { if (!/no document/.test(e.message)) throw e; }
  }
  state.query = doc ? { id: doc.id } : { text: q };
  if (doc) {
    const cl = el("a", { onclick: () => showCluster(doc.cluster_id).catch(e => status(e.message)) }, doc.cluster_id || "");
    const text = doc.text || "";
    $("#doc .body").replaceChildren(el("h3", { lang: "zh" }, doc.title || doc.id),
      el("p", { className: "muted" }, `${doc.id} · ${doc.decision || "not decided"}`, doc.duplicate_of ? ` of ${doc.duplicate_of}` : "",
        doc.distance != null ? ` at distance ${doc.distance}` : "", " · cluster ", cl),
      el("div", { className: "text", lang: "zh" }, doc.text_missing ? `(${doc.text_missing})` : text.slice(0, 600) + (text.length > 600 ? "…" : "")));
    show("doc");
  }
  let copyError = null;
  const [sim, cop] = await Promise.all([
    // by id (the stored record: a store may keep no text) or by text
    doc ? api("GET", "/v1/similar/" + encodeURIComponent(doc.id)) : api("POST", "/v1/similar", { text: q }),
    // partial-copy search needs copy marks: without them the rest of the page still answers
    api("POST", "/v1/copies/search", { ...queryRef(), min_chars: 100 }).catch(e => { copyError = e.message; return { hits: [] }; }),
  ]);
  const copied = Object.fromEntries(cop.hits.map(h => [h.id, h.copied]));
  if (doc) sim.matches = sim.matches.filter(m => m.id !== doc.id);
  clear("dups");
  for (const m of sim.matches) {
    const reason = (m.distance === 0 ? "same fingerprint" : `fingerprints ${m.distance} bits apart`) +
      (copied[m.id] ? `; copies ${copied[m.id]} characters` : "") + (m.duplicate_of ? `; duplicate of ${m.duplicate_of}` : "");
    const cl = el("a", { onclick: () => showCluster(m.cluster_id).catch(e => status(e.message)) }, m.cluster_id || "");
    $("#dups tbody").append(el("tr", {}, el("td", {}, m.id), el("td", {}, m.distance), el("td", {}, reason), el("td", {}, cl), el("td", {}, compareButton(m.id))));
  }
  if (!sim.matches.length) $("#dups tbody").append(el("tr", {}, el("td", { colSpan: 5, className: "muted" }, "no near-duplicates")));
  show("dups");
  clear("copies");
  for (const h of cop.hits) {
    $("#copies tbody").append(el("tr", {}, el("td", {}, h.id), el("td", {}, h.title || ""), el("td", {}, `${h.copied} characters`),
      el("td", {}, h.passages.length), el("td", {}, compareButton(h.id))));
  }
  if (!cop.hits.length) $("#copies tbody").append(el("tr", {}, el("td", { colSpan: 5, className: "muted" },
    copyError ? "partial-copy search unavailable: " + copyError : "no document copies 100 characters or more")));
  show("copies");
  if (doc) {
    clear("related");
    try {
      const rel = await api("GET", "/v1/related/" + encodeURIComponent(doc.id));
      for (const r of rel.related) {
        $("#related ul").append(el("li", {}, `${r.title || r.id} `, el("span", { className: "muted" },
          `(related topic, score ${r.score.toFixed(1)}${r.similar_reports ? `, ${r.similar_reports} similar reports` : ""}) `), compareButton(r.id)));
      }
      if (!rel.related.length) $("#related ul").append(el("li", { className: "muted" }, "no related articles"));
    } catch (e) { $("#related ul").append(el("li", { className: "muted" }, "related articles unavailable: " + e.message)); }
    show("related");
    if (doc.cluster_id) await showCluster(doc.cluster_id);
  }
  status(`${sim.matches.length} near-duplicate(s), ${cop.hits.length} document(s) copying passages` +
    (file ? `; photo: ${$("#photos tbody").querySelectorAll("img").length} match(es)` : ""));
}

$("#search").addEventListener("submit", e => search(e).catch(err => status(err.message)));
$("#all-clusters").addEventListener("change", () => homeClusters(0).catch(err => status(err.message)));
const initial = new URLSearchParams(location.search).get("q");
if (initial) { $("#q").value = initial; search().catch(err => status(err.message)); }
else home().catch(err => status("overview unavailable: " + err.message));
