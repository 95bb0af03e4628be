/**
 * GET /docs in a real browser: Debian's chromium, driven by playwright-core.
 * The page loads with no console error and no Content-Security-Policy
 * violation, asks nothing of any other origin, lists every JSON route of the
 * document, and a mute sent from its "Try it out" panel — bearer token in the
 * Authorize dialog, body typed in, Execute — reaches Redis. Screenshots go to
 * test-output/ (git-ignored).
 *
 * It needs /usr/bin/chromium (or CHROMIUM_PATH): `apt-get install chromium`;
 * `npm test` installs it (.ci/system-packages.sh). Without it the test fails, saying so.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Redis } from "ioredis";
import { type BrowserContext, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, expect, test } from "vitest";
import { type Boardline, startBoardline } from "../harness/boardline.js";
import { eventually } from "../harness/eventually.js";
import { muteKey, rawRedis } from "../harness/redis-state.js";

const CHROMIUM = process.env.CHROMIUM_PATH || "/usr/bin/chromium";
const OUTPUT = "test-output";
const ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

let bl: Boardline;
let redis: Redis;
let profile: string;
let browser: BrowserContext;
let page: Page;
/** Console errors, page errors, CSP violations, failed requests and requests to other origins, as they happen. */
const problems: string[] = [];

/** Why there is no browser, if there is none: each test fails with it (a failure in beforeAll would count as skips). */
const missing = existsSync(CHROMIUM)
  ? undefined
  : `no chromium at ${CHROMIUM}: apt-get install chromium (npm test installs it as root), or set CHROMIUM_PATH`;
function needBrowser(): void {
  if (missing !== undefined) throw new Error(missing);
}

beforeAll(async () => {
  if (missing !== undefined) return;
  bl = await startBoardline();
  redis = rawRedis(bl);
  profile = mkdtempSync(join(tmpdir(), "boardline-chromium-"));
  // A fresh profile (--user-data-dir) each run: launchPersistentContext passes it.
  browser = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: ARGS,
    viewport: { width: 1280, height: 900 },
  });
  page = browser.pages()[0] ?? (await browser.newPage());
  watchForProblems(page, bl.url);
}, 60_000);

afterAll(async () => {
  await browser?.close();
  if (profile !== undefined) rmSync(profile, { recursive: true, force: true });
  redis?.disconnect();
  await bl?.close();
});

function watchForProblems(p: Page, origin: string): void {
  p.on("console", (m) => {
    if (m.type() === "error") problems.push(`console: ${m.text()}`);
  });
  p.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  p.on("requestfailed", (r) => problems.push(`request failed: ${r.url()} ${r.failure()?.errorText}`));
  p.on("request", (r) => {
    if (!r.url().startsWith(`${origin}/`)) problems.push(`request to another origin: ${r.url()}`);
  });
  p.on("response", (r) => {
    if (r.status() >= 400) problems.push(`${r.status()} for ${r.url()}`);
  });
  // Runs before the page's own scripts, outside its CSP (playwright injects it).
  void p.addInitScript({
    content: `document.addEventListener("securitypolicyviolation", (e) =>
      console.error("CSP violation: " + e.violatedDirective + " blocked " + (e.blockedURI || "inline")));`,
  });
}

test("the page loads cleanly and lists every JSON route of the document", async () => {
  needBrowser();
  await page.goto(`${bl.url}/docs`, { waitUntil: "load" });
  await page.locator(".opblock").first().waitFor({ timeout: 20_000 });
  const doc = (await (await fetch(`${bl.url}/openapi.json`)).json()) as { paths: Record<string, object> };
  const documented = Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`),
  );
  const listed = await page
    .locator(".opblock-summary")
    .evaluateAll((summaries) =>
      summaries.map(
        (s) =>
          `${s.querySelector(".opblock-summary-method")?.textContent} ${s.querySelector(".opblock-summary-path")?.getAttribute("data-path")}`,
      ),
    );
  expect(listed.sort()).toEqual(documented.sort());
  expect(listed).toContain("POST /v1/channel/pstn/mute");
  mkdirSync(OUTPUT, { recursive: true });
  await page.screenshot({ path: join(OUTPUT, "docs-page.png"), fullPage: true });
  expect(problems).toEqual([]);
}, 60_000);

test("a mute sent from the page's try-it panel reaches Redis", async () => {
  needBrowser();
  await page.goto(`${bl.url}/docs`, { waitUntil: "load" });
  await page.locator(".opblock").first().waitFor({ timeout: 20_000 });
  const uid = `docs-page-${Date.now()}`;
  // Authorize: the bearer token goes in the dialog of the document's security scheme.
  await page.locator(".auth-wrapper button.authorize").click();
  const dialog = page.locator(".modal-ux");
  await dialog
    .locator("input")
    .first()
    .fill(await bl.token());
  await dialog.locator("button.authorize").click();
  await dialog.locator("button.btn-done").click();

  const mute = page.locator(".opblock", { has: page.locator('[data-path="/v1/channel/pstn/mute"]') });
  await mute.locator(".opblock-summary").click();
  await mute.locator("button.try-out__btn").click();
  await mute
    .locator("textarea.body-param__text")
    .fill(JSON.stringify({ uid, passphrase: bl.world.hostPassphrase, mute: true }));
  await mute.locator("button.execute").click();
  const status = mute.locator(".live-responses-table tr.response .response-col_status");
  await status.waitFor({ timeout: 20_000 });
  await mute.locator(".live-responses-table").scrollIntoViewIfNeeded();
  await page.screenshot({ path: join(OUTPUT, "docs-page-mute.png") });
  expect((await status.textContent())?.trim()).toBe("200");
  await eventually(async () => (await redis.hget(muteKey(bl), uid)) === "1", 5_000, "the mute in Redis");
  expect(problems).toEqual([]);
}, 60_000);
