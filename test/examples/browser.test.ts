/**
 * examples/browser in Debian's Chromium (playwright-core), over Connect and
 * over gRPC-Web: the client is generated from proto/ (`buf generate` with
 * protoc-gen-es, into a copy under test-output/: browser-bundle.ts), type-checked, bundled
 * with esbuild and served from another origin than boardline's, which allows
 * that origin (CORS_ORIGINS). The checks are what a person sees: the mute
 * state shown, the converted pages as loaded images, and a readable line for
 * each of UNAUTHENTICATED, PERMISSION_DENIED, RESOURCE_EXHAUSTED (waited out)
 * and UNAVAILABLE (retried with back-off). Screenshots go to
 * test-output/browser/ (git-ignored; a CI artifact).
 *
 * The simulator serves its pages' images itself (`serveFiles`, as in the
 * demo), so Chromium loads and decodes real PNGs from the URLs boardline answered.
 *
 * It needs /usr/bin/chromium (or CHROMIUM_PATH): `apt-get install chromium`;
 * `npm test` installs it (.ci/system-packages.sh). Without it the tests fail, saying so.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import type http from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type BrowserContext, chromium, type Page, type Request } from "playwright-core";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { GUESS_LIMIT, type LiveBoardline, startLiveBoardline } from "../harness/live-boardline.js";
import { generateAndBundle, serveExample } from "./browser-bundle.js";

const CHROMIUM = process.env.CHROMIUM_PATH || "/usr/bin/chromium";
const OUTPUT = "test-output/browser";
const ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run"];
const TRANSPORTS = ["connect", "grpc-web"] as const;
type TransportName = (typeof TRANSPORTS)[number];

const missing = existsSync(CHROMIUM)
  ? undefined
  : `no chromium at ${CHROMIUM}: apt-get install chromium (npm test installs it as root), or set CHROMIUM_PATH`;

/** How far short of a wait of seconds the page kept Chromium's request timings may read on a busy machine. */
const TIMING_SLACK_MS = 100;

let live: LiveBoardline;
let site: http.Server;
let siteOrigin: string;
let profile: string;
let browser: BrowserContext;
/** What generating, type-checking and bundling took (ms), printed once. */
const timings: Record<string, number> = {};

beforeAll(async () => {
  if (missing !== undefined) return;
  let bundle: Uint8Array | undefined;
  ({ server: site, origin: siteOrigin } = await serveExample("index.html", "/main.js", () => bundle));
  profile = mkdtempSync(join(tmpdir(), "boardline-chromium-"));
  [bundle, live, browser] = await Promise.all([
    generateAndBundle("main.ts", timings),
    // The simulator's task (200 ms a step) ends 800 ms after it starts; the first poll at 600 ms, then every
    // 300 ms, passes Finished on about a second after the start, and a cut right after the watch's first
    // message (Waiting) falls well before it.
    startLiveBoardline({
      corsOrigins: siteOrigin,
      env: { CONVERSION_POLL_FIRST_MS: "600", CONVERSION_POLL_MAX_MS: "300" },
    }),
    chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: ARGS,
      viewport: { width: 1100, height: 900 },
    }),
  ]);
  console.log(`browser example: ${JSON.stringify(timings)} (ms)`);
}, 90_000);

afterAll(async () => {
  await browser?.close();
  if (profile !== undefined) rmSync(profile, { recursive: true, force: true });
  await live?.stop();
  site?.close();
});

/** One mute the page sent: when, and when its answer came (the browser's own timing once it finished). */
interface MuteCall {
  at: number;
  answeredAt?: number;
}

interface Opened {
  readonly page: Page;
  /** The page's Mute calls: when each left and when its answer was in (ms since the epoch). */
  readonly mutes: MuteCall[];
  readonly pageErrors: string[];
  /** Resolves with `ok` or `failed` once the page has run its steps. */
  readonly done: () => Promise<string>;
}

