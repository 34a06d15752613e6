// Render math fragments with KaTeX, as GitHub/Jupyter/Typora/Obsidian would, failing on any error.
// stdin: JSON [{"tex": "...", "display": true, "where": "key.md:12"}, ...]
// stdout: JSON {"count": N, "errors": [{"where", "tex", "message"}]}; exit 1 when any fragment fails.
"use strict";
const katex = require("katex");

let input = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => { input += chunk; });
process.stdin.on("end", () => {
  const fragments = JSON.parse(input);
  const errors = [];
  for (const f of fragments) {
    try {
      katex.renderToString(f.tex, { displayMode: !!f.display, throwOnError: true, strict: "error" });
    } catch (e) {
      errors.push({ where: f.where, tex: f.tex, message: String(e.message || e) });
    }
  }
  process.stdout.write(JSON.stringify({ count: fragments.length, errors }) + "\n");
  process.exit(errors.length ? 1 : 0);
});
