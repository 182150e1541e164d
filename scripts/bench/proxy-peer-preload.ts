/**
 * Preload for the peer gateway (@portkey-ai/gateway under Bun): it listens on all interfaces;
 * force every listen() onto loopback so the benchmark never opens a public port.
 */
import http from "node:http";
import net from "node:net";

for (const proto of [net.Server.prototype, http.Server.prototype] as any[]) {
  const listen = proto.listen;
  proto.listen = function (...args: any[]) {
    if (typeof args[0] === "object" && args[0] !== null) args[0] = { ...args[0], host: "127.0.0.1" };
    else if (typeof args[0] === "number" || typeof args[0] === "string") {
      const port = args[0];
      const cb = args.find((a) => typeof a === "function");
      return listen.call(this, { port: Number(port), host: "127.0.0.1" }, cb);
    }
    return listen.apply(this, args);
  };
}
console.clear = () => {};
