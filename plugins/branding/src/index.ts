/**
 * The branding plugin: what the sign-in page shows (server name, headline, description, background image).
 * A plugin rather than the kernel: the kernel knows no feature, and branding needs only the sdk (settings, data
 * dir, audit, a public route). See README.md.
 */
import { definePlugin, tokens } from '@hostd/sdk'
import { brandingRoutes } from './routes.ts'
import { BrandingStore } from './service.ts'

export default definePlugin({
  id: 'branding',
  version: '1.0.0',
  kernel: '^1.1.0',
  description: 'Sign-in page branding: server name, headline, description and background image.',
  deps: { settings: tokens.settings, audit: tokens.audit, kernel: tokens.kernel },
  setup: ({ settings, kernel }) => new BrandingStore(settings, kernel.dataDir),
  routes: (r, { audit }, store) => brandingRoutes(r, store, audit),
  ui: {
    pages: [
      {
        path: '/branding',
        title: 'Branding',
        icon: 'sparkles',
        role: 'admin',
        module: 'ui/branding.tsx',
        element: 'branding-page',
      },
    ],
  },
})
