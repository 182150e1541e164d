/** TypeBox request schemas of the identity endpoints: every field limit is here (400 validation_error). */
import { t } from "elysia";
import { pageQuery, snakePageQuery } from "../core/pagination";
import { ACTIONS, PERMISSION_NAMES, RESOURCE_TYPES } from "../core/permissions";
import { BUDGET_PERIODS, INVITATION_STATUSES, USER_STATUSES } from "./types";
import { USER_LIMITS } from "./users/service";
import { ROLE_LIMITS } from "./roles/service";
import { TEAM_LIMITS } from "./teams/service";
import { INVITATION_LIMITS } from "./invitations/service";
import { KEY_STATUSES } from "./keys/service";
import { ANALYTICS_PERIODS } from "./keys/analytics";

/** An enum as a union of literals (an optional t.UnionEnum would default to its first value). */
const OneOf = <V extends string>(values: readonly V[]) => t.Union(values.map((v) => t.Literal(v)));

export const Uuid = t.String({ format: "uuid" });
export const IdParams = t.Object({ id: Uuid });
export const UserRoleParams = t.Object({ id: Uuid, role_id: Uuid });
const QueryBool = t.Boolean();

// ---- users (snake_case)

// the address itself is checked by the service (validEmail): one rule for HTTP, SCIM and SSO
const Email = t.String({ minLength: 3, maxLength: USER_LIMITS.email });
const UserName = t.Nullable(t.String({ maxLength: USER_LIMITS.name }));
const ExternalId = t.Nullable(t.String({ minLength: 1, maxLength: USER_LIMITS.externalId }));
const Provider = t.Nullable(t.String({ minLength: 1, maxLength: USER_LIMITS.identityProvider }));
const Metadata = t.Record(t.String(), t.Unknown());
const UserStatus = OneOf(USER_STATUSES);

export const UserCreate = t.Object({
  email: Email,
  name: t.Optional(UserName),
  external_id: t.Optional(ExternalId),
  identity_provider: t.Optional(Provider),
  metadata: t.Optional(Metadata),
  status: t.Optional(UserStatus),
});
export const UserUpdate = t.Object({
  email: t.Optional(Email),
  name: t.Optional(UserName),
  external_id: t.Optional(ExternalId),
  identity_provider: t.Optional(Provider),
  metadata: t.Optional(Metadata),
  status: t.Optional(UserStatus),
});
export const UserListQuery = t.Object({
  ...snakePageQuery(),
  status: t.Optional(UserStatus),
  search: t.Optional(t.String({ minLength: 1, maxLength: USER_LIMITS.search })),
});

// ---- roles (snake_case lists, page_size up to 1000)

const Permissions = t.Array(OneOf(PERMISSION_NAMES), { maxItems: PERMISSION_NAMES.length * 2 });
export const RoleCreate = t.Object({
  name: t.String({ minLength: 1, maxLength: ROLE_LIMITS.name }),
  description: t.Optional(t.String({ maxLength: ROLE_LIMITS.description })),
  /** doc3 §4.5 does not mark it required: a role may start empty and get its permissions by PATCH */
  permissions: t.Optional(Permissions),
});
export const RoleUpdate = t.Object({
  name: t.Optional(t.String({ minLength: 1, maxLength: ROLE_LIMITS.name })),
  description: t.Optional(t.String({ maxLength: ROLE_LIMITS.description })),
  permissions: t.Optional(Permissions),
});
export const RoleListQuery = t.Object({
  ...snakePageQuery(1000),
  name: t.Optional(t.String({ minLength: 1, maxLength: ROLE_LIMITS.name })),
  is_system: t.Optional(QueryBool),
  permission: t.Optional(OneOf(PERMISSION_NAMES)),
});
export const AssignBody = t.Object({
  roleId: Uuid,
  scope: t.Optional(t.Nullable(t.String({ minLength: 1, maxLength: ROLE_LIMITS.scope }))),
  expiresAt: t.Optional(t.Nullable(t.String({ format: "date-time" }))),
});
export const RevokeQuery = t.Object({ scope: t.Optional(t.String({ minLength: 1, maxLength: ROLE_LIMITS.scope })) });

