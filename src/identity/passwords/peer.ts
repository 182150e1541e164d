/**
 * The client's address for per-address sign-in limits. The server (src/server.ts) writes the peer
 * address of every request under /api/v1/auth/ into PEER_ADDRESS_HEADER, overwriting whatever a
 * client sent there. Behind reverse proxies (`identity.passwords.forwarded_for_hops` > 0) the
 * address is the X-Forwarded-For entry that many hops from the right (the one the nearest trusted
 * proxy saw); entries further left are the client's to invent and never used.
 */
export const PEER_ADDRESS_HEADER = "x-svc-peer-address";
export const AUTH_PATH_PREFIX = "/api/v1/auth/";

export function clientAddress(request: Request, forwardedHops: number): string {
  const peer = request.headers.get(PEER_ADDRESS_HEADER) || "unknown";
  if (forwardedHops <= 0) return peer;
  const hops = (request.headers.get("x-forwarded-for") ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  return hops.length >= forwardedHops ? hops[hops.length - forwardedHops]! : peer;
}
