// duomcp inspect: the page. Plain JavaScript, no framework, no build step; everything it needs
// comes from the duomcp binary that serves it (crates/duomcp-cli/src/inspect/).
"use strict";

const $ = (id) => document.getElementById(id);
const state = { info: null, tools: [], calls: 0, inputs: [], traceRows: 0 };
const TRACE_ROWS = 2000; // rows kept in the table (the server keeps its own bounded trace)

function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else if (v === true) e.setAttribute(k, "");
    else e.setAttribute(k, String(v));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

async function api(path, body) {
  const init = body === undefined ? {} : {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  };
  const res = await fetch(path, init);
  const text = await res.text();
  let value = null;
  try { value = text ? JSON.parse(text) : null; } catch { value = { error: { message: text } }; }
  if (!res.ok && !(value && value.error)) value = { error: { message: `${res.status} ${text}` } };
  return value;
}

async function rpc(method, params = {}, call) {
  return api("/api/rpc", { method, params, call });
}

function json(v) { return JSON.stringify(v, null, 2); }

// ---------------------------------------------------------------- connection

async function refreshInfo() {
  state.info = await api("/api/info");
  const i = state.info;
  $("connect").hidden = i.connected;
  $("tabs").hidden = !i.connected;
  $("views").hidden = !i.connected;
  $("logs").hidden = !i.connected;
  if (!i.connected) {
    $("status").textContent = "not connected";
    if (i.configured) $("connect-target").value = i.configured;
    return;
  }
  const server = i.serverInfo ? `${i.serverInfo.name} ${i.serverInfo.version || ""}` : "server";
  $("status").textContent = `${server} · ${i.target} · ${i.era} · ${i.protocolVersion}`;
  $("status").dataset.era = i.era.startsWith("modern") ? "modern" : "legacy";
  $("era-switch").value = i.eraChoice;
  $("roots-edit").value = (i.roots || []).map((r) => r.uri).join("\n");
  $("server-info").textContent = json({
    revision: i.era, protocolVersion: i.protocolVersion, serverInfo: i.serverInfo,
    capabilities: i.capabilities, instructions: i.instructions,
  });
  await Promise.all([loadTools(), loadResources(), loadPrompts()]);
}

$("connect-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const target = $("connect-target").value.trim();
  const body = { era: $("connect-era").value };
  body.headers = $("connect-headers").value.split("\n").map((h) => h.trim()).filter(Boolean);
  if (/^https?:\/\//.test(target)) body.url = target;
  else body.command = target.split(/\s+/).filter(Boolean);
  $("connect-error").textContent = "connecting…";
  const r = await api("/api/connect", body);
  $("connect-error").textContent = r && r.error ? r.error.message : "";
  await refreshInfo();
});

