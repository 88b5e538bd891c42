// Drives `duomcp inspect`'s page in a real browser (run by tests/inspect_fixtures/inspect.rs,
// a module of tests/interop.rs):
//
//   DUOMCP_INTEROP_DIR=<dir with node_modules> node browser.mjs PAGE_URL CHROMIUM SHOT_DIR LABEL \
//     [reference|everything|apps SECRET]
//
// Opens PAGE_URL (the URL `duomcp inspect` printed, token included) in headless Chromium
// (playwright-core) with every request that leaves the inspector's own origin refused and
// counted (the page must work offline), and goes through the page as a person would, against
// `duomcp serve` ("reference") or the official server-everything ("everything"):
// the tool list; a form made from a nested-object schema, filled and run; progress; log
// messages; an elicitation answered in the page's dialog; a tool run as a task to its end; roots
// edited and a canned sampling reply (reference); a resource's updates listened to
// (server-everything); a resource template filled with the server's completion and read; the trace, exported as JSON
// Lines. With "apps" (the mcp_app example over HTTP, the inspector holding the bearer token
// SECRET): the app-only tool kept from the list, the counter's view rendered in its sandbox on
// the views' origin, its button clicked (a tool call through the inspector) and its answer in the
// view, then a trace entry's HTTP headers, with SECRET nowhere. It saves a screenshot of each step as SHOT_DIR/LABEL-STEP.png and prints what it saw
// as one JSON line. Exits 1 on any failure.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const kit = createRequire(join(resolve(process.env.DUOMCP_INTEROP_DIR ?? ""), "package.json"));
const { chromium } = kit("playwright-core");

const [pageUrl, executablePath, shotDir, label, flavour = "reference", secret = ""] = process.argv.slice(2);
const origin = new URL(pageUrl).origin;
const seen = { offsite: [], console: [], shots: [], views: [] };
const STEP = 20_000;