// ---- teams (camelCase)

const BudgetCents = t.Nullable(t.Integer({ minimum: 0, maximum: TEAM_LIMITS.maxBudgetCents }));
// doc3 §8 "team name 128 chars": the service counts characters (code points); a schema maxLength would count
// UTF-16 units and refuse 128 emoji
const TeamName = t.String({ minLength: 1, description: `at most ${TEAM_LIMITS.name} characters` });
export const TeamCreate = t.Object({
  name: TeamName,
  description: t.Optional(t.String({ maxLength: TEAM_LIMITS.description })),
  parentTeamId: t.Optional(t.Nullable(Uuid)),
  maxBudgetCents: t.Optional(BudgetCents),
  budgetPeriod: t.Optional(OneOf(BUDGET_PERIODS)),
});
export const TeamUpdate = t.Partial(TeamCreate);
export const TeamListQuery = t.Object({ ...pageQuery(), includeDeleted: t.Optional(QueryBool) });
/** doc3 §2.3 "soft-deleted teams are excluded unless requested": a single get can request one too */
export const TeamGetQuery = t.Object({ includeDeleted: t.Optional(QueryBool) });
export const MembersBody = t.Object({ userIds: t.Array(Uuid, { minItems: 1, maxItems: 1000 }) });

// ---- invitations (camelCase bodies; `page_size` as doc3 §4.6 lists it, `pageSize` too)

export const InviteBody = t.Object({
  emails: t.Array(t.String({ maxLength: USER_LIMITS.email }), { minItems: 1, maxItems: INVITATION_LIMITS.emails }),
  roleId: t.Optional(t.Nullable(Uuid)),
  message: t.Optional(t.Nullable(t.String({ maxLength: INVITATION_LIMITS.message }))),
});
export const InvitationListQuery = t.Object({
  page: pageQuery().page,
  // no defaults: the route tells which of the two spellings was sent (default 20)
  pageSize: t.Optional(t.Integer({ minimum: 1, maximum: 100 })),
  page_size: t.Optional(t.Integer({ minimum: 1, maximum: 100 })),
  email: t.Optional(t.String({ minLength: 1, maxLength: USER_LIMITS.email })),
  status: t.Optional(OneOf(INVITATION_STATUSES)),
});
const Token = t.String({ minLength: 1, maxLength: 256 });
export const AcceptQuery = t.Object({ token: Token });
export const AcceptBody = t.Object({
  token: Token,
  name: t.Optional(t.Nullable(t.String({ maxLength: USER_LIMITS.name }))),
  /** the password the user will sign in with (policy: passwords/policy.ts) */
  password: t.Optional(t.String({ minLength: 1, maxLength: 1_024 })),
});

// ---- permission audit (snake_case query)

export const TreeQuery = t.Object({ user_id: Uuid, resource_type: t.Optional(OneOf(RESOURCE_TYPES)) });
export const CheckQuery = t.Object({
  user_id: Uuid,
  resource_type: OneOf(RESOURCE_TYPES),
  action: OneOf(ACTIONS),
  resource_id: t.Optional(t.String({ minLength: 1, maxLength: 200 })),
});

// ---- virtual keys (camelCase)

export const KeyCreate = t.Object({
  name: t.String({ minLength: 1, maxLength: 128 }),
  permissions: t.Optional(Permissions),
  teamId: t.Optional(t.Nullable(Uuid)),
});
export const KeyAssign = t.Object({ teamId: t.Nullable(Uuid) });
export const KeyListQuery = t.Object({ ...pageQuery(), teamId: t.Optional(Uuid), status: t.Optional(OneOf(KEY_STATUSES)) });
export const AnalyticsQuery = t.Object({ period: t.Optional(OneOf(Object.keys(ANALYTICS_PERIODS) as Array<keyof typeof ANALYTICS_PERIODS>)) });
