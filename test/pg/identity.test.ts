/**
 * Identity over HTTP on PostgreSQL: users, teams, team budgets on the proxy, roles, invitations, SSO connections, SCIM tokens.
 * (test/helpers/backend.ts: each file below runs again here, every gateway on a fresh PostgreSQL schema)
 */
import { onPostgres } from "../helpers/backend";

onPostgres("identity/users.test.ts", "identity/teams.test.ts", "identity/budget.test.ts", "identity/roles.test.ts", "identity/invitations.test.ts", "identity/sso.test.ts", "identity/scim.test.ts");
