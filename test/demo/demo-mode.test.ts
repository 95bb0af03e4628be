/**
 * Demo mode as a newcomer meets it: `node dist/src/main.js` with no
 * configuration prints a banner with ready-to-paste commands; pasting them
 * works; SIGTERM stops it cleanly. Also: production refuses to start without
 * Redis or JWT keys, with one line naming the variable.
 */
import type { ChildProcess } from "node:child_process";
import { once } from "node:events";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { ensureBuilt, ROOT } from "../harness/build-dist.js";
import { eventually } from "../harness/eventually.js";
import { ROUTES, RPC_PATHS } from "../harness/routes.js";
import { spawnTied } from "../harness/tied-spawn.js";
import { cleanEnv, exportedVariables, MAIN, paste, printedCommands, startDemo } from "./demo-process.js";

/** Netless task uuids are 32 hex digits (dashes tolerated). */
const UUID = /^(?:[0-9a-f]-?){31}[0-9a-f]$/i;

/** Pastes the printed fileconvert curl: the task it answers (queued, or the same document's, reused). */
async function convertedTask(convertCurl: string): Promise<string> {
  const [body, status] = (await paste(`${convertCurl} -w '\\n%{http_code}'`)).split("\n");
  expect(status).toBe("200");
  return (JSON.parse(body ?? "") as { task_uuid: string }).task_uuid;
}

beforeAll(async () => {
  await ensureBuilt();
}, 120_000);

