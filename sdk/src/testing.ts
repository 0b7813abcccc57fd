/**
 * The plugin author's test harness: boots a real kernel with just your plugins.
 * See examples/hello-plugin/test for a complete example.
 */
export { startTestKernel } from '@hostd/kernel/testing'
export type {
  TestKernel,
  TestKernelOptions,
  TestRequest,
  RouteSamples,
  RouteSampleContext,
  RouteSampleRequest,
} from '@hostd/kernel/testing'
