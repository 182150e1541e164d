export const uuid = (): string => crypto.randomUUID();
export const now = (): string => new Date().toISOString();
/** URL-safe random token, e.g. for API keys. */
export const randomToken = (bytes = 24): string => Buffer.from(crypto.getRandomValues(new Uint8Array(bytes))).toString("base64url");
