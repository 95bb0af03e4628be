/**
 * deploy/monitoring/alerts.yaml against a real Prometheus (Debian's `prometheus`, which `npm test`
 * installs where it is missing) scraping a real boardline process (test/harness/live-boardline.ts:
 * `node dist/src/main.js` on a redis-server this file owns, GUESS_LIMIT 3 per 2 s). Prometheus runs
 * on a free loopback port from a temporary directory, scraping and evaluating every second, with a
 * copy of the rules whose `for:` durations are cut to a few seconds, so an alert goes through
 * pending and firing within the test: Redis killed → BoardlineRedisUnavailable pending, then firing;
 * Redis back → it resolves; wrong passphrases past the guessing limit → BoardlinePassphraseGuessing
 * fires. What the unit tests (alerts.test.yaml) cannot show: that the series and labels the rules
 * select are the ones a live instance exports, as Prometheus stores them.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT } from "../harness/build-dist.js";
import { GUESS_LIMIT, type LiveBoardline, startLiveBoardline } from "../harness/live-boardline.js";
import { type Prometheus, startPrometheus } from "../harness/prometheus.js";

/** What every `for:` becomes in the test copy: long enough to be seen pending at a 1 s evaluation. */
const SHORT_FOR = "3s";

interface Alert {
  readonly labels: Record<string, string>;
  readonly annotations: Record<string, string>;
  readonly state: "pending" | "firing";
}

let live: LiveBoardline;
let prometheus: Prometheus | undefined;
let prometheusUrl = "";

beforeAll(async () => {
  live = await startLiveBoardline();
  const rules = readFileSync(join(ROOT, "deploy/monitoring/alerts.yaml"), "utf8");
  const shortened = rules.replace(/^(\s*for:\s*)\S+$/gm, `$1${SHORT_FOR}`);
  // The copy differs from the shipped rules in their `for:` lines only, and in every one of them.
  const forLines = (text: string) => text.split("\n").filter((line) => /^\s*for:/.test(line));
  expect(forLines(rules).length).toBeGreaterThan(0);
  expect(forLines(shortened)).toEqual(forLines(rules).map((line) => line.replace(/\S+$/, SHORT_FOR)));
  expect(shortened.split("\n").length).toBe(rules.split("\n").length);
  prometheus = await startPrometheus({ targets: [`127.0.0.1:${live.process.metricsPort}`], rules: shortened });
  prometheusUrl = prometheus.url;
}, 60_000);

afterAll(async () => {
  await prometheus?.stop();
  await live?.stop();
});

const until = (what: string, ms: number, check: () => Promise<boolean>) =>
  (prometheus as Prometheus).until(what, ms, check);
const query = (expr: string) => (prometheus as Prometheus).query(expr);

/** The alerts named `name` that Prometheus has pending or firing now. */
async function alerts(name: string): Promise<Alert[]> {
  const body = (await (await fetch(`${prometheusUrl}/api/v1/alerts`)).json()) as { data: { alerts: Alert[] } };
  return body.data.alerts.filter((a) => a.labels.alertname === name);
}

const mute = (passphrase: string, token: string) =>
  fetch(`${live.url}/v1/channel/pstn/mute`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ uid: "pstn-1", passphrase, mute: true }),
  });

describe("the rules on a real Prometheus scraping a live boardline", () => {
  it("loaded every rule of the file, healthy", async () => {
    const body = (await (await fetch(`${prometheusUrl}/api/v1/rules`)).json()) as {
      data: { groups: { rules: { name: string; health: string; lastError?: string }[] }[] };
    };
    const loaded = body.data.groups.flatMap((g) => g.rules);
    expect(loaded.length).toBeGreaterThan(20);
    await until("every rule evaluated without error", 10_000, async () => {
      const now = (await (await fetch(`${prometheusUrl}/api/v1/rules`)).json()) as typeof body;
      return now.data.groups.flatMap((g) => g.rules).every((r) => r.health === "ok");
    });
    expect(await alerts("BoardlineRedisUnavailable")).toEqual([]);
  });

  it("Redis killed: BoardlineRedisUnavailable goes pending, then firing; Redis back: it resolves", async () => {
    const started = Date.now();
    live.redisDown();
    let restored = false;
    try {
      let seen: Alert[] = [];
      await until("BoardlineRedisUnavailable pending", 20_000, async () => {
        seen = await alerts("BoardlineRedisUnavailable");
        return seen.some((a) => a.state === "pending");
      });
      await until("BoardlineRedisUnavailable firing", 10_000, async () => {
        seen = await alerts("BoardlineRedisUnavailable");
        return seen.some((a) => a.state === "firing");
      });
      const firing = seen.find((a) => a.state === "firing");
      expect(firing?.labels).toMatchObject({
        job: "boardline",
        instance: `127.0.0.1:${live.process.metricsPort}`,
        severity: "page",
      });
      expect(firing?.annotations.runbook_url).toBe("docs/runbooks.md#boardlineredisunavailable");
      // Within the rule's 1 m rate window and its shortened `for`, with room for a slow machine.
      expect(Date.now() - started).toBeLessThan(30_000);

      await live.redisUp();
      restored = true;
    } finally {
      // A failure above must not leave the next test without Redis.
      if (!restored) await live.redisUp();
    }
    await until("BoardlineRedisUnavailable resolved", 20_000, async () => {
      return (await alerts("BoardlineRedisUnavailable")).length === 0;
    });
    expect(await query('boardline_ready{job="boardline"}')).toBe(1);
  }, 60_000);

  it("wrong passphrases past the guessing limit: BoardlinePassphraseGuessing fires", async () => {
    const token = await live.token({ subject: "guesser" });
    const statuses: number[] = [];
    // More refusals than the rule's 10 in 5 minutes, well within one GUESS_WINDOW_SECONDS window.
    for (let i = 0; i < GUESS_LIMIT + 15; i++) statuses.push((await mute("not-the-passphrase", token)).status);
    expect(statuses.slice(0, GUESS_LIMIT)).toEqual(Array(GUESS_LIMIT).fill(403));
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThan(10);
    let seen: Alert[] = [];
    await until("BoardlinePassphraseGuessing firing", 20_000, async () => {
      seen = await alerts("BoardlinePassphraseGuessing");
      return seen.some((a) => a.state === "firing");
    });
    expect(seen[0]?.labels).toMatchObject({ job: "boardline", severity: "ticket" });
    expect(seen[0]?.annotations.runbook_url).toBe("docs/runbooks.md#boardlinepassphraseguessing");
  }, 40_000);
});
