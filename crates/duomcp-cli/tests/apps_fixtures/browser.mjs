// Drives a real browser through an MCP App (run by crates/duomcp-cli/tests/apps_interop.rs):
//
//   DUOMCP_INTEROP_DIR=<dir with node_modules> node browser.mjs MCP_URL HOST_DIR CHROMIUM SCREENSHOT
//
// Serves HOST_DIR (host.html, host.js, sandbox.html) on 127.0.0.1, proxies /mcp to MCP_URL
// (so the host page talks to the server from its own origin), loads the host page in headless
// Chromium (playwright-core), with the sandbox proxy on another origin (localhost), waits for
// the view to show the tool result, clicks its button, waits for the app-only tool's answer,
// saves a screenshot, and prints what it saw as one JSON line. Exits 1 on any failure.
import { createServer, request } from "node:http";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const kit = createRequire(join(resolve(process.env.DUOMCP_INTEROP_DIR ?? ""), "package.json"));
const { chromium } = kit("playwright-core");

const [mcpUrl, hostDir, executablePath, screenshot] = process.argv.slice(2);
const mcp = new URL(mcpUrl);
const TYPES = { ".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8" };
const seen = { console: [], mcpRequests: 0 };

const server = createServer((req, res) => {
  const url = new URL(req.url, "http://x");
  if (url.pathname === "/mcp") {
    seen.mcpRequests += 1;
    const headers = { ...req.headers };
    delete headers.host;
    const up = request(
      { hostname: mcp.hostname, port: mcp.port, path: mcp.pathname, method: req.method, headers },
      (upRes) => {
        res.writeHead(upRes.statusCode, upRes.headers);
        upRes.pipe(res);
      },
    );
    up.on("error", (e) => {
      res.writeHead(502);
      res.end(String(e));
    });
    req.pipe(up);
    return;
  }
  const name = url.pathname.slice(1);
  if (!["host.html", "host.js", "sandbox.html"].includes(name)) {
    res.writeHead(404);
    res.end();
    return;
  }
  res.writeHead(200, { "content-type": TYPES[name.slice(name.lastIndexOf("."))] });
  res.end(readFileSync(join(hostDir, name)));
});
await new Promise((r) => server.listen(0, "127.0.0.1", r));
const port = server.address().port;

const profile = mkdtempSync(join(tmpdir(), "duomcp-chromium-"));
let context;
let code = 0;
try {
  context = await chromium.launchPersistentContext(profile, {
    executablePath,
    headless: true,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
    viewport: { width: 640, height: 480 },
    timeout: 60_000,
  });
  const page = context.pages()[0] ?? (await context.newPage());
  page.on("console", (m) => seen.console.push(`${m.type()}: ${m.text()}`));
  page.on("pageerror", (e) => seen.console.push(`pageerror: ${e}`));
  const sandbox = `http://localhost:${port}/sandbox.html`;
  await page.goto(`http://127.0.0.1:${port}/host.html?sandbox=${encodeURIComponent(sandbox)}`);
  const status = page.locator("#status");
  await page.waitForFunction(
    () => /tool result sent|error/.test(document.getElementById("status").textContent),
    null,
    { timeout: 30_000 },
  );
  const hostStatus = await status.textContent();
  if (!hostStatus.includes("tool result sent")) throw new Error(`host: ${hostStatus}`);
  const view = page.frameLocator("#sandbox").frameLocator("#view");
  const count = view.locator("#count");
  const said = view.locator("#said");
  await view.locator("#increment:enabled").waitFor({ timeout: 15_000 });
  const initial = { count: await count.textContent(), said: await said.textContent() };
  await view.locator("#increment").click();
  await view.locator("#said", { hasText: "Incremented" }).waitFor({ timeout: 15_000 });
  const after = { count: await count.textContent(), said: await said.textContent() };
  await page.screenshot({ path: screenshot });
  const report = {
    initial,
    after,
    modelTools: await page.locator("#model-tools").textContent(),
    viewMeta: await page.evaluate(() => window.__viewMeta),
    sandboxOrigin: await page
      .frameLocator("#sandbox")
      .locator("body")
      .evaluate(() => location.origin),
    hostOrigin: await page.evaluate(() => location.origin),
    mcpRequests: seen.mcpRequests,
    browser: context.browser()?.version() ?? "chromium",
  };
  console.log(JSON.stringify(report));
} catch (e) {
  console.error(`browser.mjs failed: ${e?.stack ?? e}\nconsole:\n${seen.console.join("\n")}`);
  code = 1;
} finally {
  await context?.close().catch(() => {});
  server.close();
  rmSync(profile, { recursive: true, force: true });
}
process.exit(code);
