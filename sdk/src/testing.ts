/**
 * The plugin author's test harness: boots a real kernel with just your plugins, replaces the services they depend on
 * with fakes (`services: [bind(token, fake)]`), and the small helpers plugin tests share. See
 * examples/hello-plugin/test for a complete example.
 *
 * Light to import: the kernel is loaded when a test starts one, so a file that only needs `eventually` or `freePort`
 * does not load Fastify, the ORM and the rest.
 */
import type { TestKernel, TestKernelOptions } from '@hostd/kernel/testing'

export type {
  TestKernel,
  TestKernelOptions,
  TestPlugins,
  InstallOptions,
  ExtensionEntry,
  TestRequest,
  RouteSamples,
  RouteSampleContext,
  RouteSampleRequest,
} from '@hostd/kernel/testing'
export { eventually, freePort, writePluginFolder, type PluginFolder } from './testing-helpers.ts'
export { openSocket, type SocketMessage, type SocketSession } from './testing-socket.ts'

/**
 * Boots a real kernel (SQLite file in a temporary folder, real sign-in and role checks, the server's own dispatcher)
 * with just the given plugins, as Backstage's `startTestBackend` does:
 *
 *   const t = await startTestKernel({ plugins: [myPlugin], services: [bind(tokens.helper, fakeHelper)] })
 *   const res = await t.inject({ url: '/api/hello', as: 'viewer' })
 *
 * `t.plugins` installs, upgrades and reloads a plugin from its folder or tarball as the daemon does, and answers its
 * `GET /api/extensions` entry (`await t.plugins.install('./my-plugin-1.0.0.tgz')`).
 */
export async function startTestKernel(options: TestKernelOptions = {}): Promise<TestKernel> {
  const harness = await import('@hostd/kernel/testing')
  return harness.startTestKernel(options)
}