// Authorize: the inspector runs the OAuth flow; the page opens the authorization server's page
// in a new tab and, when the `authorization` event says it succeeded, connects.
$("authorize").addEventListener("click", async () => {
  const target = $("connect-target").value.trim();
  const out = $("connect-error");
  if (!/^https?:\/\//.test(target)) { out.textContent = "Authorize applies to an http(s) URL"; return; }
  // Opened within the click (a popup blocker allows it), pointed at the URL once known.
  const tab = window.open("", "_blank");
  if (tab) tab.opener = null;
  out.textContent = "starting the authorization…";
  const r = await api("/api/authorize", { url: target });
  if (!r || r.error) {
    if (tab) tab.close();
    out.textContent = r && r.error ? r.error.message : "the authorization did not start";
    return;
  }
  if (r.state === "authorized") { authorized(r); return; }
  if (tab) tab.location = r.authorizationUrl;
  out.replaceChildren("waiting for the authorization server (",
    el("a", { href: r.authorizationUrl, target: "_blank", rel: "noopener", text: "open its page" }), ")…");
});

function authorized(ev) {
  const out = $("connect-error");
  if (ev.state === "authorized") {
    out.textContent = `authorized by ${ev.issuer}; connecting…`;
    if ($("connect-target").value.trim() === ev.url) $("connect-form").requestSubmit();
  } else if (ev.state === "failed") {
    out.textContent = ev.error ? ev.error.message : "the authorization failed";
  }
}

async function reconnect(era) {
  $("status").textContent = "reconnecting…";
  const r = await api("/api/connect", { era });
  if (r && r.error) $("status").textContent = r.error.message;
  await refreshInfo();
}
$("era-switch").addEventListener("change", () => reconnect($("era-switch").value));
$("roots-save").addEventListener("click", async () => {
  const roots = $("roots-edit").value.split("\n").map((l) => l.trim()).filter(Boolean).map((uri) => ({ uri }));
  const r = await api("/api/roots", { roots });
  $("roots-status").textContent = r && r.error ? r.error.message : `offered: ${r.roots.length} root(s)`;
});
$("reconnect").addEventListener("click", () => reconnect($("era-switch").value));

for (const b of document.querySelectorAll("#tabs button")) {
  b.addEventListener("click", () => {
    for (const o of document.querySelectorAll("#tabs button")) o.classList.toggle("active", o === b);
    for (const t of document.querySelectorAll(".tab")) t.hidden = t.id !== `tab-${b.dataset.tab}`;
  });
}

// ---------------------------------------------------------------- forms from JSON Schema

function resolveRef(schema, root) {
  let s = schema || {};
  for (let hops = 0; s && s.$ref && hops < 16; hops++) {
    if (!s.$ref.startsWith("#")) break;
    let target = root;
    for (const part of s.$ref.slice(1).split("/").filter(Boolean)) {
      target = target ? target[decodeURIComponent(part.replace(/~1/g, "/").replace(/~0/g, "~"))] : undefined;
    }
    if (!target) break;
    s = { ...target, ...Object.fromEntries(Object.entries(s).filter(([k]) => k !== "$ref")) };
  }
  return s;
}

function typeOf(s) {
  if (Array.isArray(s.type)) return s.type.find((t) => t !== "null") || "string";
  if (s.type) return s.type;
  if (s.enum) return "enum";
  if (s.properties) return "object";
  if (s.items) return "array";
  if (s.oneOf || s.anyOf) return "choice";
  return "json";
}

function choices(s) {
  if (s.enum) return s.enum.map((v, i) => ({ value: v, title: (s.enumNames && s.enumNames[i]) || String(v) }));
  const alts = s.oneOf || s.anyOf;
  if (alts && alts.every((a) => "const" in a)) return alts.map((a) => ({ value: a.const, title: a.title || String(a.const) }));
  return null;
}

// A field for `schema`: { el, read() → { value, present, errors } }.
function field(schema, root, label, required) {
  const s = resolveRef(schema, root);
  const title = s.title || label;
  const help = s.description ? el("small", { class: "help", text: s.description }) : null;
  const mark = required ? el("span", { class: "req", title: "required", text: " *" }) : null;
  const errorBox = el("span", { class: "field-error" });
  const wrap = (input) => el("label", { class: "field" }, el("span", { class: "name" }, title, mark), input, help, errorBox);
  const done = (read) => (f) => { errorBox.textContent = ""; const r = read(); if (r.errors.length) errorBox.textContent = r.errors.join("; "); return r; };
  const opts = choices(s);
  const type = typeOf(s);

  if (opts && type !== "array") {
    const sel = el("select", { name: label },
      required ? null : el("option", { value: "", text: "—" }),
      opts.map((o, i) => el("option", { value: String(i), text: o.title })));
    if ("default" in s) { const i = opts.findIndex((o) => o.value === s.default); if (i >= 0) sel.value = String(i); }
    return { el: wrap(sel), read: done(() => {
      if (sel.value === "") return { present: false, errors: required ? ["required"] : [] };
      return { present: true, value: opts[Number(sel.value)].value, errors: [] };
    }) };
  }
  if (type === "boolean") {
    const sel = el("select", { name: label }, el("option", { value: "", text: "—" }),
      el("option", { value: "true", text: "true" }), el("option", { value: "false", text: "false" }));
    if (s.default !== undefined && s.default !== null) sel.value = String(s.default);
    return { el: wrap(sel), read: done(() => {
      if (sel.value === "") return { present: false, errors: required ? ["required"] : [] };
      return { present: true, value: sel.value === "true", errors: [] };
    }) };
  }
  if (type === "number" || type === "integer") {
    const input = el("input", { type: "number", name: label, step: type === "integer" ? "1" : "any",
      min: s.minimum ?? s.exclusiveMinimum, max: s.maximum ?? s.exclusiveMaximum });
    if (s.default !== undefined && s.default !== null) input.value = String(s.default);
    return { el: wrap(input), read: done(() => {
      const t = input.value.trim();
      if (t === "") return { present: false, errors: required ? ["required"] : [] };
      const n = Number(t);
      const errors = [];
      if (!Number.isFinite(n)) errors.push("not a number");
      if (type === "integer" && !Number.isInteger(n)) errors.push("must be a whole number");
      if (s.minimum !== undefined && n < s.minimum) errors.push(`must be ≥ ${s.minimum}`);
      if (s.maximum !== undefined && n > s.maximum) errors.push(`must be ≤ ${s.maximum}`);
      if (s.exclusiveMinimum !== undefined && n <= s.exclusiveMinimum) errors.push(`must be > ${s.exclusiveMinimum}`);
      if (s.exclusiveMaximum !== undefined && n >= s.exclusiveMaximum) errors.push(`must be < ${s.exclusiveMaximum}`);
      return { present: true, value: n, errors };
    }) };
  }
  if (type === "string") {
    const kinds = { email: "email", uri: "url", date: "date", "date-time": "datetime-local" };
    const long = (s.maxLength || 0) > 200 || s.format === "textarea";
    const input = long ? el("textarea", { name: label, rows: 3 }) : el("input", { type: kinds[s.format] || "text", name: label });
    if (s.default !== undefined && s.default !== null) input.value = String(s.default);
    return { el: wrap(input), read: done(() => {
      const t = input.value;
      if (t === "") return { present: false, errors: required ? ["required"] : [] };
      const errors = [];
      if (s.minLength !== undefined && t.length < s.minLength) errors.push(`at least ${s.minLength} characters`);
      if (s.maxLength !== undefined && t.length > s.maxLength) errors.push(`at most ${s.maxLength} characters`);
      if (s.pattern) { try { if (!new RegExp(s.pattern, "u").test(t)) errors.push(`must match ${s.pattern}`); } catch { /* a pattern JS cannot read: the server checks it */ } }
      return { present: true, value: t, errors };
    }) };
  }
  if (type === "object") {
    const req = new Set(s.required || []);
    const fields = Object.entries(s.properties || {}).map(([k, sub]) => [k, field(sub, root, k, req.has(k))]);
    const legend = label === "" && !s.title ? null : el("legend", {}, title, mark);
    const box = el("fieldset", { class: "object" }, legend, help, fields.map(([, f]) => f.el), errorBox);
    return { el: box, read: () => {
      const value = {}; const errors = []; let any = false;
      for (const [k, f] of fields) {
        const r = f.read();
        if (r.errors.length) errors.push(`${k}: ${r.errors.join(", ")}`);
        if (r.present) { value[k] = r.value; any = true; }
      }
      const present = any || required || label === "";
      return { present, value, errors };
    } };
  }
  if (type === "array") {
    const items = resolveRef(s.items || {}, root);
    const itemChoices = choices(items);
    if (itemChoices) {
      const boxes = itemChoices.map((o) => el("input", { type: "checkbox" }));
      const list = el("span", { class: "checks" }, itemChoices.map((o, i) => el("label", {}, boxes[i], o.title)));
      return { el: wrap(list), read: done(() => {
        const value = itemChoices.filter((_, i) => boxes[i].checked).map((o) => o.value);
        // An optional list left empty is left out, whatever its minItems.
        if (value.length === 0 && !required) return { present: false, errors: [] };
        const errors = [];
        if (s.minItems !== undefined && value.length < s.minItems) errors.push(`pick at least ${s.minItems}`);
        return { present: value.length > 0 || required, value, errors };
      }) };
    }
    const rows = [];
    const holder = el("div", { class: "rows" });
    const add = () => {
      const f = field(items, root, `${label}[${rows.length}]`, true);
      const row = el("div", { class: "row" }, f.el);
      const entry = { f, row };
      row.append(el("button", { type: "button", class: "remove", text: "remove", onclick: () => {
        rows.splice(rows.indexOf(entry), 1); row.remove();
      } }));
      rows.push(entry); holder.append(row);
    };
    const box = el("fieldset", { class: "array" }, el("legend", {}, title, mark), help, holder,
      el("button", { type: "button", class: "add", text: "add item", onclick: add }), errorBox);
    return { el: box, read: () => {
      const value = []; const errors = [];
      if (rows.length === 0 && !required) { errorBox.textContent = ""; return { present: false, value, errors }; }
      rows.forEach((r, i) => { const x = r.f.read(); if (x.errors.length) errors.push(`[${i}]: ${x.errors.join(", ")}`); value.push(x.value); });
      if (s.minItems !== undefined && value.length < s.minItems) errors.push(`at least ${s.minItems} items`);
      if (s.maxItems !== undefined && value.length > s.maxItems) errors.push(`at most ${s.maxItems} items`);
      errorBox.textContent = errors.join("; ");
      return { present: value.length > 0 || required, value, errors };
    } };
  }
  if (type === "choice") {
    const alts = (s.oneOf || s.anyOf).map((a) => resolveRef(a, root));
    const sel = el("select", {}, alts.map((a, i) => el("option", { value: String(i), text: a.title || `option ${i + 1}` })));
    const holder = el("div", { class: "variant" });
    let current = null;
    const show = () => { current = field(alts[Number(sel.value)], root, label, required); holder.replaceChildren(current.el); };
    sel.addEventListener("change", show); show();
    return { el: el("div", { class: "choice" }, wrap(sel), holder), read: () => current.read() };
  }
  const area = el("textarea", { name: label, rows: 3, placeholder: "JSON" });
  if ("default" in s) area.value = JSON.stringify(s.default);
  return { el: wrap(area), read: done(() => {
    if (area.value.trim() === "") return { present: false, errors: required ? ["required"] : [] };
    try { return { present: true, value: JSON.parse(area.value), errors: [] }; } catch (e) { return { present: true, value: null, errors: ["not JSON"] }; }
  }) };
}

// ---------------------------------------------------------------- results

function renderContent(blocks) {
  return (blocks || []).map((b) => {
    switch (b.type) {
      case "text": return el("pre", { class: "text" }, b.text);
      case "image": return el("img", { class: "media", alt: "image content", src: `data:${b.mimeType};base64,${b.data}` });
      case "audio": return el("audio", { controls: true, src: `data:${b.mimeType};base64,${b.data}` });
      case "resource": {
        const r = b.resource || {};
        return el("div", { class: "embedded" }, el("div", { class: "uri", text: `${r.uri} (${r.mimeType || "?"})` }),
          r.text !== undefined ? el("pre", {}, r.text) : el("span", { text: `${(r.blob || "").length} base64 characters` }));
      }
      case "resource_link": return el("div", { class: "link" }, "link: ", el("code", { text: b.uri }), b.name ? ` (${b.name})` : "");
      default: return el("pre", {}, json(b));
    }
  });
}

function renderResult(box, r) {
  box.replaceChildren();
  if (r.error) {
    box.append(el("div", { class: "error", role: "alert" }, `Error${r.error.code !== undefined && r.error.code !== null ? ` ${r.error.code}` : ""}: ${r.error.message}`));
    if (r.error.data) box.append(el("pre", {}, json(r.error.data)));
    return;
  }
  const res = r.result || {};
  const out = el("div", { class: res.isError ? "result is-error" : "result" });
  if (res.isError) out.append(el("div", { class: "error", text: "The tool reports an error (isError)" }));
  out.append(...renderContent(res.content));
  if (res.structuredContent !== undefined) out.append(el("h4", { text: "structuredContent" }), el("pre", { class: "structured" }, json(res.structuredContent)));
  out.append(el("details", {}, el("summary", { text: "raw result" }), el("pre", {}, json(res))));
  box.append(out);
}

// ---------------------------------------------------------------- tools

// MCP Apps: a tool's view (`_meta.ui.resourceUri`, or the older `_meta["ui/resourceUri"]`)
// and who may see the tool (`_meta.ui.visibility`: "model", "app"; both when absent).
function uiOf(t) { return (t && t._meta && t._meta.ui) || {}; }
function viewOf(t) { return uiOf(t).resourceUri || (t && t._meta && t._meta["ui/resourceUri"]) || null; }
function visibleTo(t, who) { const v = uiOf(t).visibility; return !Array.isArray(v) || v.includes(who); }

async function loadTools() {
  const r = await rpc("tools/list");
  state.allTools = (r.result && r.result.tools) || [];
  // App-only tools are for views to call, not for the list (the Apps spec).
  state.tools = state.allTools.filter((t) => visibleTo(t, "model"));
  const hidden = state.allTools.length - state.tools.length;
  const list = $("tool-list");
  list.replaceChildren(...state.tools.map((t) => {
    const a = t.annotations || {};
    const badges = [a.readOnlyHint && "read-only", a.destructiveHint && "destructive", a.idempotentHint && "idempotent",
      a.openWorldHint && "open-world", t.execution && t.execution.taskSupport && t.execution.taskSupport !== "forbidden" && `task: ${t.execution.taskSupport}`,
      viewOf(t) && "view"].filter(Boolean);
    return el("li", { "data-tool": t.name, onclick: () => showTool(t) },
      el("span", { class: "tool-name", text: t.title || t.name }), badges.map((b) => el("span", { class: "badge", text: b })));
  }));
  if (hidden) list.append(el("li", { class: "hint", id: "app-only-note", text: `${hidden} app-only tool(s) not listed: their views call them` }));
  if (r.error) list.append(el("li", { class: "error", text: r.error.message }));
}

// Renders tool `t`'s view in `box` through the sandbox proxy on the views' origin (another
// port: the view cannot reach into this page) and connects it with the App SDK's host bridge
// (bridge.js), as a host would: the view's own calls go through the inspector's connection.
// Returns { result(answer) } to hand it the tool's result, or null when it cannot be shown.
async function openView(t, box, args) {
  if (state.view) { try { state.view.bridge.close(); } catch { /* gone already */ } state.view = null; }
  const uri = viewOf(t);
  const status = box.querySelector(".view-status");
  const body = box.querySelector(".view-body");
  const say = (text) => { status.textContent = text; };
  box.hidden = false;
  say(`reading ${uri}…`);
  const r = await rpc("resources/read", { uri });
  const all = (r.result && r.result.contents) || [];
  const contents = all.find((c) => /^text\/html/.test(c.mimeType || "")) || all[0];
  if (r.error || !contents) { say(`cannot read the view ${uri}: ${r.error ? r.error.message : "no contents"}`); return null; }
  const html = contents.text !== undefined ? contents.text
    : new TextDecoder().decode(Uint8Array.from(atob(contents.blob || ""), (ch) => ch.charCodeAt(0)));
  const ui = (contents._meta && contents._meta.ui) || {};
  const sb = state.info.sandbox;
  const origin = `http://${location.hostname === "localhost" ? "127.0.0.1" : "localhost"}:${sb.port}`;
  const frame = el("iframe", { id: "view-frame", title: `view ${uri}`, sandbox: "allow-scripts allow-same-origin allow-forms" });
  if (ui.prefersBorder === false) frame.classList.add("borderless");
  const ready = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("the sandbox proxy did not load within 10 s")), 10_000);
    const on = (ev) => {
      if (ev.source === frame.contentWindow && ev.origin === origin && ev.data && ev.data.method === "ui/notifications/sandbox-proxy-ready") {
        window.removeEventListener("message", on); clearTimeout(timer); resolve();
      }
    };
    window.addEventListener("message", on);
  });
  frame.src = `${origin}/sandbox.html?token=${encodeURIComponent(sb.token)}`;
  body.replaceChildren(frame);
  try { await ready; } catch (e) { say(String(e.message || e)); return null; }

  const { AppBridge, PostMessageTransport } = window.DuomcpAppBridge;
  const caps = state.info.capabilities || {};
  const bridge = new AppBridge(null, { name: "duomcp-inspect", version: "1" },
    { serverTools: caps.tools ? {} : undefined, serverResources: caps.resources ? {} : undefined, logging: {} },
    { hostContext: { theme: matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light", displayMode: "inline",
      toolInfo: { tool: t }, locale: navigator.language } });
  const calls = box.querySelector(".view-calls");
  bridge.oncalltool = async (params) => {
    const known = (state.allTools || []).find((x) => x.name === params.name);
    // A view calls only the tools its app may see.
    if (known && !visibleTo(known, "app")) throw new Error(`${params.name} is not visible to apps`);
    const line = el("li", { text: `the view called ${params.name}…` });
    calls.append(line);
    const a = await rpc("tools/call", { name: params.name, arguments: params.arguments || {} }, `v${++state.calls}`);
    if (a.error) { line.textContent = `the view called ${params.name}: ${a.error.message}`; throw new Error(a.error.message); }
    line.textContent = `the view called ${params.name}: ${a.result.isError ? "error" : "ok"}`;
    return a.result;
  };
  const relay = (method) => async (params) => {
    const a = await rpc(method, params || {});
    if (a.error) throw new Error(a.error.message);
    return a.result;
  };
  bridge.onreadresource = relay("resources/read");
  bridge.onlistresources = relay("resources/list");
  bridge.onlistresourcetemplates = relay("resources/templates/list");
  bridge.onloggingmessage = (p) => logLine({ ...p, logger: `view${p.logger ? ` ${p.logger}` : ""}` });
  bridge.onmessage = async (p) => { calls.append(el("li", { text: `the view says: ${JSON.stringify(p.content || p)}` })); return {}; };
  bridge.onopenlink = async (p) => { calls.append(el("li", { text: `the view asks to open ${p.url} (not opened)` })); return { isError: true }; };
  bridge.onsizechange = (p) => { if (p && p.height) frame.style.height = `${Math.min(Math.max(p.height, 80), 2000)}px`; };
  const initialized = new Promise((resolve) => { bridge.oninitialized = resolve; });
  await bridge.connect(new PostMessageTransport(frame.contentWindow, frame.contentWindow));
  await bridge.sendSandboxResourceReady({ html, csp: ui.csp, permissions: ui.permissions });
  await initialized;
  await bridge.sendToolInput({ arguments: args });
  say(`${uri}: connected`);
  state.view = { bridge };
  return {
    result: async (answer) => {
      if (answer.result) await bridge.sendToolResult(answer.result);
      else await bridge.sendToolCancelled({ reason: (answer.error && answer.error.message) || "failed" });
      say(`${uri}: tool result sent`);
    },
  };
}

