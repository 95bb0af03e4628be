/**
 * Errors of the listening socket after start (src/server/http/listener.ts) are
 * not swallowed: a process that runs out of file descriptors (a low
 * `ulimit -n`) logs the failed accepts at most once a second, counts them in
 * /metrics by code, and serves on once descriptors are free again.
 */
import net from "node:net";
import { afterAll, expect, test } from "vitest";
import { type MainProcess, startMainProcess } from "../../harness/main-process.js";
import { sleep } from "../../harness/sleep.js";

let main: MainProcess | undefined;
afterAll(() => {
  main?.proc.kill("SIGKILL");
});

/** Opens `n` idle connections (they send nothing); resolves once each is connected or refused. */
async function hog(port: number, n: number): Promise<net.Socket[]> {
  return Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<net.Socket>((resolve) => {
          const socket = net.connect({ host: "127.0.0.1", port });
          socket.on("error", () => resolve(socket));
          socket.once("connect", () => resolve(socket));
        }),
    ),
  );
}

test("accepts that fail for want of file descriptors are logged (rate-limited) and counted, and the port serves on", async () => {
  main = await startMainProcess({ LOG_LEVEL: "info" }, { maxOpenFiles: 64 });
  const sockets = await hog(main.port, 150);
  await sleep(2_500); // the server keeps trying to accept while the descriptors are gone
  for (const s of sockets) s.destroy();
  await sleep(300);

  const lines = main
    .output()
    .split("\n")
    .filter((l) => l.includes("the listener is failing"));
  expect(lines.length).toBeGreaterThan(0);
  expect(lines.length).toBeLessThanOrEqual(4); // about 2.5 s of failures: at most one line a second
  expect(JSON.parse(lines[0] as string)).toMatchObject({ level: 40, code: "EMFILE" }); // pino: 40 is warn;

  const metrics = await (await fetch(`${main.metricsUrl}/metrics`)).text();
  const count = /^boardline_listener_errors_total\{code="EMFILE"\} (\d+)$/m.exec(metrics);
  expect(Number(count?.[1] ?? 0)).toBeGreaterThan(0);
  expect((await fetch(`${main.url}/healthz`)).status).toBe(200);
}, 30_000);
