/**
 * Identity domain (doc3 §4.3–§4.7): users, roles and expiring assignments, hierarchical teams with
 * members and budgets over virtual keys (svc API keys), invitations, the permission audit and
 * virtual-key analytics; the per-request check of user tokens (access.ts) and the budget guard
 * the gateway asks before spending upstream (budget.ts).
 * Tables: users, roles, role_assignments, teams, team_members, team_keys, invitations.
 */
import { Elysia } from "elysia";
import { createHmac } from "node:crypto";
import type { Storage } from "../storage/scoped";
import type { Kernel } from "../core/kernel";
import type { Domain } from "../core/domain";
import type { IdentityConfig } from "./config";
import type { AddCheck, KeyRegistry, UsageReader } from "./ports";
import type { WallClock } from "./types";
import { IDENTITY_MIGRATIONS } from "./migrations";
import { UserStore } from "./users/store";
import { UserService } from "./users/service";
import { userRoutes } from "./users/routes";
import { RoleStore } from "./roles/store";
import { RoleService } from "./roles/service";
import { roleRoutes } from "./roles/routes";
import { TeamStore } from "./teams/store";
import { TeamService } from "./teams/service";
import { teamRoutes } from "./teams/routes";
import { InvitationStore } from "./invitations/store";
import { InvitationService } from "./invitations/service";
import { invitationRoutes } from "./invitations/routes";
import { smtpMailer, type Mailer } from "./invitations/mail";
import { AuditService } from "./audit/service";
import { auditRoutes } from "./audit/routes";
import { VirtualKeyService } from "./keys/service";
import { KeyAnalyticsService } from "./keys/analytics";
import { keyRoutes } from "./keys/routes";
import { AccessCheck } from "./access";
import { BudgetGuard } from "./budget";

export { IDENTITY_SECTIONS, type IdentityConfig } from "./config";
export type { KeyRegistry, KeyRecord, UsageReader, HourlyUsage, AddCheck } from "./ports";
export type { User, Role, Team, Assignment } from "./types";

export interface IdentityServices {
  users: UserService;
  roles: RoleService;
  teams: TeamService;
  invitations: InvitationService;
  audit: AuditService;
  keys: VirtualKeyService;
  analytics: KeyAnalyticsService;
  /** the gateway's SpendGuard: team budgets */
  guard: BudgetGuard;
  /** the per-request check (registered through deps.addCheck) */
  access: AccessCheck;
}

export interface IdentityDeps {
  config: IdentityConfig;
  storage: Storage;
  kernel: Kernel;
  /** svc API keys (the keys domain's ApiKeyService) */
  keys: KeyRegistry;
  /** the gateway's usage records */
  usage: UsageReader;
  /** registers the per-request check of principals (Authenticator.addCheck) */
  addCheck: AddCheck;
  /** server secret invitation tokens are derived from (never stored) */
  secret: string;
  /** wall clock, ms */
  clock: WallClock;
}

/** The services alone, over a storage (tests call them without HTTP). */
export function identityServices(deps: Omit<IdentityDeps, "kernel" | "addCheck">): IdentityServices & { mailer?: Mailer } {
  const { storage, clock } = deps;
  const userStore = (t: string) => new UserStore(storage.tenant(t));
  const teamStore = (t: string) => new TeamStore(storage.tenant(t));
  let access: AccessCheck | undefined;
  let guard: BudgetGuard | undefined;
  const users = new UserService(userStore, clock, (t, u) => access?.forget(t, u));
  const roles = new RoleService((t) => new RoleStore(storage.tenant(t)), users, clock, (t, u) => access?.forget(u === undefined ? undefined : t, u));
  const teams = new TeamService(teamStore, userStore, deps.keys, deps.usage, clock, (t) => guard?.invalidate(t));
  access = new AccessCheck(userStore, roles, deps.keys, clock, deps.config.user_cache_ms);
  guard = new BudgetGuard(teamStore, deps.usage, clock);
  const mailer = smtpMailer(deps.config.smtp);
  const invitationKey = createHmac("sha256", deps.secret).update("svc identity invitations").digest();
  const invitations = new InvitationService(
    (t) => new InvitationStore(storage.tenant(t)),
    storage,
    users,
    roles,
    mailer,
    invitationKey,
    deps.config.invitation_ttl_hours * 3_600_000,
    deps.config.public_url,
    clock,
  );
  return {
    users,
    roles,
    teams,
    invitations,
    audit: new AuditService(users, roles),
    keys: new VirtualKeyService(deps.keys, teams, teamStore),
    analytics: new KeyAnalyticsService(deps.keys, deps.usage, clock),
    guard,
    access,
    mailer,
  };
}

export function create(deps: IdentityDeps): Domain<IdentityServices> {
  const { mailer, ...s } = identityServices(deps);
  deps.addCheck(s.access.check);
  return {
    name: "identity",
    migrations: IDENTITY_MIGRATIONS,
    routes: new Elysia({ name: "svc-identity" })
      .use(userRoutes(deps.kernel, s.users, s.roles))
      .use(roleRoutes(deps.kernel, s.roles))
      .use(teamRoutes(deps.kernel, s.teams, s.keys))
      .use(invitationRoutes(deps.kernel, s.invitations))
      .use(auditRoutes(deps.kernel, s.audit))
      .use(keyRoutes(deps.kernel, s.keys, s.analytics)),
    service: s,
    close: () => mailer?.close(),
  };
}
