export const uuid = (): string => crypto.randomUUID();
let lastMs = Number.NaN;
let lastIso = "";
let lastSec = Number.NaN;
/** the current second's "YYYY-MM-DDTHH:mm:ss." */
let secPrefix = "";
/**
 * The current time as ISO 8601 (UTC, milliseconds); one millisecond's string is built once, and
 * within one second only its last four characters change (usage records stamp every request).
 */
export const now = (): string => {
  const ms = Date.now();
  if (ms !== lastMs) {
    const sec = Math.floor(ms / 1000);
    if (sec !== lastSec) {
      const iso = new Date(ms).toISOString();
      // the fixed layout (years 0-9999): the date and time up to the dot, then 3 digits and "Z"
      if (iso.length !== 24) {
        lastMs = ms;
        lastSec = Number.NaN;
        return (lastIso = iso);
      }
      secPrefix = iso.slice(0, 20);
      lastSec = sec;
    }
    const r = ms - sec * 1000;
    lastIso = secPrefix + (r < 10 ? "00" : r < 100 ? "0" : "") + r + "Z";
    lastMs = ms;
  }
  return lastIso;
};
/** URL-safe random token, e.g. for API keys. */
export const randomToken = (bytes = 24): string => Buffer.from(crypto.getRandomValues(new Uint8Array(bytes))).toString("base64url");