/** Opens the page with the BOARDLINE_* values in its query string, as its form would. */
async function openPage(transport: TransportName, values: Record<string, string>): Promise<Opened> {
  if (missing !== undefined) throw new Error(missing);
  const page = await browser.newPage();
  const mutes: MuteCall[] = [];
  const calls = new WeakMap<object, MuteCall>();
  const pageErrors: string[] = [];
  page.on("pageerror", (e) => pageErrors.push(e.message));
  page.on("request", (r) => {
    if (r.method() !== "POST" || r.url() !== `${live.url}/channel.v1.PstnService/Mute`) return;
    const call: MuteCall = { at: Date.now() };
    mutes.push(call);
    calls.set(r, call);
  });
  // The browser's own clock for both ends of a call: this process hears of a finished request late on a busy
  // machine, which would shorten the gap between an answer and the next attempt.
  const answered = (r: Request) => {
    const call = calls.get(r);
    if (call === undefined) return;
    const timing = r.timing();
    if (timing.startTime > 0) call.at = timing.startTime;
    call.answeredAt =
      timing.startTime > 0 && timing.responseEnd >= 0 ? timing.startTime + timing.responseEnd : Date.now();
  };
  page.on("requestfinished", answered);
  page.on("requestfailed", answered);
  const query = new URLSearchParams({ BOARDLINE_URL: live.url, transport, ...values });
  await page.goto(`${siteOrigin}/?${query}`);
  const done = async () => {
    await page.waitForSelector("body[data-done]", { timeout: 30_000 });
    return (await page.getAttribute("body", "data-done")) ?? "";
  };
  return { page, mutes, pageErrors, done };
}

const logLines = (page: Page, step: string, outcome: string) =>
  page.locator(`#log li[data-step="${step}"][data-outcome="${outcome}"]`).allTextContents();

/** A caller of its own (the guess limit counts per token subject). */
const callerToken = (subject: string, expSeconds?: number) =>
  live.token({ subject: `${subject}-${Date.now()}`, ...(expSeconds === undefined ? {} : { expSeconds }) });

