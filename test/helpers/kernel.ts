/**
 * A bare kernel for unit tests of routes and hooks: no domains, an authenticator with a test
 * secret, no rate limits, no request log.
 */
import { Kernel, RequestObserver } from "../../src/core/kernel";
import { Authenticator, TokenService } from "../../src/core/auth";
import { Metrics } from "../../src/core/metrics";
import { Logger } from "../../src/core/log";

export const TEST_SECRET = "kernel-test-secret-kernel-test-secret";

export function testKernel(opts: { maxBodyBytes?: number; maxHeaderBytes?: number } = {}) {
  const log = new Logger("error");
  const tokens = new TokenService(TEST_SECRET);
  return {
    tokens,
    kernel: new Kernel({
      auth: new Authenticator(tokens),
      limiter: { enforce() {} },
      observer: new RequestObserver(new Metrics({ defaultMetrics: false }), log, false),
      log,
      maxBodyBytes: opts.maxBodyBytes ?? 1024 * 1024,
      maxHeaderBytes: opts.maxHeaderBytes ?? 16 * 1024,
    }),
  };
}
