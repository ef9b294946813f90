// Duplicates explorer: plain JavaScript over the service's /v1 API (no libraries, works offline).
"use strict";
const $ = (sel, root = document) => root.querySelector(sel);
const state = { query: null };

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

async function compare(otherId) {
  status("comparing…");
  const r = await api("POST", "/v1/copies", { a: queryRef(), b: { id: otherId }, with_text: true });
  const a = $("#side-a"), b = $("#side-b");
  $("h3", a).textContent = state.query.id !== undefined ? state.query.id : "pasted text";
  $("h3", b).textContent = otherId;
  $(".text", a).replaceChildren(highlighted(r.a_text, r.passages.map(p => [p.a_start, p.a_end])));
  $(".text", b).replaceChildren(highlighted(r.b_text, r.passages.map(p => [p.b_start, p.b_end])));
  const chars = r.passages.reduce((n, p) => n + p.length, 0);
  $("#compare .summary").textContent = `· ${r.passages.length} copied passage(s), ${chars} characters`;
  show("compare");
  status("");
  $("#compare").scrollIntoView({ behavior: "instant", block: "start" });
}

async function showCluster(cid) {
  const r = await api("GET", "/v1/clusters/" + encodeURIComponent(cid));
  $("#cluster .cid").textContent = `${cid} (${r.size} documents)`;
  clear("cluster");
  for (const m of r.members) {
    const link = el("a", { onclick: () => compare(m.id).catch(e => status(e.message)) }, m.id);
    $("#cluster tbody").append(el("tr", {}, el("td", {}, link), el("td", {}, m.title || ""), el("td", {}, m.decision || ""),
      el("td", {}, m.duplicate_of || ""), el("td", {}, m.distance ?? "")));
  }
  show("cluster");
}

function compareButton(id) {
  return el("button", { type: "button", className: "compare", onclick: () => compare(id).catch(e => status(e.message)) }, "compare");
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
  for (const s of ["photos", "doc", "dups", "copies", "related", "cluster", "compare"]) show(s, false);
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
    $("#doc .body").replaceChildren(el("h3", {}, doc.title || doc.id),
      el("p", { className: "muted" }, `${doc.id} · ${doc.decision || "not decided"}`, doc.duplicate_of ? ` of ${doc.duplicate_of}` : "",
        doc.distance != null ? ` at distance ${doc.distance}` : "", " · cluster ", cl),
      el("div", { className: "text" }, doc.text.slice(0, 600) + (doc.text.length > 600 ? "…" : "")));
    show("doc");
  }
  const [sim, cop] = await Promise.all([
    // by text (the indexed text for an id): ids may hold a "/", which a path segment cannot
    api("POST", "/v1/similar", { text: doc ? doc.text : q }),
    api("POST", "/v1/copies/search", { ...queryRef(), min_chars: 100 }),
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
  if (!cop.hits.length) $("#copies tbody").append(el("tr", {}, el("td", { colSpan: 5, className: "muted" }, "no document copies 100 characters or more")));
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
const initial = new URLSearchParams(location.search).get("q");
if (initial) { $("#q").value = initial; search().catch(err => status(err.message)); }
