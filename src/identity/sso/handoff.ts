/**
 * Handing an SSO sign-in back to the dashboard without the token in a URL:
 *   GET /api/v1/sso/login?email=…&returnTo=/ui  -> the sign-in's state remembers where to return
 *   callback / ACS of that sign-in             -> 303 to `<returnTo>#sso=<one-time code>`
 *   POST /api/v1/auth/sso-code {code}           -> the sign-in's answer (the access token), once
 * A code is 32 random bytes, valid 60 s and for one exchange; it sits in the fragment, which the
 * browser never sends to a server, and the page removes it at once. Both maps live in this
 * process's memory (bounded): a sign-in returns to the replica that issued its code only when the
 * callback and the exchange reach the same replica (see docs/dashboard.md).
 */
import { ApiError, badRequest } from "../../core/errors";
import { randomToken } from "../../core/ids";
import type { SignedIn } from "./signin";

export const CODE_TTL_MS = 60_000;
/** how long a started sign-in remembers its returnTo (longer than the identity provider's round trip) */
const RETURN_TTL_MS = 15 * 60_000;
const MAX_ENTRIES = 10_000;

/** A same-origin path to the dashboard: `/ui` or `<prefix>/ui` (with an optional trailing slash); nothing else (no open redirect). */
export function validReturnTo(path: string): boolean {
  return /^(\/[A-Za-z0-9._~-]+)*\/ui\/?$/.test(path) && path.length <= 256;
}

interface Timed<T> {
  value: T;
  exp: number;
}

function put<T>(map: Map<string, Timed<T>>, key: string, value: T, ttl: number, now: number) {
  if (map.size >= MAX_ENTRIES) for (const [k, v] of map) if (v.exp <= now) map.delete(k);
  if (map.size >= MAX_ENTRIES) throw new ApiError("service_unavailable", "too many sign-ins in progress; try again in a minute", undefined, { "retry-after": "60" });
  map.set(key, { value, exp: now + ttl });
}

function take<T>(map: Map<string, Timed<T>>, key: string | null | undefined, now: number): T | undefined {
  if (!key) return undefined;
  const e = map.get(key);
  if (!e) return undefined;
  map.delete(key);
  return e.exp > now ? e.value : undefined;
}

export class SsoHandoff {
  private readonly returns = new Map<string, Timed<string>>();
  private readonly codes = new Map<string, Timed<SignedIn>>();

  constructor(private readonly now: () => number = Date.now) {}

  /** Remember where the sign-in of `state` returns to (checked: a dashboard path). */
  remember(state: string, returnTo: string) {
    if (!validReturnTo(returnTo)) throw badRequest("returnTo: only the dashboard's path (/ui, or /<prefix>/ui) is accepted");
    put(this.returns, state, returnTo, RETURN_TTL_MS, this.now());
  }

  /** Where the sign-in of `state` returns to, if it asked to (consumed). */
  takeReturn(state: string | null | undefined): string | undefined {
    return take(this.returns, state, this.now());
  }

  /** The redirect to the dashboard carrying a one-time code for `result`. */
  redirect(returnTo: string, result: SignedIn): Response {
    const code = randomToken(32);
    put(this.codes, code, result, CODE_TTL_MS, this.now());
    return new Response(null, { status: 303, headers: { location: `${returnTo}#sso=${code}`, "cache-control": "no-store", "referrer-policy": "no-referrer" } });
  }

  /** The sign-in's answer for a code: once, within 60 s; otherwise 401. */
  redeem(code: string): SignedIn {
    const r = take(this.codes, code, this.now());
    if (!r) throw new ApiError("authentication_error", "unknown, used or expired sign-in code");
    return r;
  }
}

const bySignIn = new WeakMap<object, SsoHandoff>();
/** One handoff per sign-in service (per app), shared by its routes and its native ACS. */
export const handoffOf = (signin: object): SsoHandoff => {
  let h = bySignIn.get(signin);
  if (!h) bySignIn.set(signin, (h = new SsoHandoff()));
  return h;
};
