/**
 * Built-in roles (`is_system`): the same in every workspace, defined here (not stored), with fixed
 * ids so that assignments and links name them stably. They cannot be changed or deleted.
 */
import type { Role } from "../types";

const builtin = (n: number, name: string, description: string, permissions: string[]): Role => ({
  id: `00000000-0000-4000-8000-${String(n).padStart(12, "0")}`,
  name,
  description,
  permissions,
  is_system: true,
  created_at: null,
  updated_at: null,
});

export const BUILTIN_ROLES: readonly Role[] = [
  builtin(1, "admin", "Workspace administrator: every permission", ["WorkspaceAdmin"]),
  builtin(2, "editor", "Manages keys, roles and configuration; reads metrics, logs and keys", ["ManageKeys", "ManageConfig", "ViewKeys", "ViewLogs", "ViewMetrics"]),
  builtin(3, "viewer", "Reads metrics, logs and keys", ["ViewMetrics", "ViewLogs", "ViewKeys"]),
];

const byId = new Map(BUILTIN_ROLES.map((r) => [r.id, r]));
const byName = new Map(BUILTIN_ROLES.map((r) => [r.name, r]));

export const builtinById = (id: string) => byId.get(id);
export const builtinByName = (name: string) => byName.get(name.normalize("NFC").toLowerCase());
