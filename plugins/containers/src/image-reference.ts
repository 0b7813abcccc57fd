/**
 * Image references: one schema and one check for every field that names an image (RunSpec.image, pull, delete),
 * so a malformed one is a 400 that says what is wrong instead of an engine failure. The grammar is the one the
 * engine parses with (github.com/distribution/reference, regexp.go and reference.go):
 *
 *   reference := name [":" tag] ["@" digest]
 *   name      := [domain "/"] path-component ["/" path-component]*     (at most 255 characters)
 *   domain    := domain-component ["." domain-component]* [":" port] | "[" ipv6 "]" [":" port]
 *   path-component := [a-z0-9]+ (separator [a-z0-9]+)*,  separator := [._] | "__" | "-"+
 *   tag       := [\w][\w.-]{0,127}
 *   digest    := algorithm ":" hex  (sha256: 64, sha384: 96, sha512: 128 lowercase hex digits)
 *
 * An image id (`sha256:<64 hex>`, or a hex prefix of one) also matches, as it does for the engine.
 */
import { Type } from '@hostd/sdk'
import { ContainerErrors } from './errors.ts'

const alphanumeric = '[a-z0-9]+'
const separator = '(?:[._]|__|[-]+)'
const pathComponent = `${alphanumeric}(?:${separator}${alphanumeric})*`
const domainComponent = '(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])'
const domainName = `${domainComponent}(?:\\.${domainComponent})*`
const ipv6 = '\\[(?:[a-fA-F0-9:]+)\\]'
const domainAndPort = `(?:${domainName}|${ipv6})(?::[0-9]+)?`
const name = `(?:${domainAndPort}/)?${pathComponent}(?:/${pathComponent})*`
const tag = '[\\w][\\w.-]{0,127}'
const digest = '[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}'
const REFERENCE = new RegExp(`^(${name})(?::(${tag}))?(?:@(${digest}))?$`)

/** The engine's name limit (NameTotalLengthMax). */
export const NAME_MAX = 255
/** Name, tag and the longest digest with their separators: 255 + 1 + 128 + 1 + 135. */
export const REFERENCE_MAX = 520
const DIGEST_HEX = new Map([
  ['sha256', 64],
  ['sha384', 96],
  ['sha512', 128],
])

export const ImageReferenceSchema = Type.String({
  minLength: 1,
  maxLength: REFERENCE_MAX,
  description:
    'An image reference, [registry[:port]/]name[:tag][@digest] (e.g. nginx:1.27, ghcr.io/org/app@sha256:…), or an image id',
})

export interface ImageReference {
  name: string
  tag: string | null
  digest: string | null
}

const SHAPE = '[registry[:port]/]name[:tag][@digest], e.g. nginx:1.27'

function refuse(field: string, value: string, why: string): never {
  const shown = JSON.stringify(value.length > 80 ? `${value.slice(0, 80)}…` : value)
  throw ContainerErrors.invalidImageReference(`${field} ${shown} is not an image reference: ${why} (${SHAPE})`)
}

/** Parses `value` by the reference grammar; throws 400 HOSTD_CONTAINERS_IMAGE_REFERENCE_INVALID saying why not. */
export function parseImageReference(value: string, field = 'image'): ImageReference {
  if (value.length === 0) refuse(field, value, 'it is empty')
  if (value.includes('\0')) refuse(field, value.replaceAll('\0', '\\0'), 'it holds a NUL character')
  if (!value.isWellFormed()) refuse(field, value.toWellFormed(), 'it holds a lone UTF-16 surrogate')
  if (/[^\x21-\x7e]/.test(value)) refuse(field, value, 'only printable ASCII without spaces is allowed')
  if (value.length > REFERENCE_MAX) refuse(field, value, `it is longer than ${REFERENCE_MAX} characters`)
  const m = REFERENCE.exec(value)
  if (!m) {
    if (REFERENCE.test(value.toLowerCase())) refuse(field, value, 'the repository name must be lowercase')
    refuse(field, value, 'it does not follow the reference grammar')
  }
  const [, repo, tagPart, digestPart] = m
  if (repo!.length > NAME_MAX) refuse(field, value, `the name is longer than ${NAME_MAX} characters`)
  if (digestPart) {
    const [algorithm, hex] = digestPart.split(':') as [string, string]
    const want = DIGEST_HEX.get(algorithm)
    if (!want) refuse(field, value, `the digest algorithm "${algorithm}" is not supported (sha256, sha384, sha512)`)
    if (hex.length !== want || !/^[a-f0-9]+$/.test(hex))
      refuse(field, value, `a ${algorithm} digest is ${want} lowercase hex digits`)
  }
  return { name: repo!, tag: tagPart ?? null, digest: digestPart ?? null }
}

/** The repository part of a reference: `127.0.0.1:5000/test/app:1` -> `127.0.0.1:5000/test/app`. */
export function repositoryOf(ref: string): string {
  const noDigest = ref.split('@')[0]!
  const slash = noDigest.lastIndexOf('/')
  const colon = noDigest.lastIndexOf(':')
  return colon > slash ? noDigest.slice(0, colon) : noDigest
}

/**
 * A name as the engine stores it (reference.ParseNormalizedNamed): `nginx` -> `docker.io/library/nginx`,
 * `me/app` -> `docker.io/me/app`, `index.docker.io/me/app` -> `docker.io/me/app`; a name with a domain stays.
 */
export function fullName(name: string): string {
  const slash = name.indexOf('/')
  const first = slash < 0 ? '' : name.slice(0, slash)
  const hasDomain = slash >= 0 && (/[.:]/.test(first) || first === 'localhost' || first !== first.toLowerCase())
  let domain = hasDomain ? first : 'docker.io'
  let rest = hasDomain ? name.slice(slash + 1) : name
  if (domain === 'index.docker.io') domain = 'docker.io'
  if (domain === 'docker.io' && !rest.includes('/')) rest = `library/${rest}`
  return `${domain}/${rest}`
}

/** The reference as the engine stores it: full name, `:latest` when neither tag nor digest is given. */
export function canonicalReference(value: string): string {
  const ref = parseImageReference(value, 'reference')
  const tag = ref.tag ?? (ref.digest ? null : 'latest')
  return `${fullName(ref.name)}${tag ? `:${tag}` : ''}${ref.digest ? `@${ref.digest}` : ''}`
}
