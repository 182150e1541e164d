import { Type as T, type Static } from "@sinclair/typebox";
import { Section } from "../core/config";

export const RATE_LIMIT_SECTIONS = {
  rate_limits: Section({
    enabled: T.Boolean({ default: true }),
  }),
};

export type RateLimitConfig = Static<(typeof RATE_LIMIT_SECTIONS)["rate_limits"]>;
