/**
 * GET /openapi.json and GET /docs (src/server/ops/api-docs.ts) on a real server:
 * the committed document byte for byte, the page and every file it names from
 * swagger-ui-dist, GET and HEAD only, ETags and cache headers, the page's
 * Content-Security-Policy, and CORS as on every other answer.
 */
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type Boardline, startBoardline } from "../harness/boardline.js";

let bl: Boardline;
beforeAll(async () => {
  bl = await startBoardline({ store: "memory", corsOrigins: ["https://app.example.com"] });
});
afterAll(async () => {
  await bl?.close();
});

const get = (path: string, init: RequestInit = {}) => fetch(`${bl.url}${path}`, init);

/** The local files the page names (`href`/`src`), as paths with their query. */
async function pageFiles(): Promise<string[]> {
  const html = await (await get("/docs")).text();
  return [...html.matchAll(/(?:href|src)="([^"]+)"/g)].map((m) => `/${m[1]}`);
}

describe("/openapi.json", () => {
  test("is the committed document, revalidated by ETag", async () => {
    const res = await get("/openapi.json");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/json; charset=utf-8");
    expect(res.headers.get("cache-control")).toBe("no-cache");
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    expect(await res.text()).toBe(readFileSync("openapi/boardline.v1.json", "utf8"));
    const etag = res.headers.get("etag") ?? "";
    expect(etag).toMatch(/^"[A-Za-z0-9_-]+"$/);
    const again = await get("/openapi.json", { headers: { "if-none-match": etag } });
    expect(again.status).toBe(304);
    expect(await again.text()).toBe("");
    expect((await get("/openapi.json", { headers: { "if-none-match": '"other"' } })).status).toBe(200);
  });

  test("HEAD answers the headers alone; other methods 405 from the error table", async () => {
    const head = await get("/openapi.json", { method: "HEAD" });
    expect(head.status).toBe(200);
    expect(Number(head.headers.get("content-length"))).toBe(readFileSync("openapi/boardline.v1.json").length);
    expect(await head.text()).toBe("");
    for (const method of ["POST", "PUT", "DELETE"]) {
      const res = await get("/openapi.json", { method });
      expect(res.status).toBe(405);
      expect(res.headers.get("allow")).toBe("GET, HEAD");
      expect(await res.json()).toEqual({ error: { code: 405, message: "method not allowed; use GET or HEAD" } });
    }
  });

  test("CORS headers as on every answer", async () => {
    const res = await get("/openapi.json", { headers: { origin: "https://app.example.com" } });
    expect(res.headers.get("access-control-allow-origin")).toBe("https://app.example.com");
    expect(res.headers.get("x-request-id")).not.toBeNull();
  });
});

describe("/docs", () => {
  test("is an HTML page with a Content-Security-Policy: own scripts and styles only, no inline code, no framing", async () => {
    const res = await get("/docs");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(res.headers.get("cache-control")).toBe("no-cache");
    const csp = res.headers.get("content-security-policy") ?? "";
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("connect-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toMatch(/unsafe-inline|unsafe-eval|https?:/);
    const html = await res.text();
    expect(html).not.toMatch(/<script>|<style|https?:\/\//); // nothing inline, nothing from elsewhere
  });

  test("every file the page names is served from swagger-ui-dist (or ours), versioned and cached for good", async () => {
    const files = await pageFiles();
    expect(files.map((f) => f.replace(/\?.*/, "")).sort()).toEqual([
      "/docs/favicon-32x32.png",
      "/docs/index.css",
      "/docs/init.js",
      "/docs/swagger-ui-bundle.js",
      "/docs/swagger-ui.css",
    ]);
    const fromPackage = readFileSync("node_modules/swagger-ui-dist/swagger-ui-bundle.js");
    for (const file of files) {
      const res = await get(file);
      expect(res.status, file).toBe(200);
      expect(res.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
      const body = Buffer.from(await res.arrayBuffer());
      if (file.startsWith("/docs/swagger-ui-bundle.js")) expect(body.equals(fromPackage)).toBe(true);
    }
    const init = await (await get("/docs/init.js")).text();
    expect(init).toContain('url: "openapi.json"');
  });

  test("nothing else of the package is served", async () => {
    for (const path of ["/docs/", "/docs/index.html", "/docs/swagger-initializer.js", "/docs/oauth2-redirect.html"]) {
      const res = await get(path);
      expect(res.status, path).toBe(404);
      expect(await res.json()).toEqual({ error: { code: 404, message: "no such route" } });
    }
  });
});