describe.each(TRANSPORTS)("the browser example over %s", (transport) => {
  test("mutes, shows the mute state, and the converted pages as images; a watch cut off is reopened", async () => {
    const uid = `pstn-browser-${transport}`;
    const { page, pageErrors, done } = await openPage(transport, {
      BOARDLINE_TOKEN: live.tokens.user,
      BOARDLINE_HOST_PASSPHRASE: live.hostPassphrase,
      uid,
      // A document of its own: the other transport's run converted one, and the same again would be that task, ended.
      resource_url: `https://example.com/deck-${transport}-${Date.now()}.pdf`,
    });
    expect(
      await page.locator('#log li[data-step="convert"][data-outcome="ok"]').first().textContent({ timeout: 15_000 }),
    ).toMatch(/^convert: task [0-9a-f]{32} Queued$/);
    await page.waitForSelector('#log li[data-step="watch"][data-outcome="ok"]', { timeout: 15_000 });
    live.cutConnections();
    expect(await done()).toBe("ok");
    const [reopened] = await logLines(page, "watch", "retrying");
    expect(reopened).toMatch(/^watch: UNAVAILABLE: unavailable \(the connection failed: .*\); trying again in \d+ ms$/);
    expect(await page.getAttribute("#mute-state", "data-muted")).toBe("true");
    expect(await page.textContent("#mute-state")).toBe(`${uid} in ${live.channel}: muted`);
    // What a person sees: every page image loaded and decoded.
    const images = page.locator("#pages img");
    await expect
      .poll(
        () => images.evaluateAll((all) => all.map((i) => (i as unknown as { naturalWidth: number }).naturalWidth)),
        { timeout: 5_000 },
      )
      .toEqual([1280, 1280, 1280]);
    expect(await images.evaluateAll((all) => all.map((i) => (i as unknown as { alt: string }).alt))).toEqual([
      "page 1",
      "page 2",
      "page 3",
    ]);
    expect(await logLines(page, "watch", "ok")).toContain("watch: Finished with 3 page(s)");
    mkdirSync(OUTPUT, { recursive: true });
    await page.screenshot({ path: join(OUTPUT, `${transport}.png`), fullPage: true });
    expect(pageErrors).toEqual([]);
    // The mute reached boardline: the gateway reads it by channel id.
    const state = await fetch(`${live.url}/v1/channel/pstn/state`, {
      method: "POST",
      headers: { authorization: `Bearer ${live.tokens.gateway}`, "content-type": "application/json" },
      body: JSON.stringify({ channel_id: live.channel }),
    });
    const participants = ((await state.json()) as { participants: { uid: string; mute: boolean }[] }).participants;
    expect(participants.find((p) => p.uid === uid)?.mute).toBe(true);
    await page.close();
  }, 40_000);

  test("UNAUTHENTICATED (an expired token): says to get a fresh token, and does not retry", async () => {
    const token = await callerToken("expired", -60);
    const { page, mutes, done } = await openPage(transport, {
      BOARDLINE_TOKEN: token,
      BOARDLINE_HOST_PASSPHRASE: live.hostPassphrase,
    });
    expect(await done()).toBe("failed");
    const [line] = await logLines(page, "mute", "failed");
    expect(line).toMatch(/^mute: UNAUTHENTICATED: .*get a fresh token$/);
    expect(mutes).toHaveLength(1);
    await page.close();
  }, 30_000);

  test("PERMISSION_DENIED (the attendee passphrase mutes): says so, and does not retry", async () => {
    const { page, mutes, done } = await openPage(transport, {
      BOARDLINE_TOKEN: await callerToken("attendee"),
      BOARDLINE_HOST_PASSPHRASE: live.attendeePassphrase,
    });
    expect(await done()).toBe("failed");
    const [line] = await logLines(page, "mute", "failed");
    expect(line).toMatch(/^mute: PERMISSION_DENIED: not allowed .*check the passphrase/);
    expect(mutes).toHaveLength(1);
    await page.close();
  }, 30_000);

  test("RESOURCE_EXHAUSTED (too many wrong passphrases): waits retry_after_seconds, then mutes", async () => {
    const token = await callerToken("guesser");
    for (let i = 0; i < GUESS_LIMIT; i++) {
      const wrong = await fetch(`${live.url}/v1/channel/pstn/mute`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify({ uid: "pstn-1", passphrase: "wrong-passphrase", mute: true }),
      });
      expect(wrong.status).toBe(403);
    }
    const { page, mutes, done } = await openPage(transport, {
      BOARDLINE_TOKEN: token,
      BOARDLINE_HOST_PASSPHRASE: live.hostPassphrase,
    });
    expect(await done()).toBe("ok");
    // Redis's TTL rounds to the nearest second, so a retry may come a little early and wait once more.
    const waits = (await logLines(page, "mute", "retrying")).map((line) => {
      expect(line).toMatch(
        /^mute: RESOURCE_EXHAUSTED: too many wrong passphrases.*; waiting \d+ s \(retry_after_seconds\)/,
      );
      return Number(/waiting (\d+) s/.exec(line)?.[1]);
    });
    expect(waits.length).toBeGreaterThanOrEqual(1);
    expect(mutes).toHaveLength(waits.length + 1);
    for (const [i, seconds] of waits.entries()) {
      expect(seconds).toBeGreaterThanOrEqual(1);
      const waited = (mutes[i + 1]?.at ?? 0) - (mutes[i]?.answeredAt ?? Number.POSITIVE_INFINITY);
      // Chromium's request timings mix a wall-clock start with monotonic offsets, so on a busy machine a gap
      // between two requests may read tens of milliseconds short of the wait the page kept.
      expect(waited).toBeGreaterThanOrEqual(seconds * 1000 - TIMING_SLACK_MS);
      expect(waited).toBeLessThan(seconds * 1000 + 1000);
    }
    expect(await page.getAttribute("#mute-state", "data-muted")).toBe("true");
    await page.close();
  }, 40_000);

  test("UNAVAILABLE (Redis down for a second): retries with back-off, then mutes", async () => {
    live.redisDown();
    let opened: Opened | undefined;
    try {
      opened = await openPage(transport, {
        BOARDLINE_TOKEN: await callerToken("patient"),
        BOARDLINE_HOST_PASSPHRASE: live.hostPassphrase,
      });
      await opened.page.waitForSelector('#log li[data-step="mute"][data-outcome="retrying"]', { timeout: 10_000 });
      await new Promise((r) => setTimeout(r, 1000));
    } finally {
      await live.redisUp();
    }
    const { page, mutes, done } = opened;
    expect(await done()).toBe("ok");
    const retries = await logLines(page, "mute", "retrying");
    expect(retries[0]).toMatch(/^mute: UNAVAILABLE: unavailable .*; trying again in \d+ ms$/);
    expect(mutes.length).toBe(retries.length + 1);
    expect(mutes.length).toBeGreaterThanOrEqual(3);
    // Back-off: each stated wait longer than the one before (100 ms doubling, ±20 % jitter), and kept.
    const waits = retries.map((line) => Number(/trying again in (\d+) ms$/.exec(line)?.[1]));
    expect(waits.slice(1).every((wait, i) => wait > (waits[i] ?? 0))).toBe(true);
    for (const [i, wait] of waits.entries()) {
      const [before, after] = [mutes[i]?.answeredAt ?? 0, mutes[i + 1]?.at ?? 0];
      expect(after - before).toBeGreaterThanOrEqual(wait - 20);
    }
    await page.screenshot({ path: join(OUTPUT, `${transport}-unavailable.png`), fullPage: true });
    await page.close();
  }, 40_000);
});