function showTool(t) {
  for (const li of document.querySelectorAll("#tool-list li")) li.classList.toggle("active", li.dataset.tool === t.name);
  const schema = t.inputSchema || { type: "object" };
  const form = field(schema, schema, "", true);
  const progress = el("progress", { hidden: true });
  const progressText = el("span", { class: "progress-text" });
  const taskLine = el("div", { class: "task-line" });
  const result = el("div", { class: "result-box", "aria-live": "polite" });
  const errors = el("p", { class: "error", role: "alert" });
  const cancel = el("button", { type: "button", disabled: true, text: "Cancel" });
  const run = async (asTask) => {
    const r = form.read();
    errors.textContent = r.errors.length ? `Fix first: ${r.errors.join("; ")}` : "";
    if (r.errors.length) return;
    const call = `c${++state.calls}`;
    result.replaceChildren(el("span", { class: "hint", text: "running…" }));
    progress.hidden = true; progressText.textContent = ""; taskLine.textContent = "";
    progress.removeAttribute("value");
    cancel.disabled = false;
    cancel.onclick = () => api(`/api/cancel/${call}`, {});
    state.onProgress = (ev) => {
      if (ev.call !== call) return;
      const p = ev.progress;
      progress.hidden = false;
      if (p.total) { progress.max = p.total; progress.value = p.progress; } else { progress.removeAttribute("value"); }
      progressText.textContent = `${p.progress}${p.total ? ` / ${p.total}` : ""}${p.message ? ` — ${p.message}` : ""}`;
    };
    state.onTask = (ev) => {
      if (ev.call !== call) return;
      taskLine.textContent = `task ${ev.taskId}: ${ev.status}${ev.message ? ` — ${ev.message}` : ""}`;
    };
    const params = { name: t.name, arguments: r.value || {} };
    if (asTask) params.task = {};
    const view = viewOf(t) ? await openView(t, viewBox, params.arguments) : null;
    const answer = await rpc("tools/call", params, call);
    cancel.disabled = true;
    renderResult(result, answer);
    if (view) await view.result(answer);
  };
  const viewBox = el("section", { class: "view-panel", hidden: true, "aria-label": "view" },
    el("h3", { text: "View" }), el("div", { class: "view-body" }), el("p", { class: "view-status hint", role: "status" }),
    el("ol", { class: "view-calls" }));
  $("tool-detail").replaceChildren(
    el("h2", { text: t.title || t.name }),
    t.description ? el("p", { class: "description", text: t.description }) : null,
    el("form", { id: "tool-form", onsubmit: (ev) => { ev.preventDefault(); run(false); } },
      form.el,
      el("div", { class: "actions" },
        el("button", { type: "submit", text: "Run" }),
        el("button", { type: "button", text: "Run as task", onclick: () => run(true) }),
        cancel)),
    errors, el("div", { class: "progress-line" }, progress, progressText), taskLine, result, viewBox,
    el("details", {}, el("summary", { text: "tool definition" }), el("pre", {}, json(t))),
  );
}

