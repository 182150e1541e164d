/**
 * GET /openapi.json (OpenAPI 3.1 generated from every route's TypeBox schemas by
 * @elysiajs/openapi) and GET /docs (Swagger UI). The UI's script and stylesheet are served
 * from the swagger-ui-dist package under /docs/assets, embedded in the single binary, so the
 * page works without internet access.
 */
import { Elysia } from "elysia";
import { openapi } from "@elysiajs/openapi";
import bundlePath from "swagger-ui-dist/swagger-ui-bundle.js" with { type: "file" };
import cssPath from "swagger-ui-dist/swagger-ui.css" with { type: "file" };
import pkg from "../../package.json";

const ASSETS = "/docs/assets";

export const docsRoutes = () =>
  new Elysia({ name: "svc-docs" })
    .use(
      openapi({
        path: "/docs",
        specPath: "/openapi.json",
        provider: "swagger-ui",
        documentation: {
          info: { title: "svc", version: pkg.version, description: pkg.description },
          components: {
            securitySchemes: { bearer: { type: "http", scheme: "bearer", bearerFormat: "JWT", description: "An access token (JWT) or an svc API key (svc_...)" } },
          },
          // every route needs a credential unless it says otherwise (ops endpoints, token exchange)
          security: [{ bearer: [] }],
        },
        exclude: { paths: [/^\/docs\/assets\//] },
        swagger: {
          cdn: `${ASSETS}/swagger-ui-bundle.js`,
          theme: `${ASSETS}/swagger-ui.css`,
          autoDarkMode: false,
        },
      }),
    )
    .get(`${ASSETS}/swagger-ui-bundle.js`, () => new Response(Bun.file(bundlePath), { headers: { "content-type": "text/javascript; charset=utf-8", "cache-control": "public, max-age=86400" } }), { detail: { hide: true } })
    .get(`${ASSETS}/swagger-ui.css`, () => new Response(Bun.file(cssPath), { headers: { "content-type": "text/css; charset=utf-8", "cache-control": "public, max-age=86400" } }), { detail: { hide: true } });
