/** viewer < operator < admin; 'public' is the explicit choice of no sign-in at all. */
export const ROLES = ['viewer', 'operator', 'admin'] as const
export type Role = (typeof ROLES)[number]
export type RouteRole = Role | 'public'

export function roleRank(role: Role): number {
  return ROLES.indexOf(role)
}

/** True when `have` satisfies a route that requires `need`. */
export function roleSatisfies(have: Role, need: RouteRole): boolean {
  return need === 'public' || roleRank(have) >= roleRank(need)
}

export function isRole(value: unknown): value is Role {
  return typeof value === 'string' && (ROLES as readonly string[]).includes(value)
}
