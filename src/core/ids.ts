export const uuid = (): string => crypto.randomUUID();
let lastMs = Number.NaN;
let lastIso = "";
/** The current time as ISO 8601 (UTC, milliseconds); one millisecond's string is built once (usage records stamp every request). */
export const now = (): string => {
  const ms = Date.now();
  if (ms !== lastMs) {
    lastIso = new Date(ms).toISOString();
    lastMs = ms;
  }
  return lastIso;
};
/** URL-safe random token, e.g. for API keys. */
export const randomToken = (bytes = 24): string => Buffer.from(crypto.getRandomValues(new Uint8Array(bytes))).toString("base64url");
