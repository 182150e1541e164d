/** POST /api/v1/auth/token: exchange an API key for a 24 h access token. */
import { Elysia, t } from "elysia";
import type { AppContext } from "../context";
import { kernel } from "./http";
import { unauthenticated } from "./errors";

export const authRoutes = (ctx: AppContext) =>
  new Elysia({ prefix: "/api/v1/auth" }).use(kernel(ctx)).post(
    "/token",
    async ({ body, request, set }) => {
      let principal;
      try {
        principal = ctx.apiKeys.verify(body.apiKey);
      } catch {
        throw unauthenticated("invalid API key");
      }
      ctx.rateLimiter?.enforce(principal, request, set.headers as Record<string, string>);
      const accessToken = await ctx.tokens.sign({ tenantId: principal.tenantId, sub: principal.sub, permissions: [...principal.permissions] });
      return { accessToken, tokenType: "Bearer" as const, expiresIn: ctx.tokens.ttlSecs };
    },
    {
      body: t.Object({ apiKey: t.String({ minLength: 1, maxLength: 512 }) }),
      response: t.Object({ accessToken: t.String(), tokenType: t.Literal("Bearer"), expiresIn: t.Integer() }),
      detail: { summary: "Exchange an API key for an access token (rate-limited to 10 per minute per tenant)", tags: ["auth"], security: [] },
    },
  );
