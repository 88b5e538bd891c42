// Builds the MCP Apps pieces of the interop tests with the pinned esbuild (run by
// scripts/interop.sh from the installed kit):
//
//   node build-apps.mjs REPO_ROOT OUT_DIR
//
// (The counter example's view, crates/duomcp/examples/mcp_app/view/index.html, needs no build:
// it speaks the Apps protocol itself and the example has it built in.)
//
// * OUT_DIR/apps-host/: the minimal web host of the browser test
//   (crates/duomcp-cli/tests/apps_fixtures/): host.html, sandbox.html, and host.js, bundled
//   from host.src.js with the SDK's host bridge (@modelcontextprotocol/ext-apps/app-bridge)
//   and the MCP client SDK.
// * OUT_DIR/inspect-bridge.js: the App SDK's host bridge for `duomcp inspect`'s page, bundled
//   from crates/duomcp-cli/src/inspect/page/bridge.src.js. Its copy checked in beside it
//   (bridge.js, compiled into the binary) must be these bytes: scripts/interop.sh compares
//   them, and tests/inspect_fixtures/inspect.rs too. After changing the source or the pinned
//   packages, copy OUT_DIR/inspect-bridge.js over page/bridge.js.
import { build } from "esbuild";
import { copyFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";

const [root, out] = process.argv.slice(2);
if (!root || !out) {
  console.error("usage: node build-apps.mjs REPO_ROOT OUT_DIR");
  process.exit(2);
}
const here = new URL(".", import.meta.url).pathname;

async function bundle(entry, outfile, format = "esm") {
  await build({
    entryPoints: [entry],
    outfile,
    bundle: true,
    format,
    platform: "browser",
    target: "es2022",
    minify: true,
    logLevel: "warning",
    // Resolve the SDK from the kit this script was installed with.
    nodePaths: [join(here, "node_modules")],
  });
}

const host = join(root, "crates/duomcp-cli/tests/apps_fixtures");
const hostOut = join(out, "apps-host");
mkdirSync(hostOut, { recursive: true });
for (const f of ["host.html", "sandbox.html"]) copyFileSync(join(host, f), join(hostOut, f));
await bundle(join(host, "host.src.js"), join(hostOut, "host.js"));
console.error(`build-apps: ${hostOut}`);
// A classic script (app.js reads window.DuomcpAppBridge), so the page needs no module loading.
const bridge = join(out, "inspect-bridge.js");
await bundle(join(root, "crates/duomcp-cli/src/inspect/page/bridge.src.js"), bridge, "iife");
console.error(`build-apps: ${bridge}`);
