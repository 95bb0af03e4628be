/**
 * The moderation panel of examples/browser (panel.html) in Debian's Chromium
 * (playwright-core), against the live demo (`node dist/src/main.js` with no
 * configuration) and its telephone-gateway simulator dialing callers in and
 * out, pressing keys and raising hands. The panel is served from another
 * origin, which the demo allows (CORS_ORIGINS), and reads the `BOARDLINE_*`
 * values the demo prints. The checks are what a host sees: the roster with
 * masked caller ids, everyone muted after "Mute all" (keypad unmute turned
 * off first, so the simulated callers cannot undo it, and newcomers muted by
 * the policy), and a raised hand that shows and is lowered from its row.
 * Screenshots go to test-output/browser/ (git-ignored; a CI artifact).
 *
 * It needs /usr/bin/chromium (or CHROMIUM_PATH): `apt-get install chromium`;
 * `npm test` installs it (.ci/system-packages.sh). Without it the tests fail, saying so.
 */
import type { ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import type http from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type BrowserContext, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { exportedVariables, startDemo } from "../demo/demo-process.js";
import { ensureBuilt } from "../harness/build-dist.js";
import { generateAndBundle, serveExample } from "./browser-bundle.js";

const CHROMIUM = process.env.CHROMIUM_PATH || "/usr/bin/chromium";
const OUTPUT = "test-output/browser";
const ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run"];
/** The simulator's pace: a move every 250 ms keeps the roster busy and the test short. */
const GATEWAY_MS = "250";

const missing = existsSync(CHROMIUM)
  ? undefined
  : `no chromium at ${CHROMIUM}: apt-get install chromium (npm test installs it as root), or set CHROMIUM_PATH`;

let demo: ChildProcess | undefined;
let values: Record<string, string>;
let site: http.Server;
let siteOrigin: string;
let profile: string;
let browser: BrowserContext;
const timings: Record<string, number> = {};

beforeAll(async () => {
  if (missing !== undefined) return;
  let bundle: Uint8Array | undefined;
  ({ server: site, origin: siteOrigin } = await serveExample("panel.html", "/panel.js", () => bundle));
  profile = mkdtempSync(join(tmpdir(), "boardline-chromium-"));
  const started = async () => {
    await ensureBuilt();
    return startDemo({ CORS_ORIGINS: siteOrigin, DEMO_PHONE_GATEWAY_MS: GATEWAY_MS });
  };
  let running: Awaited<ReturnType<typeof startDemo>>;
  [bundle, running, browser] = await Promise.all([
    generateAndBundle("panel.ts", timings),
    started(),
    chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: ARGS,
      viewport: { width: 1100, height: 900 },
    }),
  ]);
  demo = running.proc;
  values = exportedVariables(running.banner);
  console.log(`browser panel: ${JSON.stringify(timings)} (ms)`);
}, 120_000);

afterAll(async () => {
  await browser?.close();
  if (profile !== undefined) rmSync(profile, { recursive: true, force: true });
  if (demo?.exitCode === null) demo.kill("SIGTERM");
  site?.close();
});

async function openPanel(transport: "connect" | "grpc-web"): Promise<{ page: Page; pageErrors: string[] }> {
  if (missing !== undefined) throw new Error(missing);
  const page = await browser.newPage();
  const pageErrors: string[] = [];
  page.on("pageerror", (e) => pageErrors.push(e.message));
  const query = new URLSearchParams({
    BOARDLINE_URL: values.BOARDLINE_URL ?? "",
    BOARDLINE_TOKEN: values.BOARDLINE_TOKEN ?? "",
    BOARDLINE_GATEWAY_TOKEN: values.BOARDLINE_GATEWAY_TOKEN ?? "",
    BOARDLINE_HOST_PASSPHRASE: values.BOARDLINE_HOST_PASSPHRASE ?? "",
    transport,
  });
  await page.goto(`${siteOrigin}/?${query}`);
  return { page, pageErrors };
}

const rows = (page: Page) => page.locator("#roster tr[data-uid]");
const logged = (page: Page, step: string) =>
  page.waitForSelector(`#log li[data-step="${step}"][data-outcome="ok"]`, { timeout: 10_000 });

describe("the moderation panel against the demo", () => {
  test.each(["grpc-web", "connect"] as const)(
    "over %s: the roster appears, live, with masked caller ids",
    async (t) => {
      const { page, pageErrors } = await openPanel(t);
      await expect.poll(() => rows(page).count(), { timeout: 15_000 }).toBeGreaterThanOrEqual(3);
      expect(await page.textContent("#channel")).toBe(values.BOARDLINE_CHANNEL);
      for (const callerId of await page.locator("#roster .caller-id").allTextContents()) {
        expect(callerId).toMatch(/^\*\*\*\d{4}$/);
      }
      // Live: the simulated callers' joins, leaves, keys and hands arrive as they happen.
      await logged(page, "line");
      expect(pageErrors).toEqual([]);
      await page.close();
    },
    40_000,
  );

  test("mute all mutes everyone, newcomers too; a raised hand shows and is lowered", async () => {
    const { page, pageErrors } = await openPanel("connect");
    await expect.poll(() => rows(page).count(), { timeout: 15_000 }).toBeGreaterThanOrEqual(3);
    await page.uncheck("#allow-self-unmute");
    await logged(page, "policy");
    await page.check("#mute-on-join");
    await page.click("#mute-all");
    await logged(page, "mute-all");
    const everyone = () =>
      rows(page).evaluateAll((all) =>
        all.map((r) => {
          const data = (r as unknown as { dataset: Record<string, string> }).dataset;
          return `${data.muted}:${data.setter}`;
        }),
      );
    const allMuted = (states: string[]) => states.length > 0 && states.every((s) => /^true:(host|policy)$/.test(s));
    await expect.poll(async () => allMuted(await everyone()), { timeout: 5_000 }).toBe(true);
    // Some moves of the callers later (refused keypad unmutes, hang-ups, newcomers): still everyone muted.
    await page.waitForTimeout(Number(GATEWAY_MS) * 8);
    expect(await everyone()).toSatisfy(allMuted);
    mkdirSync(OUTPUT, { recursive: true });
    await page.screenshot({ path: join(OUTPUT, "panel-muted.png"), fullPage: true });

    const raised = page.locator('#roster tr[data-hand="raised"]').first();
    await raised.waitFor({ timeout: 20_000 });
    const uid = (await raised.getAttribute("data-uid")) ?? "";
    await page.screenshot({ path: join(OUTPUT, "panel-hand.png"), fullPage: true });
    await page.locator(`#roster tr[data-uid="${uid}"] .lower-hand`).click();
    await logged(page, "lower-hand");
    expect(await page.locator('#log li[data-step="lower-hand"]').first().textContent()).toMatch(
      new RegExp(`lower-hand: ${uid}: 1 lowered$`),
    );
    // The host's lowering comes back on the watch; the caller keeps quiet for a while after it.
    await expect
      .poll(() => page.getAttribute(`#roster tr[data-uid="${uid}"]`, "data-hand"), { timeout: 5_000 })
      .toBe("down");
    expect(pageErrors).toEqual([]);
    await page.close();
  }, 60_000);
});
