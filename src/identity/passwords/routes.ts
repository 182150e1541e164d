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
import { examples } from "../../core/openapi";
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
          description:
            "Checks the password of the user with this e-mail (set when they accepted their invitation) and answers an access token acting as that user with their roles' permissions. `workspace` names the tenant when the address belongs to several (409 otherwise); repeated failures lock the account and the client address for a while (429 with a clear message), and a workspace that turned password sign-in off answers 403.",
          ...examples({ request: { email: "ada@example.com", password: "correct horse battery staple" }, response: { accessToken: "eyJhbGciOiJIUzI1NiJ9.eyJ0ZW5hbnRfaWQiOiJhY21lIiwic3ViIjoiYXBpLWtleTprZXlfMDEiLCJwZXJtaXNzaW9ucyI6W10sImV4cCI6MTc5NjAwMDAwMH0.c2lnbmF0dXJl", tokenType: "Bearer", expiresIn: 28800 } }),
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
          detail: {
            summary: "Ask for a password reset link by e-mail (202 whatever the address; one-time link, 30 minutes)",
            description:
              "E-mails a one-time link to choose a new password to the user with this address, if there is one with a password; the answer is the same either way, so it reveals no account. Needs SMTP configured (503 otherwise); requests are limited per account and per address.",
            ...T,
            security: [],
          },
        })
        .get("", async ({ query }) => await passwords.previewReset(query.token), {
          query: t.Object({ token: ResetToken }),
          detail: { summary: "What a password reset link is for (changes nothing)", description: "Reads a reset link's token and answers the workspace, e-mail and expiry it is for, so a page can show them before the new password is chosen; an invalid, used or expired token is refused.", ...T, security: [] },
        })
        .post("/confirm", async ({ body }) => await passwords.confirmReset(body.token, body.password), {
          body: t.Object({ token: ResetToken, password: Password }),
          detail: { summary: "Set a new password with a reset link's token (once; other open links stop working)", description: "Sets the user's password from a reset link's token, which is the credential here: it works once and within its validity. The password policy applies (at least 12 characters, not a common password).", ...T, security: [] },
        }),
    )
    .use(
      kernel
        .mount({ prefix: "/api/v1/auth/settings", exact: true, envelope: DOC1 })
        .get("", async ({ principal }) => await passwords.settings(principal.tenantId), {
          perm: "WorkspaceAdmin",
          detail: { summary: "Whether the workspace signs in with passwords, and whether an SSO connection is active", description: "Answers `passwordLogin` (whether POST /api/v1/auth/login works for the workspace's users) and `ssoActive` (whether an SSO connection is active).", ...T },
        })
        .put("", async ({ principal, body }) => await passwords.setPasswordLogin(principal.tenantId, body.passwordLogin), {
          body: t.Object({ passwordLogin: t.Boolean() }),
          perm: "WorkspaceAdmin",
          detail: { summary: "Turn password sign-in on or off (off only while an SSO connection is active: 409 otherwise)", description: "Sets whether the workspace's users may sign in with a password. Turning it off needs an active SSO connection, so nobody is locked out; turning it on is refused when the operator disabled password sign-in for every workspace.", ...T },
        }),
    );
