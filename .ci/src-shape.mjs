// The shape of src/ that docs/architecture.md promises: no file over 300 lines, no function
// over 80 lines, no import cycle (type-only imports count: they still tie the files together).
// Prints each finding and exits 1 when there is any. Uses the project's own TypeScript parser.
import fs from "node:fs";
import path from "node:path";
import ts from "typescript";

const MAX_FILE_LINES = 300;
const MAX_FUNCTION_LINES = 80;

const files = fs
  .readdirSync("src", { recursive: true, withFileTypes: true })
  .filter((e) => e.isFile() && e.name.endsWith(".ts"))
  .map((e) => path.join(e.parentPath, e.name));
const findings = [];
const imports = new Map();
for (const file of files) {
  const text = fs.readFileSync(file, "utf8");
  const lines = text.split("\n").length;
  if (lines > MAX_FILE_LINES) findings.push(`${file}: ${lines} lines (at most ${MAX_FILE_LINES})`);
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const line = (pos) => source.getLineAndCharacterOfPosition(pos).line;
  const deps = new Set();
  const visit = (node) => {
    const spec = (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier;
    if (spec && ts.isStringLiteral(spec) && spec.text.startsWith(".")) {
      deps.add(path.join(path.dirname(file), spec.text.replace(/\.js$/, ".ts")));
    }
    if (ts.isFunctionLike(node) && "body" in node && node.body !== undefined) {
      const n = line(node.getEnd()) - line(node.getStart()) + 1;
      if (n > MAX_FUNCTION_LINES) findings.push(`${file}:${line(node.getStart()) + 1}: a function of ${n} lines`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  imports.set(file, deps);
}
// Cycles: a depth-first search that reports each back edge's loop once.
const state = new Map(); // file → "open" | "done"
const stack = [];
const walk = (file) => {
  state.set(file, "open");
  stack.push(file);
  for (const dep of imports.get(file) ?? []) {
    if (!imports.has(dep)) continue;
    if (state.get(dep) === "open") findings.push(`import cycle: ${[...stack.slice(stack.indexOf(dep)), dep].join(" → ")}`);
    else if (!state.has(dep)) walk(dep);
  }
  stack.pop();
  state.set(file, "done");
};
for (const file of imports.keys()) if (!state.has(file)) walk(file);

for (const f of findings) console.log(f);
console.log(`src/: ${files.length} files, ${findings.length} findings`);
process.exit(findings.length === 0 ? 0 : 1);