describe("demo mode", () => {
  let proc: ChildProcess;
  let banner = "";
  let url = "";

  beforeAll(async () => {
    ({ proc, banner, url } = await startDemo());
  }, 30_000);

  afterAll(() => {
    if (proc.exitCode === null) proc.kill("SIGKILL");
  });

  test("PORT=0: the banner names the port actually bound", async () => {
    const port = Number(new URL(url).port);
    expect(port).toBeGreaterThan(0);
    expect(port).not.toBe(8080);
    const res = await fetch(`${url}/healthz`);
    expect(res.status).toBe(200);
  });

  test("/metrics is served on PORT, beside the API: the demo has no port of its own for it", async () => {
    const res = await fetch(`${url}/metrics`);
    expect(res.status).toBe(200);
    expect(await res.text()).toContain("boardline_calls_total");
  });

  test("the printed API reference URL serves the page", async () => {
    const docs = /API reference: (\S+)/.exec(banner)?.[1];
    expect(docs).toBe(`${url}/docs`);
    const res = await fetch(docs ?? "");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/html/);
  });

  test("the printed mute curl answers 200 with the documented body", async () => {
    const [muteCurl] = printedCommands(banner, "curl ").filter((c) => c.includes(ROUTES.mute));
    expect(muteCurl).toBeDefined();
    const out = await paste(`${muteCurl} -w '\\n%{http_code}'`);
    const [body, status] = out.split("\n");
    expect(status).toBe("200");
    expect(JSON.parse(body ?? "")).toEqual({ uid: "pstn-1001", mute: true });
  });

  test("the printed fileconvert curl answers 200 with a queued task", async () => {
    const [convertCurl] = printedCommands(banner, "curl ").filter((c) => c.includes(ROUTES.convert));
    expect(convertCurl).toBeDefined();
    const out = await paste(`${convertCurl} -w '\\n%{http_code}'`);
    const [body, status] = out.split("\n");
    expect(status).toBe("200");
    const parsed = JSON.parse(body ?? "") as { task_uuid: string; status: string };
    expect(parsed).toEqual({
      task_uuid: expect.stringMatching(UUID),
      status: "Queued",
      reused: false,
      queue_position: 1,
    });
  });

  test("the printed fileconvert curl again: the same document's task, reused, not converted twice", async () => {
    const [convertCurl] = printedCommands(banner, "curl ").filter((c) => c.includes(ROUTES.convert));
    const first = await convertedTask(convertCurl ?? "");
    const out = await paste(`${convertCurl} -w '\\n%{http_code}'`);
    const [body, status] = out.split("\n");
    expect(status).toBe("200");
    expect(JSON.parse(body ?? "")).toMatchObject({ task_uuid: first, reused: true });
  });

  test("the printed watch commands (SSE curl and buf curl) show a conversion reach Finished", async () => {
    const [convertCurl] = printedCommands(banner, "curl ").filter((c) => c.includes(ROUTES.convert));
    const [watchCurl] = printedCommands(banner, "curl ").filter((c) => c.includes("/watch"));
    const [watchBuf] = printedCommands(banner, "npx buf curl ").filter((c) => c.includes("WatchConversion"));
    expect(watchCurl).toBeDefined();
    expect(watchBuf).toBeDefined();
    const task = () => convertedTask(convertCurl ?? "");
    const events = (await paste((watchCurl ?? "").replace("TASK", await task())))
      .split("\n")
      .filter((l) => l.startsWith("data: "))
      .map((l) => (JSON.parse(l.slice(6)) as { status: string }).status);
    expect(events.at(-1)).toBe("Finished");
    const streamed = await paste((watchBuf ?? "").replace("TASK", await task()));
    expect(streamed).toContain('"status": "Finished"');
  }, 30_000);

  test("the printed mute watches (buf curl and SSE curl, with a pstn.gateway token) show a mute arriving", async () => {
    const [muteCurl] = printedCommands(banner, "curl ").filter((c) => c.includes(ROUTES.mute));
    const [watchBuf] = printedCommands(banner, "npx buf curl ").filter((c) => c.includes("WatchPstnEvents"));
    const [watchSse] = printedCommands(banner, "curl ").filter((c) => c.includes("/v1/channel/pstn/events:watch"));
    expect(watchBuf).toBeDefined();
    expect(watchSse).toBeDefined();
    const watches: Array<[string, RegExp]> = [
      [watchBuf ?? "", /"uid": "pstn-1001",\s+"mute": true/],
      [watchSse ?? "", /^id: \d+-\d+\ndata: \{"event_id":"\d+-\d+".*"uid":"pstn-1001","mute":true/m],
    ];
    for (const [watch, arrived] of watches) {
      const child = spawnTied("bash", ["-c", watch], {
        cwd: ROOT,
        detached: true,
        stdio: ["ignore", "pipe", "ignore"],
      });
      let out = "";
      child.stdout?.setEncoding("utf8").on("data", (d: string) => (out += d));
      try {
        // The watch starts with events from now on: mute until one arrives (the first may come before it is open).
        await eventually(
          async () => {
            await paste(muteCurl ?? "");
            return arrived.test(out);
          },
          20_000,
          "a mute to arrive on the printed watch",
        );
      } finally {
        if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL");
      }
    }
  }, 60_000);

  test("the printed buf curl (gRPC with reflection) unmutes", async () => {
    const [bufCurl] = printedCommands(banner, "npx buf curl ").filter((c) => c.includes(RPC_PATHS.mute));
    expect(bufCurl).toBeDefined();
    const reply = JSON.parse(await paste(bufCurl ?? "")) as { uid?: string; mute?: boolean };
    expect(reply.uid).toBe("pstn-1001");
    // `mute` has explicit presence in MuteResponse, so protojson shows false too.
    expect(reply.mute).toBe(false);
  });

  test("simulated telephone callers are on the demo channel, and the banner points at the panel", async () => {
    expect(banner).toContain("examples/browser/panel.html");
    const { BOARDLINE_GATEWAY_TOKEN: token = "", BOARDLINE_CHANNEL: channel } = exportedVariables(banner);
    const onLine = async () => {
      const res = await fetch(`${url}/v1/channel/pstn/state`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify({ channel_id: channel }),
      });
      const state = (await res.json()) as { participants: { on_line?: boolean; caller_id?: string }[] };
      return state.participants.filter((p) => p.on_line === true);
    };
    await eventually(async () => (await onLine()).length > 0, 10_000, "callers on the line");
    for (const p of await onLine()) expect(p.caller_id).toMatch(/^\*\*\*\d{4}$/);
  }, 20_000);

  test("SIGTERM: exit code 0 within a few seconds", async () => {
    const exited = once(proc, "exit");
    proc.kill("SIGTERM");
    const timeout = new Promise<never>((_, reject) => setTimeout(() => reject(new Error("no exit within 5 s")), 5000));
    const [code, signal] = (await Promise.race([exited, timeout])) as [number | null, string | null];
    expect({ code, signal }).toEqual({ code: 0, signal: null });
  });
});

describe("invalid configuration stops start-up with one line naming the variable", () => {
  async function start(env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
    const child = spawnTied(process.execPath, [MAIN], {
      cwd: ROOT,
      env: cleanEnv(env),
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
    const [code] = (await once(child, "close")) as [number | null];
    clearTimeout(timer);
    return { code, stdout, stderr };
  }

  test.each([
    ["NODE_ENV=production without REDIS_URL", { NODE_ENV: "production" }, "REDIS_URL"],
    [
      "NODE_ENV=production with REDIS_URL but no JWT keys",
      { NODE_ENV: "production", REDIS_URL: "redis://127.0.0.1:1" },
      "JWT_SECRET",
    ],
    [
      "REDIS_SENTINELS but no JWT keys (not demo mode: no seed in a real Redis)",
      { REDIS_SENTINELS: "127.0.0.1:1", REDIS_SENTINEL_NAME: "mymaster" },
      "JWT_SECRET",
    ],
    ["PORT=abc", { PORT: "abc" }, "PORT"],
  ])("%s", async (_name, env, variable) => {
    const r = await start(env);
    expect(r.code).not.toBe(0);
    expect(r.code).not.toBeNull();
    expect(r.stdout).toBe("");
    const lines = r.stderr.trimEnd().split("\n");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(variable);
    expect(lines[0]).toMatch(/^boardline: invalid configuration: /);
  });
});
