/**
 * /api/v1/sso (doc3 §4.1; WorkspaceAdmin, DOC3 envelope, camelCase) and the public sign-in
 * endpoints: GET /api/v1/sso/login?email= (302 to the identity provider), GET
 * /api/v1/sso/oidc/callback, POST /api/v1/sso/saml/acs (native: the body is a form, not JSON),
 * GET /api/v1/sso/saml/metadata (the SP metadata XML, public for identity providers to fetch),
 * POST /api/v1/auth/sso-code (the dashboard's one-time code of a `returnTo` sign-in, handoff.ts).
 */
import { Elysia, t } from "elysia";
import type { Kernel, NativeRoutes } from "../../core/kernel";
import { DOC3, badRequest } from "../../core/errors";
import { pageEnvelope, pageOf } from "../../core/pagination";
import { actor, originOf, tag } from "../http";
import { deleted } from "../types";
import * as S from "./schemas";
import type { SsoService } from "./service";
import { SSO_PATHS, type SignInService } from "./signin";
import { handoffOf, validReturnTo } from "./handoff";

const T = tag("sso");

export const ssoRoutes = (kernel: Kernel, sso: SsoService, signin: SignInService, anySignedRequests: (tenantId: string) => Promise<boolean>) =>
  new Elysia({ name: "svc-identity-sso" })
    .use(
      kernel
        .mount({ prefix: "/api/v1/sso", envelope: DOC3 })
        .post("/connections", async ({ principal, body, set }) => {
          await sso.checkUrls(body);
          set.status = 201;
          return await sso.create(principal.tenantId, body, actor(principal));
        }, { body: S.ConnectionCreate, perm: "WorkspaceAdmin", detail: { summary: "Create an SSO connection (status inactive; the client secret is encrypted at rest and never shown)", description: "Creates an OIDC connection (issuer, client id and secret) or a SAML one (IdP entity id, SSO URL, certificate), inactive; its URLs must pass the outbound policy. Then add and verify a domain, test the connection, and activate it.", ...T } })
        .get("/connections", async ({ principal, query }) => {
          const page = pageOf(query);
          const { items, total } = await sso.list(principal.tenantId, { ...query, offset: page.offset, limit: page.limit });
          return pageEnvelope("connections", items, total, page);
        }, { query: S.ConnectionListQuery, perm: "WorkspaceAdmin", detail: { summary: "List SSO connections (protocol, status, partial name)", description: "Lists the workspace's SSO connections (paged), filtered by protocol, status or part of the name, with their domains; secrets appear masked.", ...T } })
        .get("/connections/:id", async ({ principal, params }) => await sso.get(principal.tenantId, params.id), {
          params: S.ConnParams,
          perm: "WorkspaceAdmin",
          detail: { summary: "Get an SSO connection with its domains", description: "Answers one connection with its configuration (the client secret masked), status, last test result and domains.", ...T },
        })
        .put("/connections/:id", async ({ principal, params, body }) => {
          await sso.checkUrls(body);
          return await sso.update(principal.tenantId, params.id, body);
        }, {
          params: S.ConnParams,
          body: S.ConnectionUpdate,
          perm: "WorkspaceAdmin",
          detail: { summary: "Update an SSO connection partially (a nested config merges field by field)", description: "Changes the fields present; a change to the identity provider's configuration voids the last test result (the status stays).", ...T },
        })
        .delete("/connections/:id", async ({ principal, params }) => {
          await sso.remove(principal.tenantId, params.id);
          return deleted(params.id);
        }, { params: S.ConnParams, perm: "WorkspaceAdmin", detail: { summary: "Soft-delete an SSO connection (its domains are released)", description: "Deletes the connection: its sign-ins stop and its domains can be claimed by another connection.", ...T } })
        .post("/connections/:id/test", async ({ principal, params }) => await sso.test(principal.tenantId, params.id), {
          params: S.ConnParams,
          perm: "WorkspaceAdmin",
          detail: { summary: "Test the connection: OIDC discovery and JWKS, or the SAML certificate and metadata (success: testing, failure: error)", description: "Checks the identity provider's configuration now: for OIDC the discovery document and its signing keys are fetched, for SAML the certificate (validity, key) and the entity id and SSO URL are checked. The result is recorded; a passed test is what activation needs.", ...T },
        })
        .post("/connections/:id/activate", async ({ principal, params }) => await sso.activate(principal.tenantId, params.id), {
          params: S.ConnParams,
          perm: "WorkspaceAdmin",
          detail: { summary: "Activate (needs a verified domain and a passed test; 409 otherwise)", description: "Makes the connection the one users of its verified domains sign in through (GET /api/v1/sso/login).", ...T },
        })
        .post("/connections/:id/deactivate", async ({ principal, params }) => await sso.deactivate(principal.tenantId, params.id), {
          params: S.ConnParams,
          perm: "WorkspaceAdmin",
          detail: { summary: "Deactivate: new sign-ins refused, issued tokens keep working", description: "Stops sign-ins through the connection; access tokens it issued stay valid until they expire.", ...T },
        })
        .post("/connections/:id/domains", async ({ principal, params, body, set }) => {
          set.status = 201;
          return await sso.addDomain(principal.tenantId, params.id, body);
        }, { params: S.ConnParams, body: S.DomainCreate, perm: "WorkspaceAdmin", detail: { summary: "Add a domain (pending; publish the TXT record, then verify)", description: "Adds an e-mail domain to the connection with a verification token: publish it as a TXT record at `_svc-verify.<domain>` (or a file at https://<domain>/.well-known/svc-verify.txt), then verify. A domain verified anywhere else cannot be added.", ...T } })
        .put("/connections/:id/domains/:domain_id/verify", async ({ principal, params }) => await sso.verifyDomain(principal.tenantId, params.id, params.domain_id), {
          params: S.DomainParams,
          perm: "WorkspaceAdmin",
          detail: { summary: "Verify a domain by its DNS TXT record (or https file); a failed one can be verified again", description: "Looks the domain's verification token up in DNS (or the https file) and marks the domain verified or failed.", ...T },
        })
        .post("/connections/:id/domains/:domain_id/set-primary", async ({ principal, params }) => await sso.setPrimary(principal.tenantId, params.id, params.domain_id), {
          params: S.DomainParams,
          perm: "WorkspaceAdmin",
          detail: { summary: "Make a verified domain the connection's primary one", description: "Marks a verified domain as the connection's primary one; only the primary flags change.", ...T },
        })
        .delete("/connections/:id/domains/:domain_id", async ({ principal, params }) => {
          await sso.removeDomain(principal.tenantId, params.id, params.domain_id);
          return deleted(params.domain_id);
        }, { params: S.DomainParams, perm: "WorkspaceAdmin", detail: { summary: "Remove a domain", description: "Removes a domain from the connection; its users can no longer sign in through it.", ...T } })
        .get("/sp-metadata", async ({ principal, request }) => {
          const m = await signin.spMetadata(originOf(request), await anySignedRequests(principal.tenantId));
          return { entityId: m.entityId, acsUrl: m.acsUrl, metadataXml: m.metadataXml };
        }, { perm: "WorkspaceAdmin", detail: { summary: "SAML service provider metadata (entity id, ACS URL, XML)", description: "Answers what to enter at the identity provider for a SAML connection: svc's entity id, its assertion consumer service URL and the service provider metadata XML.", ...T } }),
    )
    .use(
      kernel
        .mount({ prefix: SSO_PATHS.login, envelope: DOC3, auth: "public", exact: true })
        .get("", async ({ query, request, set }) => {
          if (query.returnTo !== undefined && !validReturnTo(query.returnTo)) throw badRequest("returnTo: only the dashboard's path (/ui, or /<prefix>/ui) is accepted");
          const r = await signin.start(query.email, originOf(request));
          if (query.returnTo !== undefined) handoffOf(signin).remember(r.state, query.returnTo);
          if ((request.headers.get("accept") ?? "").includes("application/json")) return r;
          set.status = 302;
          set.headers.location = r.redirectUrl;
          return "";
        }, {
          query: t.Object({ ...S.LoginQuery.properties, returnTo: t.Optional(t.String({ maxLength: 256, description: "the dashboard's path (/ui or /<prefix>/ui): the sign-in then ends with a 303 to `<returnTo>#sso=<one-time code>` instead of the token as JSON" })) }),
          detail: { summary: "Start a sign-in: 302 to the identity provider of the e-mail's verified domain (JSON with Accept: application/json)", description: "Finds the active connection of the e-mail's verified domain and redirects the browser to its identity provider (an OIDC authorization request with PKCE, or a SAML AuthnRequest); with Accept: application/json it answers the redirect URL instead. With `returnTo` (the dashboard), the callback redirects there with a one-time code in the fragment, exchanged at POST /api/v1/auth/sso-code: the token never appears in a URL.", ...T },
        }),
    )
    .use(
      kernel
        .mount({ prefix: "/api/v1/sso/oidc", envelope: DOC3, auth: "public" })
        .get("/callback", async ({ request }) => {
          const url = new URL(request.url);
          const back = handoffOf(signin).takeReturn(url.searchParams.get("state"));
          const result = await signin.oidcCallback(url);
          return back ? handoffOf(signin).redirect(back, result) : result;
        }, {
          detail: { summary: "OIDC redirect target: exchanges the code, validates the ID token, answers an svc access token", description: "Where the identity provider sends the browser back: the authorization code is exchanged, the ID token validated (signature, issuer, audience, expiry, nonce), and the user with the asserted e-mail signed in (created with the connection's default role when just-in-time provisioning is on): the answer is an svc access token acting as that user.", ...T },
        }),
    )
    .use(
      // the dashboard's half of a returnTo sign-in (under the keys domain's public /api/v1/auth mount)
      kernel.routes("/api/v1/auth").post("/sso-code", ({ body }) => handoffOf(signin).redeem(body.code), {
        body: t.Object({ code: t.String({ minLength: 1, maxLength: 128 }) }, { additionalProperties: false }),
        detail: {
          summary: "Exchange the one-time code of an SSO sign-in that returned to the dashboard for its access token",
          description: "A sign-in started with `returnTo` ends at the dashboard with `#sso=<code>` in the fragment; this answers the sign-in's result (access token, user, permissions) once, within 60 s of the callback. 401 for an unknown, used or expired code.",
          tags: ["sso"],
          security: [],
        },
      }),
    )
    .use(
      kernel
        .mount({ prefix: "/api/v1/sso/saml", envelope: DOC3, auth: "public" })
        .get("/metadata", async ({ request }) => {
          const m = await signin.spMetadata(originOf(request), true);
          return new Response(m.metadataXml, { headers: { "content-type": "application/samlmetadata+xml" } });
        }, { detail: { summary: "SAML SP metadata XML, for identity providers", description: "Serves svc's SAML service provider metadata as XML, for identity providers that import it by URL.", ...T } }),
    );

/** The ACS takes an HTML form post (application/x-www-form-urlencoded), so it is served natively. */
export const ssoNative = (signin: SignInService): NativeRoutes => ({
  [SSO_PATHS.acs]: {
    POST: async (request) => {
      const type = request.headers.get("content-type") ?? "";
      if (!type.startsWith("application/x-www-form-urlencoded")) throw badRequest("the ACS takes an HTML form post (application/x-www-form-urlencoded) with SAMLResponse and RelayState");
      const form = new URLSearchParams(await request.text());
      const back = handoffOf(signin).takeReturn(form.get("RelayState"));
      const result = await signin.samlAcs(form, originOf(request));
      return back ? handoffOf(signin).redirect(back, result) : Response.json(result);
    },
  },
});
