/** Records of the identity domain as its service returns them (doc3 §2.3; field spelling per resource). */
import { StorageConstraintError } from "../storage/errors";

export const USER_STATUSES = ["ACTIVE", "SUSPENDED"] as const;
export type UserStatus = (typeof USER_STATUSES)[number];

export interface User {
  id: string;
  email: string;
  name: string | null;
  external_id: string | null;
  identity_provider: string | null;
  metadata: Record<string, unknown>;
  status: UserStatus;
  created_at: string;
  updated_at: string;
  deleted_at: string | null;
}

export interface Role {
  id: string;
  name: string;
  description: string;
  permissions: string[];
  is_system: boolean;
  created_at: string | null;
  updated_at: string | null;
}

export interface Assignment {
  id: string;
  userId: string;
  roleId: string;
  roleName: string;
  /** `workspace`, or `<resource_type>:<resource_id>` for one resource */
  scope: string;
  expiresAt: string | null;
  /** true from the moment expiresAt has passed: it grants nothing any more */
  expired: boolean;
  assignedBy: string | null;
  createdAt: string;
}

export const BUDGET_PERIODS = ["daily", "weekly", "monthly"] as const;
export type BudgetPeriod = (typeof BUDGET_PERIODS)[number];

export interface Team {
  id: string;
  name: string;
  description: string;
  parentTeamId: string | null;
  maxBudgetCents: number | null;
  budgetPeriod: BudgetPeriod;
  external_id: string | null;
  createdBy: string | null;
  createdAt: string;
  updatedAt: string;
  deletedAt: string | null;
}

export const INVITATION_STATUSES = ["pending", "accepted", "expired", "revoked"] as const;
export type InvitationStatus = (typeof INVITATION_STATUSES)[number];

/** Wall-clock milliseconds (Date.now; tests pass a fake). */
export type WallClock = () => number;

export const iso = (ms: number) => new Date(ms).toISOString();

/** Lower-cased, NFC-normalised text for case-insensitive matching in any script. */
export const fold = (s: string) => s.normalize("NFC").toLowerCase();

/** `{deleted: true, id}`: the answer of every delete (docs/decisions.md). */
export const deleted = (id: string) => ({ deleted: true as const, id });

/** A unique-index violation that raced past the read gets the same answer the read would have given. */
export async function uniqueOr409<T>(fn: () => Promise<T>, err: () => Error): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    if (e instanceof StorageConstraintError && e.kind === "unique") throw err();
    throw e;
  }
}
