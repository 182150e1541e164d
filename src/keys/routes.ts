/** POST /api/v1/auth/token: exchange an API key for a 24 h access token (10 per minute per tenant). */
import { t } from "elysia";
import type { Kernel, RequestLimiter } from "../core/kernel";
import { DOC1, unauthenticated } from "../core/errors";
import type { TokenService } from "../core/auth";
import type { ApiKeyService } from "./service";
import { examples } from "../core/openapi";

/** The rate-limit group of token exchanges (doc1 §8: 10 per minute per tenant). */
export const TOKEN_EXCHANGE_GROUP = "token_exchange";

export const keyRoutes = (kernel: Kernel, keys: ApiKeyService, tokens: TokenService, limiter: RequestLimiter) =>
  // public: the credential is the API key in the body; the exchange is charged to the key's tenant once verified
  kernel.mount({ prefix: "/api/v1/auth", envelope: DOC1, auth: "public" }).post(
    "/token",
    async ({ body, request }) => {
      let principal;
      try {
        principal = await keys.verify(body.apiKey);
      } catch {
        throw unauthenticated("invalid API key");
      }
      const state = kernel.stateOf(request);
      if (state) state.principal = principal;
      await limiter.enforce(principal, TOKEN_EXCHANGE_GROUP, state?.headers ?? {});
      const accessToken = await tokens.sign({ tenantId: principal.tenantId, sub: principal.sub, permissions: [...principal.permissions] });
      return { accessToken, tokenType: "Bearer" as const, expiresIn: tokens.ttlSecs };
    },
    {
      body: t.Object({ apiKey: t.String({ minLength: 1, maxLength: 512 }) }),
      response: t.Object({ accessToken: t.String(), tokenType: t.Literal("Bearer"), expiresIn: t.Integer() }),
      detail: {
        summary: "Exchange an API key for an access token (rate-limited to 10 per minute per tenant)",
        description:
          "Verifies the svc API key in the body and answers a signed access token (JWT) for the key's tenant with the key's permissions, valid for `expiresIn` seconds. An invalid or revoked key is refused with 401; exchanges are limited to 10 per minute per tenant.",
        tags: ["auth"],
        security: [],
        ...examples({ request: { apiKey: "svc_Fys3Rw6tJ6REdBf7RbVHSX04jU8pTrtPIGohpSR40q" }, response: { accessToken: "eyJhbGciOiJIUzI1NiJ9.eyJ0ZW5hbnRfaWQiOiJhY21lIiwic3ViIjoiYXBpLWtleTprZXlfMDEiLCJwZXJtaXNzaW9ucyI6W10sImV4cCI6MTc5NjAwMDAwMH0.c2lnbmF0dXJl", tokenType: "Bearer", expiresIn: 86400 } }),
      },
    },
  );
