/**
 * Password sign-in (doc1 envelope, like the key exchange it mirrors):
 *   POST /api/v1/auth/login {email, password, workspace?}         public
 *   POST /api/v1/auth/password-reset {email, workspace?}         public, 202 whatever the address
 *   GET  /api/v1/auth/password-reset?token=…                     public, what the link is for
 *   POST /api/v1/auth/password-reset/confirm {token, password}   public, the link's token is the credential
 *   GET|PUT /api/v1/auth/settings {passwordLogin}                WorkspaceAdmin
 */
import { Elysia, t } from "elysia";
import type { Kernel } from "../../core/kernel";
import { DOC1 } from "../../core/errors";
import { originOf, tag } from "../http";
import { USER_LIMITS } from "../users/service";
import { PASSWORD_LIMITS } from "./policy";
import { clientAddress } from "./peer";
import { LOGIN_PATH, RESET_PATH, type PasswordService } from "./service";

const Email = t.String({ minLength: 3, maxLength: USER_LIMITS.email });
// longer than the policy's maximum is still an (invalid) attempt, not a 400 that would say less than a 401
const Password = t.String({ minLength: 1, maxLength: PASSWORD_LIMITS.max * 4 });
const Workspace = t.Optional(t.String({ minLength: 1, maxLength: 256 }));
const ResetToken = t.String({ minLength: 1, maxLength: 256 });
const T = tag("auth");

export const passwordRoutes = (kernel: Kernel, passwords: PasswordService, forwardedHops: number) =>
  new Elysia({ name: "svc-identity-passwords" })
    .use(
      kernel.mount({ prefix: LOGIN_PATH, exact: true, envelope: DOC1, auth: "public" }).post("", async ({ body, request }) => await passwords.login(body, clientAddress(request, forwardedHops)), {
        body: t.Object({ email: Email, password: Password, workspace: Workspace }),
        response: t.Object({ accessToken: t.String(), tokenType: t.Literal("Bearer"), expiresIn: t.Integer() }),
        detail: {
          summary: "Sign in with e-mail and password: the key exchange's token shape, acting as the user with their roles (failures locked per account and per address)",
          ...T,
          security: [],
        },
      }),
    )
    .use(
      kernel
        .mount({ prefix: RESET_PATH, envelope: DOC1, auth: "public" })
        .post("", async ({ body, request, set }) => {
          set.status = 202;
          return await passwords.requestReset(body, clientAddress(request, forwardedHops), originOf(request));
        }, {
          body: t.Object({ email: Email, workspace: Workspace }),
          detail: { summary: "Ask for a password reset link by e-mail (202 whatever the address; one-time link, 30 minutes)", ...T, security: [] },
        })
        .get("", async ({ query }) => await passwords.previewReset(query.token), {
          query: t.Object({ token: ResetToken }),
          detail: { summary: "What a password reset link is for (changes nothing)", ...T, security: [] },
        })
        .post("/confirm", async ({ body }) => await passwords.confirmReset(body.token, body.password), {
          body: t.Object({ token: ResetToken, password: Password }),
          detail: { summary: "Set a new password with a reset link's token (once; other open links stop working)", ...T, security: [] },
        }),
    )
    .use(
      kernel
        .mount({ prefix: "/api/v1/auth/settings", exact: true, envelope: DOC1 })
        .get("", async ({ principal }) => await passwords.settings(principal.tenantId), {
          perm: "WorkspaceAdmin",
          detail: { summary: "Whether the workspace signs in with passwords, and whether an SSO connection is active", ...T },
        })
        .put("", async ({ principal, body }) => await passwords.setPasswordLogin(principal.tenantId, body.passwordLogin), {
          body: t.Object({ passwordLogin: t.Boolean() }),
          perm: "WorkspaceAdmin",
          detail: { summary: "Turn password sign-in on or off (off only while an SSO connection is active: 409 otherwise)", ...T },
        }),
    );
