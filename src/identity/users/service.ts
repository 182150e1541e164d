/**
 * Users (doc3 §4.4): email unique per workspace case-insensitively among live users, soft delete
 * (`deleted_at`; role assignments kept), status ACTIVE/SUSPENDED. Every change is reported through
 * `changed` so the per-request check (access.ts) forgets what it cached about the user at once.
 */
import { badRequest, conflict, notFound } from "../../core/errors";
import { uuid } from "../../core/ids";
import type { Listed } from "../../core/pagination";
import type { ForTenant } from "../../storage/scoped";
import { iso, uniqueOr409, USER_STATUSES, type User, type UserStatus, type WallClock } from "../types";
import type { UserStore } from "./store";

export const USER_LIMITS = { email: 320, name: 256, externalId: 256, identityProvider: 128, metadataBytes: 16_384, search: 320 } as const;

/** local@domain.tld without spaces or control characters (what mail systems deliver to). */
const EMAIL_RE = /^[^\s@\u0000-\u001f\u007f]+@[^\s@\u0000-\u001f\u007f]+\.[^\s@\u0000-\u001f\u007f.]+$/;

export function validEmail(email: string): boolean {
  return email.length <= USER_LIMITS.email && EMAIL_RE.test(email) && !email.includes("..");
}

export interface UserInput {
  email: string;
  name?: string | null;
  external_id?: string | null;
  identity_provider?: string | null;
  metadata?: Record<string, unknown>;
  status?: UserStatus;
}

export type UserPatch = Partial<Pick<User, "email" | "name" | "external_id" | "identity_provider" | "metadata" | "status">>;

function checkFields(u: UserPatch) {
  if (u.email !== undefined && !validEmail(u.email)) throw badRequest("email: not a valid e-mail address");
  if (u.name != null && u.name.length > USER_LIMITS.name) throw badRequest(`name: at most ${USER_LIMITS.name} characters`);
  if (u.external_id != null && u.external_id.length > USER_LIMITS.externalId) throw badRequest(`external_id: at most ${USER_LIMITS.externalId} characters`);
  if (u.identity_provider != null && u.identity_provider.length > USER_LIMITS.identityProvider)
    throw badRequest(`identity_provider: at most ${USER_LIMITS.identityProvider} characters`);
  if (u.status !== undefined && !USER_STATUSES.includes(u.status)) throw badRequest(`status: one of ${USER_STATUSES.join(", ")}`);
  if (u.metadata !== undefined) {
    if (typeof u.metadata !== "object" || u.metadata === null || Array.isArray(u.metadata)) throw badRequest("metadata: expected an object");
    if (Buffer.byteLength(JSON.stringify(u.metadata)) > USER_LIMITS.metadataBytes) throw badRequest(`metadata: at most ${USER_LIMITS.metadataBytes} bytes as JSON`);
  }
}

const duplicate = (email: string) => conflict(`a user with the email ${email} already exists in this workspace`);

export class UserService {
  constructor(
    private readonly store: ForTenant<UserStore>,
    private readonly clock: WallClock,
    private readonly changed: (tenantId: string, userId: string) => void,
  ) {}

  async create(tenantId: string, input: UserInput): Promise<User> {
    checkFields(input);
    const s = this.store(tenantId);
    const at = iso(this.clock());
    const user: User = {
      id: uuid(),
      email: input.email,
      name: input.name ?? null,
      external_id: input.external_id ?? null,
      identity_provider: input.identity_provider ?? null,
      metadata: input.metadata ?? {},
      status: input.status ?? "ACTIVE",
      created_at: at,
      updated_at: at,
      deleted_at: null,
    };
    return s.db.tx(async () => {
      if (await s.byEmail(user.email)) throw duplicate(user.email);
      await uniqueOr409(() => s.insert(user), () => duplicate(user.email));
      return user;
    });
  }

  get(tenantId: string, id: string): Promise<User | undefined> {
    return this.store(tenantId).get(id);
  }

  /** 404 when absent or soft-deleted */
  async require(tenantId: string, id: string): Promise<User> {
    const u = await this.get(tenantId, id);
    if (!u) throw notFound("user");
    return u;
  }

  /** the record as an admin reads it: a soft-deleted user is still found, with `deleted_at` set
   *  (doc3 §3: "record kept with deleted_at, excluded from lists"); 404 only when it never existed here */
  async view(tenantId: string, id: string): Promise<User> {
    const u = await this.store(tenantId).getAny(id);
    if (!u) throw notFound("user");
    return u;
  }

  findByEmail(tenantId: string, email: string): Promise<User | undefined> {
    return this.store(tenantId).byEmail(email);
  }

  findByExternalId(tenantId: string, externalId: string, identityProvider?: string): Promise<User | undefined> {
    return this.store(tenantId).byExternalId(externalId, identityProvider);
  }

  /** live users a login names: e-mail or SCIM userName, case-insensitively (SCIM's `userName eq`) */
  findByLogin(tenantId: string, login: string): Promise<User[]> {
    return this.store(tenantId).byLogin(login);
  }

  /** live users with this external id (SCIM's `externalId eq`) */
  findAllByExternalId(tenantId: string, externalId: string): Promise<User[]> {
    return this.store(tenantId).allByExternalId(externalId);
  }

  emailsOf(tenantId: string, ids: string[]): Promise<Map<string, string>> {
    return this.store(tenantId).emailsOf(ids);
  }

  async update(tenantId: string, id: string, patch: UserPatch): Promise<User> {
    checkFields(patch);
    const s = this.store(tenantId);
    const user = await s.db.tx(async () => {
      const u = await s.get(id);
      if (!u) throw notFound("user");
      const next: User = { ...u, updated_at: iso(this.clock()) };
      for (const k of ["email", "name", "external_id", "identity_provider", "metadata", "status"] as const)
        if (patch[k] !== undefined) (next as unknown as Record<string, unknown>)[k] = patch[k];
      if (next.email.toLowerCase() !== u.email.toLowerCase()) {
        const other = await s.byEmail(next.email);
        if (other && other.id !== id) throw duplicate(next.email);
      }
      await uniqueOr409(() => s.update(next), () => duplicate(next.email));
      return next;
    });
    this.changed(tenantId, id);
    return user;
  }

  /** soft delete: hidden from lists and lookups, refused by the per-request check, role assignments kept */
  async remove(tenantId: string, id: string): Promise<void> {
    const s = this.store(tenantId);
    await s.db.tx(async () => {
      const u = await s.get(id);
      if (!u) throw notFound("user");
      const at = iso(this.clock());
      await s.update({ ...u, updated_at: at, deleted_at: at });
    });
    this.changed(tenantId, id);
  }

  list(tenantId: string, q: { offset: number; limit: number; status?: UserStatus; search?: string }): Promise<Listed<User>> {
    return this.store(tenantId).list({ status: q.status, search: q.search }, q.limit, q.offset);
  }
}