// ---------------------------------------------------------------- resources

async function loadResources() {
  const caps = (state.info && state.info.capabilities) || {};
  if (!caps.resources) { $("resource-list").replaceChildren(el("li", { class: "hint", text: "no resources" })); $("template-list").replaceChildren(); return; }
  const [r, t] = await Promise.all([rpc("resources/list"), rpc("resources/templates/list")]);
  $("resource-list").replaceChildren(...((r.result && r.result.resources) || []).map((res) =>
    el("li", { "data-uri": res.uri, onclick: () => readResource(res.uri) }, el("span", { text: res.name || res.uri }), el("small", { text: ` ${res.uri}` }))));
  $("template-list").replaceChildren(...((t.result && t.result.resourceTemplates) || []).map((tpl) =>
    el("li", { "data-template": tpl.uriTemplate, onclick: () => showTemplate(tpl) }, el("span", { text: tpl.name || tpl.uriTemplate }), el("small", { text: ` ${tpl.uriTemplate}` }))));
}

async function readResource(uri, box = null) {
  const target = box || $("resource-detail");
  if (!box) {
    // A listed resource can be listened to: its updates are listed (and it is read again).
    const subscribed = ((state.info && state.info.subscriptions) || []).includes(uri);
    const status = el("span", { id: "subscribe-status", role: "status", text: subscribed ? "listening for updates" : "" });
    const toggle = el("button", { type: "button", id: "subscribe-toggle", text: subscribed ? "Unsubscribe" : "Subscribe" });
    toggle.addEventListener("click", async () => {
      const on = toggle.textContent === "Subscribe";
      const r = await api(on ? "/api/subscribe" : "/api/unsubscribe", { uri });
      if (r && r.error) { status.textContent = r.error.message; return; }
      toggle.textContent = on ? "Unsubscribe" : "Subscribe";
      status.textContent = on ? "listening for updates" : "";
      state.info = await api("/api/info");
    });
    target.replaceChildren(el("h2", { text: uri }), el("div", { class: "actions" }, toggle, status),
      el("ol", { id: "resource-updates", "data-uri": uri }));
  }
  const out = el("div", { class: "result-box" });
  target.append(out);
  const r = await rpc("resources/read", { uri });
  if (r.error) return renderResult(out, r);
  for (const c of (r.result && r.result.contents) || []) {
    out.append(el("div", { class: "uri", text: `${c.uri} (${c.mimeType || "?"})` }),
      c.text !== undefined ? el("pre", { class: "text" }, c.text) : el("span", { text: `${(c.blob || "").length} base64 characters` }));
  }
}

