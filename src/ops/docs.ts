/**
 * GET /openapi.json (the OpenAPI 3.1 document of everything mounted, built once on first request:
 * src/core/openapi.ts) and GET /docs (Swagger UI). The UI's script and stylesheet are served from
 * the swagger-ui-dist package under /docs/assets, embedded in the single binary, so the page works
 * without internet access.
 */
import { Elysia } from "elysia";
import bundlePath from "swagger-ui-dist/swagger-ui-bundle.js" with { type: "file" };
import cssPath from "swagger-ui-dist/swagger-ui.css" with { type: "file" };
import { DOC1 } from "../core/errors";
import type { Kernel } from "../core/kernel";

export const ASSETS = "/docs/assets";

const page = (title: string) => `<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8" />
  <meta name="viewport" content="width=device-width, initial-scale=1" />
  <title>${title}</title>
  <link rel="stylesheet" href="${ASSETS}/swagger-ui.css" />
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="${ASSETS}/swagger-ui-bundle.js"></script>
  <script>window.onload = () => { window.ui = SwaggerUIBundle({ url: "/openapi.json", dom_id: "#swagger-ui" }); };</script>
</body>
</html>`;

const asset = (path: string, type: string) => () =>
  new Response(Bun.file(path), { headers: { "content-type": type, "cache-control": "public, max-age=86400" } });

export const docsRoutes = (kernel: Kernel, document: () => unknown, title: string) => {
  kernel.register({ prefix: "/docs", envelope: DOC1, auth: "public" });
  kernel.register({ prefix: "/openapi.json", envelope: DOC1, auth: "public" });
  let cached: string | undefined;
  return new Elysia({ name: "svc-docs" })
    .get("/openapi.json", () => new Response((cached ??= JSON.stringify(document())), { headers: { "content-type": "application/json" } }), { detail: { hide: true } })
    .get("/docs", () => new Response(page(title), { headers: { "content-type": "text/html; charset=utf-8" } }), { detail: { hide: true } })
    .get(`${ASSETS}/swagger-ui-bundle.js`, asset(bundlePath, "text/javascript; charset=utf-8"), { detail: { hide: true } })
    .get(`${ASSETS}/swagger-ui.css`, asset(cssPath, "text/css; charset=utf-8"), { detail: { hide: true } });
};
