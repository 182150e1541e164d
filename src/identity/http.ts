/** Small helpers the identity routes share. */
import type { Principal } from "../core/auth";

/** The origin the caller reached the gateway at (invitation links when no public URL is configured). */
export const originOf = (request: Request) => new URL(request.url).origin;

/** Who did it, as stored in created_by / assigned_by / invited_by. */
export const actor = (p: Principal) => p.sub;

/** OpenAPI tag of a route */
export const tag = (name: string) => ({ tags: [name] });
