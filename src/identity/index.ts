/**
 * Identity domain (doc3 §4.3–§4.7): users, roles and expiring assignments, hierarchical teams with
 * members and budgets over virtual keys (svc API keys), invitations, the permission audit and
 * virtual-key analytics; the per-request check of user tokens (access.ts) and the budget guard
 * the gateway asks before spending upstream (budget.ts). Part 2 (doc3 §4.1, §4.2): SSO
 * connections, domains verified by DNS and sign-in through OIDC and SAML (sso/), SCIM tokens,
 * activity and statistics and the SCIM 2.0 service provider at /scim/v2 (scim/).
 * Tables: users, roles, role_assignments, teams, team_members, team_keys, invitations,
 * sso_connections, sso_domains, sso_logins, sso_assertions, scim_tokens, scim_activities.
 */
import { Elysia } from "elysia";
import { createHmac } from "node:crypto";
import type { AsyncStorage } from "../storage/async";
import type { Kernel } from "../core/kernel";
import type { Domain } from "../core/domain";
import type { DocumentedOperation } from "../core/openapi";
import type { IdentityConfig } from "./config";
import type { AddCheck, KeyRegistry, OutboundCheck, OutboundFetch, TokenMinter, UsageReader } from "./ports";
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
import { BudgetGuard, type SharedBudgets } from "./budget";
import { LocalBus, TOPICS, type Bus } from "../core/hotstate";
import { SecretBox, SpKeys, resolveSecretKey } from "./sso/secrets";
import type { SharedSecretStore } from "../core/secrets";
import { SsoDirectory, SsoStore } from "./sso/store";
import { SsoService } from "./sso/service";
import { SignInService, SSO_PATHS } from "./sso/signin";
import { dnsTxtLookup, type TxtLookup } from "./sso/dns";
import { ssoNative, ssoRoutes } from "./sso/routes";
import { ScimTokenService, ScimTokenStore } from "./scim/tokens";
import { ActivityService, ActivityStore } from "./scim/activities";
import { scimAdminRoutes } from "./scim/routes";
import { ScimDirectory, scimProviderRoutes } from "./scim/provider";
import { PasswordStore } from "./passwords/store";
import { PasswordService } from "./passwords/service";
import { passwordRoutes } from "./passwords/routes";

export { IDENTITY_SECTIONS, type IdentityConfig } from "./config";
export { PEER_ADDRESS_HEADER, AUTH_PATH_PREFIX } from "./passwords/peer";
export { canonicalSecretKey } from "./sso/secrets";

/** OpenAPI entries of the routes served natively (the composition root adds them to /openapi.json). */
export function nativeDocs(): DocumentedOperation[] {
  return [
    {
      method: "POST",
      path: SSO_PATHS.acs,
      summary: "SAML assertion consumer service: an HTML form post of SAMLResponse and RelayState from the identity provider; answers an svc access token",
      description:
        "Where the identity provider posts the browser's SAML response: the assertion is validated and the user with the asserted e-mail signed in (created with the connection's default role when just-in-time provisioning is on); the answer is an svc access token acting as that user. Body: application/x-www-form-urlencoded; the assertion must be signed by the connection's certificate, for this service provider, in its time window, in response to an AuthnRequest svc sent, and not seen before",
      tags: ["sso"],
    },
  ];
}
export type { KeyRegistry, KeyRecord, UsageReader, HourlyUsage, AddCheck, OutboundCheck, OutboundFetch, TokenMinter } from "./ports";
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
  sso: SsoService;
  signin: SignInService;
  scimTokens: ScimTokenService;
  scimActivities: ActivityService;
  scim: ScimDirectory;
  passwords: PasswordService;
}

export interface IdentityDeps {
  config: IdentityConfig;
  /** the async storage (SQLite or PostgreSQL: docs/notes/postgres-plan.md) */
  storage: AsyncStorage;
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
  /** fetch through the outbound URL policy (OIDC discovery, JWKS, token endpoint, https-file verification) */
  outbound: OutboundFetch;
  /** the outbound policy's registration-time URL check (SSO connection URLs at create/update) */
  checkUrl?: OutboundCheck;
  /** http:// identity providers admitted (the outbound policy admits private targets: development, tests) */
  allowInsecureIdp: boolean;
  /** mints the access token an SSO sign-in answers */
  tokens: TokenMinter;
  /** the database path (generated SSO keys are kept beside it, like the JWT secret) */
  dataPath: string;
  /**
   * on a database shared by replicas: where generated key material (the SAML SP key pair) is created
   * once for all of them, sealed with the SSO secret box (default: files beside dataPath)
   */
  sharedKeys?: (box: SecretBox) => SharedSecretStore;
  warn: (message: string) => void;
  /** DNS TXT lookups (default: node:dns Resolver on identity.sso.dns_servers) */
  dns?: TxtLookup;
  /** invalidations to every replica (default: this process only) */
  bus?: Bus;
  /** team budgets decided in a store shared by the replicas (default: process memory) */
  sharedBudgets?: SharedBudgets;
}

