/**
 * Reads V8 heap snapshots (.heapsnapshot, as bench/lib/gc-probe.cjs writes them) for
 * the memory benches: the self size and count of the live objects by kind —
 * objects and closures by constructor or function name, arrays and V8's hidden
 * objects by their label, strings, code and numbers each as one kind — and the
 * kinds that grew the most between two snapshots. What grows with the number of
 * tasks followed shows up at the top of such a diff.
 *
 *   node bench/lib/heap-summary.mjs A.heapsnapshot B.heapsnapshot [rows]   prints the diff B − A
 */
import { readFileSync } from "node:fs";

/** Node types that are one kind each, whatever their name (a string's name is its text). */
const ONE_KIND = new Set(["string", "concatenated string", "sliced string", "code", "number", "bigint", "symbol"]);

/**
 * Map of kind → { count, bytes } over every node of the snapshot in `file`.
 * @param {string} file
 * @returns {Map<string, { count: number, bytes: number }>}
 */
export function summarizeHeap(file) {
  const { snapshot, nodes, strings } = JSON.parse(readFileSync(file, "utf8"));
  const fields = snapshot.meta.node_fields;
  const types = snapshot.meta.node_types[0];
  const [typeAt, nameAt, sizeAt] = ["type", "name", "self_size"].map((f) => fields.indexOf(f));
  const kinds = new Map();
  for (let i = 0; i < nodes.length; i += fields.length) {
    const type = types[nodes[i + typeAt]];
    const kind = ONE_KIND.has(type) ? `(${type})` : `${type}: ${String(strings[nodes[i + nameAt]]).slice(0, 60)}`;
    const k = kinds.get(kind) ?? { count: 0, bytes: 0 };
    k.count += 1;
    k.bytes += nodes[i + sizeAt];
    kinds.set(kind, k);
  }
  return kinds;
}

/**
 * The `rows` kinds whose self size grew the most from `before` to `after` (summaries), largest first.
 * @param {Map<string, { count: number, bytes: number }>} before
 * @param {Map<string, { count: number, bytes: number }>} after
 */
export function heapGrowth(before, after, rows = 12) {
  const all = new Set([...before.keys(), ...after.keys()]);
  return [...all]
    .map((kind) => {
      const a = before.get(kind) ?? { count: 0, bytes: 0 };
      const b = after.get(kind) ?? { count: 0, bytes: 0 };
      return { kind, bytes: b.bytes - a.bytes, count: b.count - a.count, after: b };
    })
    .sort((x, y) => y.bytes - x.bytes)
    .slice(0, rows);
}

/**
 * The total self size of a summary, in bytes.
 * @param {Map<string, { count: number, bytes: number }>} summary
 */
export function heapBytes(summary) {
  let total = 0;
  for (const { bytes } of summary.values()) total += bytes;
  return total;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [a, b, rows = "20"] = process.argv.slice(2);
  if (!a || !b) {
    console.error("usage: node bench/lib/heap-summary.mjs A.heapsnapshot B.heapsnapshot [rows]");
    process.exit(2);
  }
  const [before, after] = [summarizeHeap(a), summarizeHeap(b)];
  console.log(`total: ${(heapBytes(before) / 1024).toFixed(0)} → ${(heapBytes(after) / 1024).toFixed(0)} KiB`);
  for (const r of heapGrowth(before, after, Number(rows))) {
    console.log(`${(r.bytes / 1024).toFixed(1).padStart(9)} KiB ${String(r.count).padStart(8)} × ${r.kind}`);
  }
}
