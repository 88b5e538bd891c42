// The counter's view: shows the result of `show_counter`, and calls the app-only tool
// `increment_counter` when the button is clicked. Built with the official App SDK
// (@modelcontextprotocol/ext-apps, pinned in interop/package-lock.json): interop/build-view.mjs
// bundles this file with the SDK's browser build into view.js, which the server inlines.
import { App } from "@modelcontextprotocol/ext-apps/app-with-deps";

const count = document.getElementById("count");
const said = document.getElementById("said");
const button = document.getElementById("increment");

/** Shows a tool result: its structured `count` and its text. */
function show(result) {
  const value = result.structuredContent?.count;
  if (typeof value === "number") count.textContent = String(value);
  const text = result.content?.find((c) => c.type === "text")?.text;
  said.textContent = text ?? "(no text)";
}

const app = new App({ name: "duomcp counter view", version: "1.0.0" });
app.ontoolresult = (result) => {
  show(result);
  button.disabled = false;
};
button.addEventListener("click", async () => {
  button.disabled = true;
  try {
    show(await app.callServerTool({ name: "increment_counter", arguments: {} }));
  } catch (e) {
    said.textContent = `increment failed: ${e}`;
  } finally {
    button.disabled = false;
  }
});
await app.connect();
