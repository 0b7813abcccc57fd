import { defineError } from '@hostd/sdk'

/** Every error code this plugin answers with (listed in the README). */
export const BrandingErrors = {
  textInvalid: defineError('HOSTD_BRANDING_TEXT_INVALID', 400, 'Branding text holds control characters'),
  imageType: defineError('HOSTD_BRANDING_IMAGE_TYPE', 415, 'The background must be a PNG, JPEG or WebP image'),
  imageTooLarge: defineError('HOSTD_BRANDING_IMAGE_TOO_LARGE', 413, 'The background image is too large'),
  noBackground: defineError('HOSTD_BRANDING_NO_BACKGROUND', 404, 'No background image is set'),
} as const
