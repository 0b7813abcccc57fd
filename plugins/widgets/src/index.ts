/**
 * The widgets plugin: the dashboard's "bento" widgets (interface paths /api/bento/widgets). Admin-written shell
 * scripts run as an unprivileged account (HOSTD_WIDGETS_USER) on a schedule; everyone reads their cached output;
 * only admins see the scripts. See README.md.
 */
import { join } from 'node:path'
import { definePlugin, tokens } from '@hostd/sdk'
import { widgetRoutes } from './routes.ts'
import { WidgetService } from './service.ts'

export interface WidgetsPluginOptions {
  /** The account scripts run as; default HOSTD_WIDGETS_USER. */
  user?: string
  /** The parent of the per-widget folders; default HOSTD_WIDGETS_WORK_DIR, else /var/lib/hostd-widgets. */
  workDir?: string
}

export function createWidgetsPlugin(options: WidgetsPluginOptions = {}) {
  return definePlugin({
    id: 'widgets',
    version: '1.0.0',
    kernel: '^1.1.0',
    description: 'Dashboard widgets: admin scripts run as an unprivileged account, their output cached for everyone.',
    deps: { settings: tokens.settings, audit: tokens.audit, log: tokens.logger, kernel: tokens.kernel },
    setup: ({ settings, audit, log, kernel }) =>
      new WidgetService(
        { settings, audit, log },
        {
          user: options.user ?? (process.env.HOSTD_WIDGETS_USER || undefined),
          workDir: options.workDir ?? (process.env.HOSTD_WIDGETS_WORK_DIR || join('/var/lib', 'hostd-widgets')),
          dataDir: kernel.dataDir,
        },
      ),
    routes: (r, _deps, widgets) => widgetRoutes(r, widgets),
    start: (_deps, widgets) => widgets.start(),
    stop: (_deps, widgets) => widgets.stop(),
    ui: {
      cards: [
        {
          title: 'Widgets',
          module: 'ui/widgets.tsx',
          element: 'widgets-board',
          role: 'viewer',
          size: 'large',
          order: 15,
        },
      ],
    },
  })
}

export default createWidgetsPlugin()
