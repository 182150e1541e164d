/**
 * TXT lookups for domain verification through node:dns/promises' Resolver: the configured servers
 * (`identity.sso.dns_servers`, e.g. ["127.0.0.1:5353"] in tests) or the system's, a per-query
 * timeout and two tries. Answers are the TXT strings, each record's chunks joined (RFC 7208 §3.3).
 */
import { Resolver } from "node:dns/promises";

export interface TxtLookup {
  /** the TXT records of a name; [] when the name or its TXT records do not exist */
  txt(name: string): Promise<string[]>;
}

const ABSENT = new Set(["ENOTFOUND", "ENODATA", "NXDOMAIN", "ENONAME"]);

/** `servers`: comma-separated (identity.sso.dns_servers); an invalid entry fails at start-up */
export function dnsTxtLookup(serverList: string | undefined, timeoutMs: number): TxtLookup {
  const servers = serverList?.split(",").map((s) => s.trim()).filter(Boolean);
  if (servers?.length) {
    try {
      new Resolver().setServers(servers);
    } catch (e) {
      throw new Error(`identity.sso.dns_servers: ${(e as Error).message} (e.g. "1.1.1.1,127.0.0.1:5353")`);
    }
  }
  return {
    async txt(name) {
      const r = new Resolver({ timeout: timeoutMs, tries: 2 });
      if (servers?.length) r.setServers(servers);
      try {
        return (await r.resolveTxt(name)).map((chunks) => chunks.join(""));
      } catch (e) {
        if (ABSENT.has((e as { code?: string }).code ?? "")) return [];
        throw e;
      }
    },
  };
}
