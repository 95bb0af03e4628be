/** A process a test starts dies with the worker that started it, even one killed outright. */
import { spawn } from "node:child_process";
import { expect, test } from "vitest";
import { eventually } from "./eventually.js";

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

test("a child of spawnTied is killed when its parent is SIGKILLed", async () => {
  // A stand-in for a vitest worker: it starts a long sleep through spawnTied, prints its pid, and waits.
  const worker = spawn(
    process.execPath,
    [
      "--experimental-strip-types",
      "--input-type=module",
      "-e",
      `const { spawnTied } = await import(${JSON.stringify(new URL("./tied-spawn.ts", import.meta.url).href)});
       const child = spawnTied("sleep", ["60"], { stdio: "ignore" });
       console.log(child.pid);
       setInterval(() => {}, 1000);`,
    ],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  const pid = await new Promise<number>((resolve) => worker.stdout.once("data", (d) => resolve(Number(String(d)))));
  expect(alive(pid)).toBe(true);
  worker.kill("SIGKILL"); // no exit handler runs
  await eventually(() => !alive(pid), 3000, "the tied child to die with its parent");
});
