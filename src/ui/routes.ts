/**
 * GET /ui and /ui/ (the dashboard's page), /ui/app.js, /ui/app.css: public, like
 * /docs — the page holds no data; every number it shows comes from the public API, called with
 * the signed-in user's bearer token. Every answer carries a strict Content-Security-Policy (no
 * inline script or style, nothing from another origin, no framing), X-Frame-Options DENY,
 * nosniff and no referrer. URLs are relative, so the dashboard works behind a path prefix.
 */
import { Elysia } from "elysia";
import { DOC1 } from "../core/errors";
import type { Kernel } from "../core/kernel";

export const CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data: blob:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join("; ");

export const SECURITY_HEADERS = {
  "content-security-policy": CSP,
  "x-frame-options": "DENY",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "cross-origin-opener-policy": "same-origin",
  "cross-origin-resource-policy": "same-origin",
} as const;

/** `dir`: how the page reaches its assets from its own URL ("" at /ui/, "ui/" at /ui) */
export const page = (version: string, dir: string) => `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>svc dashboard</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${dir}app.css?v=${version}">
<script type="module" src="${dir}app.js?v=${version}"></script>
</head>
<body>
<div id="app"><p class="boot">Loading…</p></div>
</body>
</html>`;

export interface UiAssets {
  js: string;
  css: string;
  version: string;
}

export const uiRoutes = (kernel: Kernel, assets: UiAssets) => {
  kernel.register({ prefix: "/ui", envelope: DOC1, auth: "public" });
  const pages = { slash: page(assets.version, ""), bare: page(assets.version, "ui/") };
  const etag = `"${assets.version}"`;
  const answer = (body: string, type: string, request: Request) =>
    request.headers.get("if-none-match") === etag
      ? new Response(null, { status: 304, headers: { ...SECURITY_HEADERS, etag } })
      : new Response(body, { headers: { ...SECURITY_HEADERS, "content-type": type, "cache-control": "no-cache", etag } });
  const doc = (summary: string, description: string) => ({ detail: { summary, description, tags: ["dashboard"], security: [] } });
  return new Elysia({ name: "svc-ui" })
    // one page for /ui and /ui/ (relative asset URLs differ), so an operator's path prefix needs no rewrite
    .get("/ui", ({ request }) => answer(new URL(request.url).pathname.endsWith("/") ? pages.slash : pages.bare, "text/html; charset=utf-8", request), doc("The admin dashboard's page (/ui and /ui/)", "The dashboard's single HTML page; it holds no data: signed in, it reads everything from this API with the user's bearer token. Served with a strict Content-Security-Policy."))
    .get("/ui/app.js", ({ request }) => answer(assets.js, "text/javascript; charset=utf-8", request), doc("The dashboard's script (embedded in the binary)", "The dashboard's JavaScript module, versioned by the page's `?v=`; answers 304 to a matching If-None-Match."))
    .get("/ui/app.css", ({ request }) => answer(assets.css, "text/css; charset=utf-8", request), doc("The dashboard's stylesheet (embedded in the binary)", "The dashboard's CSS, versioned by the page's `?v=`; answers 304 to a matching If-None-Match."));
};
