import { defineError } from '@hostd/sdk'

/** Every error code the fleet plugin answers with; each is described in README.md. */
export const FleetErrors = {
  notJoined: defineError('HOSTD_FLEET_NOT_JOINED', 409, 'This host is not a member of a fleet: join one first'),
  alreadyJoined: defineError('HOSTD_FLEET_ALREADY_JOINED', 409, 'This host is already a member of a fleet'),
  unreachable: defineError('HOSTD_FLEET_UNREACHABLE', 503, 'The fleet (NATS) cannot be reached now'),
  hostUnknown: defineError('HOSTD_FLEET_HOST_UNKNOWN', 404, 'No member of the fleet has this name'),
  hostDown: defineError('HOSTD_FLEET_HOST_DOWN', 504, 'That member did not answer in time: it is down or unreachable'),
  codeInvalid: defineError('HOSTD_FLEET_CODE_INVALID', 400, 'This join code is malformed'),
  codeRefused: defineError('HOSTD_FLEET_CODE_REFUSED', 403, 'This join code was refused: used, expired or unknown'),
  credentialsNeeded: defineError(
    'HOSTD_FLEET_CREDENTIALS_NEEDED',
    400,
    "Give the new host's NATS user and password: this host does not run the fleet's NATS server",
  ),
  assertionRefused: defineError('HOSTD_FLEET_ASSERTION_REFUSED', 403, 'The calling member could not be verified'),
  tooLarge: defineError('HOSTD_FLEET_TOO_LARGE', 502, 'The answer is larger than one NATS message allows'),
  pathRefused: defineError('HOSTD_FLEET_PATH_REFUSED', 403, 'This path cannot be called on another member'),
  serverMissing: defineError(
    'HOSTD_FLEET_SERVER_MISSING',
    424,
    'nats-server is not installed: install Debian\'s "nats-server" package or point HOSTD_FLEET_NATS_URL at a NATS cluster',
  ),
} as const