function templateVars(t) {
  return [...new Set([...t.matchAll(/\{[+#./;?&]?([^}]+)\}/g)].flatMap((m) => m[1].split(",").map((v) => v.replace(/[*]|:\d+$/g, ""))))];
}

function showTemplate(tpl) {
  const vars = templateVars(tpl.uriTemplate);
  const inputs = vars.map((v) => {
    const input = el("input", { name: v, list: `complete-${v}`, autocomplete: "off" });
    const options = el("datalist", { id: `complete-${v}` });
    input.addEventListener("input", async () => {
      const args = Object.fromEntries(inputs.map((i) => [i.name, i.input.value]));
      const r = await rpc("completion/complete", {
        ref: { type: "ref/resource", uri: tpl.uriTemplate },
        argument: { name: v, value: input.value },
        context: { arguments: args },
      });
      const values = (r.result && r.result.completion && r.result.completion.values) || [];
      options.replaceChildren(...values.map((x) => el("option", { value: x })));
    });
    return { name: v, input, el: el("label", { class: "field" }, el("span", { class: "name", text: v }), input, options) };
  });
  const out = el("div");
  $("resource-detail").replaceChildren(el("h2", { text: tpl.name || tpl.uriTemplate }), el("code", { text: tpl.uriTemplate }),
    el("form", { onsubmit: (ev) => {
      ev.preventDefault();
      let uri = tpl.uriTemplate;
      for (const i of inputs) uri = uri.replace(new RegExp(`\\{[+#./;?&]?${i.name}\\}`, "g"), encodeURIComponent(i.input.value));
      out.replaceChildren(el("h3", { text: uri }));
      readResource(uri, out);
    } }, inputs.map((i) => i.el), el("button", { type: "submit", text: "Read" })), out);
}

// ---------------------------------------------------------------- prompts

async function loadPrompts() {
  const caps = (state.info && state.info.capabilities) || {};
  if (!caps.prompts) { $("prompt-list").replaceChildren(el("li", { class: "hint", text: "no prompts" })); return; }
  const r = await rpc("prompts/list");
  $("prompt-list").replaceChildren(...((r.result && r.result.prompts) || []).map((p) =>
    el("li", { "data-prompt": p.name, onclick: () => showPrompt(p) }, el("span", { text: p.title || p.name }))));
}

function showPrompt(p) {
  const inputs = (p.arguments || []).map((a) => {
    const input = el("input", { name: a.name });
    return { a, input, el: el("label", { class: "field" }, el("span", { class: "name" }, a.name, a.required ? el("span", { class: "req", text: " *" }) : null), input, a.description ? el("small", { class: "help", text: a.description }) : null) };
  });
  const out = el("div", { class: "result-box" });
  $("prompt-detail").replaceChildren(el("h2", { text: p.title || p.name }), p.description ? el("p", { text: p.description }) : null,
    el("form", { onsubmit: async (ev) => {
      ev.preventDefault();
      const args = {};
      for (const i of inputs) if (i.input.value !== "") args[i.a.name] = i.input.value;
      const r = await rpc("prompts/get", { name: p.name, arguments: args });
      if (r.error) return renderResult(out, r);
      out.replaceChildren(...((r.result && r.result.messages) || []).map((m) => el("div", { class: `message ${m.role}` }, el("strong", { text: m.role }), renderContent([m.content]))));
    } }, inputs.map((i) => i.el), el("button", { type: "submit", text: "Get" })), out);
}

// ---------------------------------------------------------------- input requests

function nextInput() {
  const dialog = $("input-dialog");
  if (dialog.open || state.cannedBusy || state.inputs.length === 0) return;
  const req = state.inputs[0];
  const p = req.params || {};
  const fields = $("input-fields");
  const buttons = $("input-buttons");
  $("input-error").textContent = "";
  fields.replaceChildren(); buttons.replaceChildren();
  const send = async (answer) => {
    const r = await api(`/api/input/${req.id}`, answer);
    if (r && r.error) { $("input-error").textContent = r.error.message; return; }
    state.inputs.shift(); dialog.close(); nextInput();
  };
  if (req.kind === "elicitation" && p.mode === "url") {
    $("input-title").textContent = "The server asks you to open a page";
    $("input-message").textContent = p.message || "";
    fields.append(el("code", { text: p.url }));
    buttons.append(el("button", { type: "button", text: "Done", onclick: () => send({ action: "accept" }) }),
      el("button", { type: "button", text: "Decline", onclick: () => send({ action: "decline" }) }));
  } else if (req.kind === "elicitation") {
    $("input-title").textContent = "The server asks";
    $("input-message").textContent = p.message || "";
    const schema = p.requestedSchema || { type: "object" };
    const form = field(schema, schema, "", true);
    fields.append(form.el);
    buttons.append(el("button", { type: "button", id: "input-accept", text: "Accept", onclick: () => {
      const r = form.read();
      if (r.errors.length) { $("input-error").textContent = r.errors.join("; "); return; }
      send({ action: "accept", content: r.value || {} });
    } }),
    el("button", { type: "button", text: "Decline", onclick: () => send({ action: "decline" }) }),
    el("button", { type: "button", text: "Cancel", onclick: () => send({ action: "cancel" }) }));
  } else if ($("canned-reply").value !== "") {
    // A canned reply: answered at once, no dialog (one at a time, then the next).
    state.cannedBusy = true;
    api(`/api/input/${req.id}`, { role: "assistant", content: { type: "text", text: $("canned-reply").value },
      model: "duomcp-inspect (canned)", stopReason: "endTurn" }).finally(() => {
      state.inputs = state.inputs.filter((i) => i.id !== req.id);
      state.cannedBusy = false;
      nextInput();
    });
    return;
  } else {
    $("input-title").textContent = "The server asks for a model's answer (sampling)";
    $("input-message").textContent = p.systemPrompt || "";
    for (const m of p.messages || []) fields.append(el("div", { class: `message ${m.role}` }, el("strong", { text: m.role }), renderContent([].concat(m.content))));
    const reply = el("textarea", { rows: 4, id: "sampling-reply", placeholder: "the assistant's reply" });
    fields.append(el("label", { class: "field" }, el("span", { class: "name", text: "Reply" }), reply));
    buttons.append(el("button", { type: "button", text: "Send reply", onclick: () => send({
      role: "assistant", content: { type: "text", text: reply.value }, model: "duomcp-inspect (by hand)", stopReason: "endTurn",
    }) }));
  }
  dialog.showModal();
}

// ---------------------------------------------------------------- trace and events

function traceRow(e) {
  const row = el("tr", { class: `dir-${e.dir} ${e.error ? "has-error" : ""}`, onclick: () => { $("trace-detail").textContent = httpText(e) + json(e); } },
    el("td", { text: e.seq }), el("td", { text: (e.t || 0).toFixed(1) }), el("td", { text: e.dir === "out" ? "→" : "←" }),
    el("td", { text: `${e.kind || ""}${Array.isArray(e.http) && e.http.length ? " ⇄" : ""}` }), el("td", { text: e.method || e.target || "" }), el("td", { text: e.ms !== undefined ? `${e.ms.toFixed(1)} ms` : "" }));
  row.dataset.text = JSON.stringify(e).toLowerCase();
  applyFilter(row);
  const body = document.querySelector("#trace-table tbody");
  body.append(row);
  while (body.rows.length > TRACE_ROWS) body.deleteRow(0);
  $("trace-count").textContent = String(e.seq);
}

// The HTTP exchanges of a trace entry (HTTP connections), as the wire shows them.
function httpText(e) {
  if (!Array.isArray(e.http) || e.http.length === 0) return "";
  const lines = (hs) => (hs || []).map(([n, v]) => `  ${n}: ${v}`).join("\n");
  return e.http.map((x) => `${x.method} ${x.url}\n${lines(x.request)}\n→ ${x.status}\n${lines(x.response)}\n`).join("\n") + "\n";
}

function applyFilter(row) {
  const f = $("trace-filter").value.trim().toLowerCase();
  row.hidden = f !== "" && !row.dataset.text.includes(f);
}
$("trace-filter").addEventListener("input", () => { for (const r of document.querySelectorAll("#trace-table tbody tr")) applyFilter(r); });

function logLine(params) {
  const data = typeof params.data === "string" ? params.data : JSON.stringify(params.data);
  const list = $("log-list");
  list.append(el("li", { class: `level-${params.level}` }, el("span", { class: "level", text: params.level }), params.logger ? ` ${params.logger}: ` : " ", data));
  while (list.children.length > 500) list.firstElementChild.remove();
}

async function start() {
  const traced = await api("/api/trace");
  for (const e of (traced && traced.entries) || []) traceRow(e);
  const events = new EventSource("/api/events");
  events.onmessage = (m) => {
    const ev = JSON.parse(m.data);
    if (ev.type === "hello") {
      state.inputs = (ev.pending || []).slice();
      nextInput();
    } else if (ev.type === "trace") {
      traceRow(ev.entry);
      const e = ev.entry;
      if (e.kind === "notification" && e.method === "notifications/message") logLine(e.params || {});
      if (e.kind === "notification" && /list_changed$/.test(e.method || "")) refreshInfo();
    } else if (ev.type === "progress" && state.onProgress) state.onProgress(ev);
    else if (ev.type === "task" && state.onTask) state.onTask(ev);
    else if (ev.type === "updated" || ev.type === "subscription_ended") {
      const list = $("resource-updates");
      if (list && list.dataset.uri === ev.uri) {
        const when = new Date().toLocaleTimeString();
        list.append(el("li", { text: ev.type === "updated" ? `updated at ${when}` : `the subscription ended at ${when}` }));
        while (list.children.length > 100) list.firstElementChild.remove();
      }
    }
    else if (ev.type === "authorization") authorized(ev);
    else if (ev.type === "input") { state.inputs.push(ev); nextInput(); }
    else if (ev.type === "input_done") {
      state.inputs = state.inputs.filter((i) => i.id !== ev.id);
      if ($("input-dialog").open && !state.inputs.some((i) => i.id === ev.id)) { /* answered elsewhere or timed out */ }
    }
  };
  await refreshInfo();
  // A page loaded while an authorization is under way hears of its end from the events.
  const flow = await api("/api/authorize");
  if (flow && flow.state === "pending" && !state.info.connected) {
    $("connect-error").textContent = `an authorization for ${flow.url} is under way…`;
  }
  document.body.dataset.ready = "true";
}

start();
