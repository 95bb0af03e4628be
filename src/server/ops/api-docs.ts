/**
 * The API reference for JSON callers: `GET /openapi.json` — the committed
 * OpenAPI document (openapi/boardline.v1.json, generated from the protos by
 * `npm run generate`) — and `GET /docs`, a page rendered by Swagger UI
 * (swagger-ui-dist, served from node_modules, nothing from elsewhere) whose
 * "Try it out" calls this same server.
 *
 * Every file is read once, when the first server starts: a missing package or
 * document stops start-up, never a request. GET and HEAD only (405 otherwise).
 * Each answer has a strong ETag (a matching `If-None-Match` gets 304); the page
 * and the document are revalidated every time (`no-cache`), the page's assets
 * carry their hash in their URLs and are cached for good. The page's
 * Content-Security-Policy lets it load only its own scripts, styles and images
 * and call only this origin: no inline script, no eval, no framing.
 */
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { NodeRequest, NodeResponse } from "../http/request-answer.js";
import { getRoute } from "./get-routes.js";

/** Where the document is, from the repository (or installed package) root. */
const DOCUMENT = join("openapi", "boardline.v1.json");

export const DOCS_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

/** Answers that are not the page: nothing to run, nothing to frame. */
const PLAIN_CSP = "default-src 'none'; frame-ancestors 'none'";

const NO_CACHE = "no-cache";
const IMMUTABLE = "public, max-age=31536000, immutable";

/** Starts Swagger UI on the page: a file of its own, so no inline script is needed. */
const INIT_SCRIPT = `"use strict";
window.ui = SwaggerUIBundle({
  url: "openapi.json",
  dom_id: "#swagger-ui",
  deepLinking: true,
  validatorUrl: "none",
  displayRequestDuration: true,
  defaultModelsExpandDepth: 0,
});
`;

interface Asset {
  readonly body: Buffer;
  readonly contentType: string;
  readonly cacheControl: string;
  readonly csp: string;
  readonly etag: string;
}

export class ApiDocs {
  private constructor(private readonly assets: ReadonlyMap<string, Asset>) {}

  /** Reads the document and the page's files; throws, naming what is missing. */
  static load(): ApiDocs {
    const ui = swaggerUiDir();
    const file = (name: string) => readFileSync(join(ui, name));
    const assets = new Map<string, Asset>();
    const add = (path: string, body: Buffer, contentType: string, cacheControl: string, csp = PLAIN_CSP) => {
      const etag = `"${createHash("sha256").update(body).digest("base64url").slice(0, 27)}"`;
      assets.set(path, { body, contentType, cacheControl, csp, etag });
      return `${path.slice(1)}?v=${etag.slice(1, 13)}`; // the page's relative, versioned URL
    };
    add("/openapi.json", readFileSync(findDocument()), "application/json; charset=utf-8", NO_CACHE);
    const page = {
      css: add("/docs/swagger-ui.css", file("swagger-ui.css"), "text/css; charset=utf-8", IMMUTABLE),
      layout: add("/docs/index.css", file("index.css"), "text/css; charset=utf-8", IMMUTABLE),
      icon: add("/docs/favicon-32x32.png", file("favicon-32x32.png"), "image/png", IMMUTABLE),
      bundle: add(
        "/docs/swagger-ui-bundle.js",
        file("swagger-ui-bundle.js"),
        "text/javascript; charset=utf-8",
        IMMUTABLE,
      ),
      init: add("/docs/init.js", Buffer.from(INIT_SCRIPT), "text/javascript; charset=utf-8", IMMUTABLE),
    };
    add("/docs", Buffer.from(pageHtml(page)), "text/html; charset=utf-8", NO_CACHE, DOCS_CSP);
    return new ApiDocs(assets);
  }

  has(path: string): boolean {
    return this.assets.has(path);
  }

  handle(path: string, req: NodeRequest, res: NodeResponse): void {
    const asset = getRoute(this.assets, path, req, res);
    if (asset === undefined) return;
    res.setHeader("etag", asset.etag);
    res.setHeader("cache-control", asset.cacheControl);
    res.setHeader("content-security-policy", asset.csp);
    res.setHeader("x-content-type-options", "nosniff");
    res.setHeader("referrer-policy", "no-referrer");
    if (matches(req.headers["if-none-match"], asset.etag)) {
      res.statusCode = 304;
      res.end();
      return;
    }
    res.statusCode = 200;
    res.setHeader("content-type", asset.contentType);
    res.setHeader("content-length", asset.body.length);
    if (req.method === "HEAD") res.end();
    else res.end(asset.body);
  }
}

let loaded: ApiDocs | undefined;

/** The API reference, read on first use and shared by every server of the process. */
export function apiDocs(): ApiDocs {
  loaded ??= ApiDocs.load();
  return loaded;
}

function pageHtml(url: { css: string; layout: string; icon: string; bundle: string; init: string }): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>boardline API reference</title>
<link rel="icon" type="image/png" href="${url.icon}">
<link rel="stylesheet" href="${url.css}">
<link rel="stylesheet" href="${url.layout}">
</head>
<body>
<div id="swagger-ui"></div>
<script src="${url.bundle}"></script>
<script src="${url.init}"></script>
</body>
</html>
`;
}

/** swagger-ui-dist's folder in node_modules. */
function swaggerUiDir(): string {
  try {
    return dirname(createRequire(import.meta.url).resolve("swagger-ui-dist/package.json"));
  } catch (e) {
    throw new Error("the API reference needs the package swagger-ui-dist: run npm ci", { cause: e });
  }
}

/** openapi/boardline.v1.json in the nearest folder above this module that has it (src/ or dist/src/ alike). */
function findDocument(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = join(dir, DOCUMENT);
    if (existsSync(candidate)) return candidate;
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`${DOCUMENT} not found above this module: run npm run generate`);
    dir = parent;
  }
}

/** Whether `If-None-Match` names the ETag (or is `*`). */
function matches(header: string | string[] | undefined, etag: string): boolean {
  if (header === undefined) return false;
  const value = Array.isArray(header) ? header.join(",") : header;
  return value.split(",").some((t) => {
    const tag = t.trim();
    return tag === "*" || tag === etag || tag === `W/${etag}`;
  });
}
