/**
 * How many bytes per operation V8 promotes to the old generation when short-lived objects are made
 * the way Node's streams make them — the probe behind finding 13 of bench/RESULTS.md. Node 24.15
 * changed `WritableState`'s `onwrite` from `onwrite.bind(undefined, stream)` to an arrow function
 * made in the constructor; with V8's allocation-site pretenuring on, objects made like that are
 * kept until the next mark-compact, so every HTTP/2 stream (a Duplex) of a server is promoted.
 *
 *   node bench/gc-promotion.mjs [SECONDS]
 *
 * Runs each case in a child process of this Node with `--max-semi-space-size=8 --trace-gc-nvp`,
 * with and without `--no-allocation-site-pretenuring`, over a 40 MB live heap (a server's old
 * generation), 16 operations in flight, and prints per case: operations, promoted bytes per
 * operation, scavenges and mark-compacts. Cases:
 *   writable  a stream.Writable per operation: one write, end, dropped
 *   arrow     a constructor that stores `(er) => onwrite(owner, er)` (the 24.15 pattern)
 *   bind      the same with `onwrite.bind(undefined, owner)` (the pattern before)
 *   none      only the per-operation garbage (~0.5 KB), nothing kept
 */
import { spawnSync } from "node:child_process";
import { Writable } from "node:stream";
import { fileURLToPath } from "node:url";

const [first, ...rest] = process.argv.slice(2);

if (first === "child") await child(rest[0] ?? "none", Number(rest[1] ?? 3));
else parent(Number(first ?? 3));

function parent(seconds) {
  console.log(`Node ${process.version} (V8 ${process.versions.v8}), ${seconds} s per case`);
  for (const pretenuring of [true, false]) {
    const flags = ["--max-semi-space-size=8", "--trace-gc-nvp"];
    if (!pretenuring) flags.push("--no-allocation-site-pretenuring");
    console.log(
      pretenuring ? "\nV8 defaults (allocation-site pretenuring on):" : "\n--no-allocation-site-pretenuring:",
    );
    for (const mode of ["writable", "arrow", "bind", "none"]) {
      const r = spawnSync(
        process.execPath,
        [...flags, fileURLToPath(import.meta.url), "child", mode, String(seconds)],
        {
          encoding: "utf8",
          maxBuffer: 256 * 1024 * 1024,
        },
      );
      if (r.status !== 0) throw new Error(`${mode} failed: ${r.stderr}`);
      const ops = Number(/ops (\d+)/.exec(r.stderr)?.[1]);
      const measured = r.stdout.slice(r.stdout.indexOf("MEASURE"));
      let promoted = 0;
      let scavenges = 0;
      let markCompacts = 0;
      for (const line of measured.split("\n")) {
        const kind = /\bgc=(\w+)/.exec(line)?.[1];
        if (kind === "s") scavenges++;
        else if (kind === "mc") markCompacts++;
        promoted += Number(/\bpromoted=(\d+)/.exec(line)?.[1] ?? 0);
      }
      console.log(
        `  ${mode.padEnd(9)} ${String(ops).padStart(8)} ops  ${(promoted / ops).toFixed(0).padStart(5)} B promoted per op  ` +
          `${scavenges} scavenges, ${markCompacts} mark-compacts`,
      );
    }
  }
}

async function child(mode, seconds) {
  globalThis.liveHeap = Array.from({ length: 400_000 }, (_, i) => ({ i, s: `s${i}` }));
  const garbage = () => Array.from({ length: 20 }, (_, i) => ({ i, s: `x${i}`, b: [i, i + 1] }));
  const onwrite = (owner) => owner.n++;
  function StateArrow(owner) {
    this.n = 0;
    this.onwrite = (er) => onwrite(owner, er);
  }
  function StateBind(owner) {
    this.n = 0;
    this.onwrite = onwrite.bind(undefined, owner);
  }
  const turn = () => new Promise((resolve) => setImmediate(resolve));
  let ops = 0;
  let end = 0;
  const lane = async () => {
    while (Date.now() < end) {
      const owner = { g: garbage(), n: 0, state: undefined };
      if (mode === "writable") {
        const w = new Writable({ write: (_c, _e, cb) => setImmediate(cb) });
        w.owner = owner;
        w.end("x");
        await new Promise((resolve) => w.once("finish", resolve));
      } else {
        if (mode === "arrow") owner.state = new StateArrow(owner);
        if (mode === "bind") owner.state = new StateBind(owner);
        await turn();
        owner.state?.onwrite(null);
      }
      ops++;
    }
  };
  await new Promise((resolve) => setTimeout(resolve, 300));
  console.log("MEASURE");
  end = Date.now() + seconds * 1000;
  await Promise.all(Array.from({ length: 16 }, lane));
  console.error(`ops ${ops}`);
}
