import { defineError } from '@hostd/sdk'

/** Every error code this plugin answers with (listed in the README). */
export const CatalogErrors = {
  appNotFound: defineError('HOSTD_CATALOG_APP_NOT_FOUND', 404, 'No such app in the catalog'),
  sourceNotFound: defineError('HOSTD_CATALOG_SOURCE_NOT_FOUND', 404, 'No such catalog source'),
  notCatalogContainer: defineError(
    'HOSTD_CATALOG_NOT_INSTALLED',
    404,
    'No container installed from the catalog by that id or name',
  ),
  valuesInvalid: defineError('HOSTD_CATALOG_VALUES_INVALID', 400, "The form values do not fit the app's fields"),
  sourceInvalid: defineError(
    'HOSTD_CATALOG_SOURCE_INVALID',
    400,
    'A catalog source is a directory path or an HTTPS URL',
  ),
  sourceExists: defineError('HOSTD_CATALOG_SOURCE_EXISTS', 409, 'That catalog source is already added'),
  sourceBuiltin: defineError('HOSTD_CATALOG_SOURCE_BUILTIN', 409, 'The built-in catalog cannot be removed'),
  stacksUnavailable: defineError(
    'HOSTD_CATALOG_STACKS_UNAVAILABLE',
    503,
    'This app is a stack: the stacks plugin must be enabled to install it',
  ),
} as const