/** The services alone, over a storage (tests call them without HTTP). */
export function identityServices(deps: Omit<IdentityDeps, "kernel" | "addCheck">): IdentityServices & { mailer?: Mailer } {
  const { storage, clock } = deps;
  const d = storage.dialect;
  const userStore = (t: string) => new UserStore(storage.tenant(t), d);
  const teamStore = (t: string) => new TeamStore(storage.tenant(t), d);
  let access: AccessCheck | undefined;
  let guard: BudgetGuard | undefined;
  // every change that cached answers depend on goes over the bus: this process forgets at once
  // (synchronous delivery), every other replica when the message arrives ("" = forget everything)
  const bus = deps.bus ?? new LocalBus();
  const parse = (p: string): { t?: string; u?: string; id?: string } => (p ? JSON.parse(p) : {});
  bus.subscribe(TOPICS.keyRevoked, (p) => {
    const m = parse(p);
    access?.forgetKey(m.t, m.id);
  });
  bus.subscribe(TOPICS.user, (p) => {
    const m = parse(p);
    access?.forget(m.t, m.u);
  });
  bus.subscribe(TOPICS.budget, (p) => guard?.invalidate(parse(p).t));
  // a key revoked here is refused at once to the tokens exchanged for it (access.ts caches keys' state)
  const keys: KeyRegistry = {
    create: (t, name, permissions) => deps.keys.create(t, name, permissions),
    list: (t) => deps.keys.list(t),
    get: (t, id) => deps.keys.get(t, id),
    revoke: async (t, id) => {
      await deps.keys.revoke(t, id);
      bus.publish(TOPICS.keyRevoked, JSON.stringify({ t, id }));
    },
  };
  const users = new UserService(userStore, clock, (t, u) => bus.publish(TOPICS.user, JSON.stringify({ t, u })));
  const roles = new RoleService((t) => new RoleStore(storage.tenant(t), d), users, clock, (t, u) => bus.publish(TOPICS.user, u === undefined ? "" : JSON.stringify({ t, u })));
  const teams = new TeamService(teamStore, userStore, keys, deps.usage, clock, (t) => bus.publish(TOPICS.budget, JSON.stringify({ t })));
  access = new AccessCheck(userStore, roles, keys, clock, deps.config.user_cache_ms);
  guard = new BudgetGuard(teamStore, deps.usage, clock, deps.sharedBudgets);
  const mailer = smtpMailer(deps.config.smtp);
  const invitationKey = createHmac("sha256", deps.secret).update("svc identity invitations").digest();
  let sso: SsoService | undefined;
  const passwords = new PasswordService(
    (t) => new PasswordStore(storage.tenant(t)),
    storage,
    users,
    deps.tokens,
    mailer,
    clock,
    deps.config.passwords,
    deps.config.public_url,
    async (t) => ((await sso?.list(t, { status: "active", offset: 0, limit: 1 }))?.total ?? 0) > 0,
    deps.warn,
  );
  const invitations = new InvitationService(
    (t) => new InvitationStore(storage.tenant(t)),
    storage,
    users,
    roles,
    passwords,
    mailer,
    invitationKey,
    deps.config.invitation_ttl_hours * 3_600_000,
    deps.config.public_url,
    clock,
  );
  const sc = deps.config.sso;
  const ssoStore = (t: string) => new SsoStore(storage.tenant(t));
  const directory = () => new SsoDirectory(storage.global("verified SSO domains are unique across workspaces; a sign-in state names its workspace"));
  const box = new SecretBox(resolveSecretKey(sc.secret_key, deps.dataPath, deps.warn));
  const dns = deps.dns ?? dnsTxtLookup(sc.dns_servers, sc.dns_timeout_ms);
  sso = new SsoService(ssoStore, directory, roles, box, deps.outbound, dns, clock, sc.file_verification_scheme, deps.allowInsecureIdp, deps.checkUrl);
  const spKeys = new SpKeys({ privateKey: sc.sp_private_key, certificate: sc.sp_certificate }, deps.dataPath, deps.warn, deps.sharedKeys?.(box));
  const signin = new SignInService(ssoStore, directory, sso, users, roles, deps.tokens, deps.outbound, spKeys, clock, {
    publicUrl: deps.config.public_url,
    spEntityId: sc.sp_entity_id,
    loginTtlSecs: sc.login_ttl_secs,
    tokenTtlSecs: sc.token_ttl_secs,
    clockSkewSecs: sc.clock_skew_secs,
    allowHttp: deps.allowInsecureIdp,
  });
  const scimTokens = new ScimTokenService((t) => new ScimTokenStore(storage.tenant(t)), () => storage.global("a presented SCIM token names its workspace"), clock);
  const scimActivities = new ActivityService((t) => new ActivityStore(storage.tenant(t)), clock, (t) => scimTokens.activeCount(t));
  return {
    users,
    roles,
    teams,
    invitations,
    audit: new AuditService(users, roles),
    keys: new VirtualKeyService(keys, teams, teamStore),
    analytics: new KeyAnalyticsService(keys, deps.usage, clock),
    guard,
    access,
    sso,
    signin,
    scimTokens,
    scimActivities,
    scim: new ScimDirectory(users, teams),
    passwords,
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
      .use(keyRoutes(deps.kernel, s.keys, s.analytics))
      .use(ssoRoutes(deps.kernel, s.sso, s.signin, async (t) => (await s.sso.list(t, { offset: 0, limit: 100 })).items.some((c) => c.samlConfig?.signRequests)))
      .use(scimAdminRoutes(deps.kernel, s.scimTokens, s.scimActivities))
      .use(scimProviderRoutes(deps.kernel, s.scimTokens, s.scim, s.scimActivities))
      .use(passwordRoutes(deps.kernel, s.passwords, deps.config.passwords.forwarded_for_hops)),
    native: ssoNative(s.signin),
    service: s,
    close: () => mailer?.close(),
  };
}