const profile = mkdtempSync(join(tmpdir(), "duomcp-inspect-chromium-"));
let context;
let code = 0;
let failed = async () => {};
try {
  context = await chromium.launchPersistentContext(profile, {
    executablePath,
    headless: true,
    viewport: { width: 1280, height: 900 },
    args: ["--no-sandbox"],
    acceptDownloads: true,
  });
  // Nothing but the inspector itself: a CDN font, script or image would show up here.
  await context.route("**/*", (route) => {
    const url = route.request().url();
    if (url.startsWith(`${origin}/`) || url.startsWith("data:")) return route.continue();
    // The views' origin (MCP Apps): the sandbox proxy, counted; checked by inspect.rs.
    const u = new URL(url);
    if (u.hostname === "localhost" && u.pathname === "/sandbox.html") {
      seen.views.push(u.origin);
      return route.continue();
    }
    seen.offsite.push(url);
    return route.abort();
  });
  const page = context.pages()[0] ?? (await context.newPage());
  failed = async () => {
    seen.failedShot = join(shotDir, `${label}-failed.png`);
    seen.inputError = await page.locator("#input-error").innerText().catch(() => null);
    seen.pageErrors = await page.locator("#tool-detail .error").allInnerTexts().catch(() => null);
    await page.screenshot({ path: seen.failedShot, fullPage: true }).catch(() => {});
  };
  page.on("console", (m) => { if (m.type() === "error") seen.console.push(m.text()); });
  page.on("pageerror", (e) => seen.console.push(String(e)));
  // fullPage: false for a view: a full-page capture resizes the page, and Chromium may not
  // repaint the view's out-of-process frames in time (they come out blank).
  const shot = async (step, fullPage = true) => {
    const path = join(shotDir, `${label}-${step}.png`);
    await page.screenshot({ path, fullPage });
    seen.shots.push(path);
  };
  const tab = (name) => page.click(`#tabs button[data-tab="${name}"]`);
  const tool = async (name) => {
    await tab("tools");
    await page.click(`#tool-list li[data-tool="${name}"]`);
    await page.waitForSelector(`#tool-detail h2`);
  };
  const result = async () => {
    const box = page.locator("#tool-detail .result-box .result, #tool-detail .result-box .error");
    await box.first().waitFor({ timeout: STEP });
    return (await page.locator("#tool-detail .result-box").innerText()).trim();
  };

  // Connected: the page loads with the token (it becomes a cookie; the URL loses it).
  await page.goto(pageUrl);
  await page.waitForSelector("body[data-ready=true]", { timeout: STEP });
  seen.url = page.url();
  seen.status = (await page.locator("#status").innerText()).trim();
  seen.era = await page.locator("#status").getAttribute("data-era");
  await page.waitForSelector("#tool-list li", { timeout: STEP });
  seen.tools = await page.locator("#tool-list li[data-tool]").evaluateAll((lis) => lis.map((li) => li.dataset.tool));
  await tab("server");
  seen.serverInfo = JSON.parse(await page.locator("#server-info").innerText());
  await shot("1-server");

  if (flavour === "apps") {
    // The counter: its app-only tool is not listed; its view renders when it is called.
    seen.appOnlyNote = (await page.locator("#app-only-note").innerText()).trim();
    await tool("show_counter");
    await page.click('#tool-form button[type="submit"]');
    seen.counterResult = await result();
    const view = page.frameLocator("#view-frame").frameLocator("#view");
    await view.locator("#increment:enabled").waitFor({ timeout: STEP });
    const counter = async () => ({
      count: (await view.locator("#count").textContent()).trim(),
      said: (await view.locator("#said").textContent()).trim(),
    });
    seen.initial = await counter();
    seen.sandboxOrigin = await page.frameLocator("#view-frame").locator("body").evaluate(() => location.origin);
    seen.info = await page.evaluate(async () => (await fetch("/api/info")).json());
    await page.locator("#view-frame").scrollIntoViewIfNeeded();
    await shot("2-view", false);
    // Its button: the view calls the app-only tool through the inspector, and shows the answer.
    await view.locator("#increment").click();
    await view.locator("#said", { hasText: "Incremented" }).waitFor({ timeout: STEP });
    seen.after = await counter();
    await page.waitForFunction(() => [...document.querySelectorAll("#tool-detail .view-calls li")].some((li) => / ok$/.test(li.textContent)), null, { timeout: STEP });
    seen.viewCalls = await page.locator("#tool-detail .view-calls li").allInnerTexts();
    seen.viewStatus = (await page.locator("#tool-detail .view-status").innerText()).trim();
    await page.locator("#view-frame").scrollIntoViewIfNeeded();
    await shot("3-view-clicked", false);
    // The trace: the view's call, with the headers of its HTTP exchange.
    await tab("trace");
    seen.traceRows = await page.locator("#trace-table tbody tr").count();
    await page.locator("#trace-table tbody tr").filter({ hasText: "increment_counter" }).first().waitFor({ timeout: STEP }).catch(() => {});
    const row = page.locator("#trace-table tbody tr").filter({ hasText: "⇄" }).filter({ hasText: "tools/call" }).last();
    await row.click();
    seen.traceDetail = await page.locator("#trace-detail").innerText();
    await shot("4-trace-headers");
    const [download] = await Promise.all([page.waitForEvent("download"), page.click("#trace-export")]);
    const text = readFileSync(await download.path(), "utf8");
    seen.exportHasSecret = secret !== "" && text.includes(secret);
    const entries = text.split("\n").filter(Boolean).map((l) => JSON.parse(l));
    seen.exported = entries.length;
    seen.exportedWithHttp = entries.filter((e) => Array.isArray(e.http) && e.http.length).length;
    seen.exportedAuthorization = [...new Set(entries.flatMap((e) => (e.http || []).flatMap((x) => x.request.filter(([n]) => n === "authorization").map(([, v]) => v))))];
    // The view's call (the page names its calls v1, v2…) with its POST's headers.
    seen.viewCallTraced = entries.some((e) => e.kind === "response" && e.method === "tools/call" && /^v\d+$/.test(e.call || "")
      && (e.http || []).length > 0 && e.http[0].request.some(([n, v]) => n === "mcp-method" && v === "tools/call"));
  } else {
  // A form from a nested-object schema: the field of the nested object filled, then run.
  const nested = flavour === "reference" ? "json_schema_2020_12_tool" : "get-structured-content";
  await tool(nested);
  if (flavour === "reference") {
    await page.fill('#tool-form input[name="name"]', "Ada");
    await page.fill('#tool-form fieldset.object fieldset.object input[name="street"]', "1 Loop Road");
    await page.fill('#tool-form fieldset.object fieldset.object input[name="city"]', "Paris");
    await page.selectOption('#tool-form select[name="contactMethod"]', { label: "email" });
    await page.fill('#tool-form input[name="email"]', "ada@example.com");
  } else {
    await page.selectOption('#tool-form select[name="location"]', { label: "New York" });
  }
  await page.click('#tool-form button[type="submit"]');
  seen.nested = await result();
  seen.nestedSent = await page.evaluate(async () => {
    const t = await (await fetch("/api/trace")).json();
    const calls = t.entries.filter((e) => e.kind === "request" && e.method === "tools/call");
    return calls[calls.length - 1].params.arguments;
  });
  await shot("2-tool-form");

  // Checked before sending: a required field left empty is said in the page, nothing sent.
  if (flavour === "reference") {
    await tool("greet");
    await page.click('#tool-form button[type="submit"]');
    seen.refused = (await page.locator("#tool-detail p.error").innerText()).trim();
  }

  // Progress, as a bar, and the call's log messages.
  await tool(flavour === "reference" ? "test_tool_with_progress" : "trigger-long-running-operation");
  if (flavour === "everything") {
    await page.fill('#tool-form input[name="duration"]', "1");
    await page.fill('#tool-form input[name="steps"]', "3");
  }
  await page.click('#tool-form button[type="submit"]');
  seen.progressResult = await result();
  seen.progress = (await page.locator("#tool-detail .progress-text").innerText()).trim();
  seen.progressBar = await page.locator("#tool-detail progress").evaluate((p) => ({ hidden: p.hidden, value: p.value, max: p.max }));
  await shot("3-progress");
  if (flavour === "reference") {
    await tool("test_tool_with_logging");
    await page.click('#tool-form button[type="submit"]');
    await result();
    await page.waitForSelector("#log-list li", { timeout: STEP });
    seen.logs = await page.locator("#log-list li").allInnerTexts();
  }

  // An elicitation, answered in the page's dialog.
  await tool(flavour === "reference" ? "test_elicitation" : "trigger-elicitation-request");
  if (flavour === "reference") await page.fill('#tool-form input[name="message"]', "Who is there?");
  await page.click('#tool-form button[type="submit"]');
  await page.waitForSelector("#input-dialog[open]", { timeout: STEP });
  seen.asked = (await page.locator("#input-message").innerText()).trim();
  await shot("4-elicitation");
  if (flavour === "reference") {
    await page.fill('#input-fields input[name="username"]', "ada");
    await page.fill('#input-fields input[name="email"]', "ada@example.com");
  } else {
    // Its one required field; the others keep their defaults or stay empty.
    await page.locator('#input-fields input[type="text"]').first().fill("Ada Lovelace");
  }
  await page.click("#input-accept");
  seen.elicited = await result();
  seen.dialogOpen = await page.locator("#input-dialog").evaluate((d) => d.open);

  // A tool run as a task, watched to its end.
  if (flavour === "reference") {
    await tool("slow_compute");
    await page.fill('#tool-form input[name="seconds"]', "1");
  } else {
    await tool("simulate-research-query");
    await page.fill('#tool-form input[name="topic"]', "inspectors");
  }
  await page.click('#tool-form button:text("Run as task")');
  seen.taskResult = await result();
  seen.taskLine = (await page.locator("#tool-detail .task-line").innerText()).trim();
  await shot("5-task");

  // Roots edited in the page, and a canned sampling reply (no dialog), then both asked for.
  if (flavour === "reference") {
    await tab("server");
    await page.fill("#roots-edit", "file:///work/a\nfile:///work/b");
    await page.click("#roots-save");
    await page.waitForFunction(() => document.getElementById("roots-status").textContent !== "", null, { timeout: STEP });
    seen.rootsStatus = await page.locator("#roots-status").innerText();
    await page.fill("#canned-reply", "Paris");
    await shot("5b-server-roots");
    await tool("test_input_required_result_list_roots");
    await page.click('#tool-form button[type="submit"]');
    seen.rootsResult = await result();
    await tool("test_input_required_result_sampling");
    await page.click('#tool-form button[type="submit"]');
    seen.sampled = await result();
  }

  // A resource listened to: its updates arrive (server-everything sends them every 5 s once
  // toggle-subscriber-updates is on).
  if (flavour === "everything") {
    await tab("resources");
    await page.click("#resource-list li");
    await page.click("#subscribe-toggle");
    await page.waitForFunction(() => document.getElementById("subscribe-status").textContent === "listening for updates", null, { timeout: STEP });
    await tool("toggle-subscriber-updates");
    await page.click('#tool-form button[type="submit"]');
    await result();
    await tab("resources");
    await page.waitForSelector("#resource-updates li", { timeout: 15_000 });
    seen.updates = await page.locator("#resource-updates li").allInnerTexts();
    seen.updatedUri = await page.locator("#resource-updates").getAttribute("data-uri");
    await shot("5c-subscription");
    await tool("toggle-subscriber-updates");
    await page.click('#tool-form button[type="submit"]');
    await result();
  }

  // A template filled with the server's completion, and read.
  await tab("resources");
  await page.click("#template-list li");
  const variable = page.locator("#resource-detail form input").first();
  await variable.pressSequentially(flavour === "reference" ? "pa" : "1", { delay: 20 });
  await page.waitForFunction(() => document.querySelectorAll("#resource-detail datalist option").length > 0, null, { timeout: STEP });
  seen.completions = await page.locator("#resource-detail datalist option").evaluateAll((os) => os.map((o) => o.value));
  await variable.fill(seen.completions[0]);
  await page.click('#resource-detail form button[type="submit"]');
  await page.waitForSelector("#resource-detail .result-box .uri, #resource-detail .result-box .error", { timeout: STEP });
  seen.read = (await page.locator("#resource-detail .result-box").innerText()).trim();
  await shot("6-template");

  // The trace: the page's table, then its export as JSON Lines.
  await tab("trace");
  seen.traceRows = await page.locator("#trace-table tbody tr").count();
  await page.fill("#trace-filter", "tools/call");
  seen.filteredRows = await page.locator("#trace-table tbody tr:not([hidden])").count();
  await shot("7-trace");
  const [download] = await Promise.all([page.waitForEvent("download"), page.click("#trace-export")]);
  const lines = readFileSync(await download.path(), "utf8").split("\n").filter(Boolean);
  seen.exported = lines.length;
  seen.exportedMethods = [...new Set(lines.map((l) => JSON.parse(l).method).filter(Boolean))].sort();
  }
} catch (e) {
  seen.error = String(e && e.stack ? e.stack : e);
  code = 1;
  await failed();
} finally {
  if (context) await context.close();
  rmSync(profile, { recursive: true, force: true });
}
process.stdout.write(`${JSON.stringify(seen)}\n`);
process.exit(code);
