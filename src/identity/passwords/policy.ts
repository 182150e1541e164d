/**
 * What a password must be: at least 12 characters (at most 256), not one of the 10,000 most common
 * passwords (case-insensitively), not the account's e-mail address or its local part. The list is
 * the first 10,000 of the frequency-ordered `passwords-common` dictionary shipped by
 * @zxcvbn-ts/language-common (from the 10-million-password corpus zxcvbn ranks), loaded on first use.
 */
import { badRequest } from "../../core/errors";

export const PASSWORD_LIMITS = { min: 12, max: 256, common: 10_000 } as const;

let common: Promise<Set<string>> | undefined;

/** the 10,000 most common passwords, lower-cased */
export function commonPasswords(): Promise<Set<string>> {
  common ??= import("@zxcvbn-ts/language-common").then(({ dictionary }) => {
    const ranked = (dictionary as Record<string, unknown>)["passwords-common"] as string[];
    return new Set(ranked.slice(0, PASSWORD_LIMITS.common).map((p) => p.toLowerCase()));
  });
  return common;
}

/** 400 with the rule a password breaks */
export async function checkPassword(password: string, email: string, field = "password"): Promise<void> {
  const chars = [...password].length;
  if (chars < PASSWORD_LIMITS.min) throw badRequest(`${field}: at least ${PASSWORD_LIMITS.min} characters`);
  if (chars > PASSWORD_LIMITS.max) throw badRequest(`${field}: at most ${PASSWORD_LIMITS.max} characters`);
  const lower = password.toLowerCase();
  if ((await commonPasswords()).has(lower)) throw badRequest(`${field}: one of the 10,000 most common passwords; choose another`);
  const e = email.toLowerCase();
  if (lower === e || lower === e.slice(0, e.lastIndexOf("@"))) throw badRequest(`${field}: must not be the e-mail address`);
}
