/**
 * @hostd/ui: the kit every page uses, so pages look and behave alike. Plugin pages import it by this name; the
 * page's import map resolves it (and preact, preact/hooks, preact/jsx-runtime, @preact/signals, htm/preact) to the
 * shell's own copies, so there is one of each in the page. See docs/ARCHITECTURE.md, "The web UI".
 */
export {
  ApiError,
  createApi,
  errorMessage,
  errorDetails,
  socketUrl,
  upload,
  type Api,
  type RequestOptions,
  type UploadOptions,
} from './api.ts'
export type { PageContext, Role, SessionUser, SseHandlers, SseOptions, Stream, SocketOptions } from './context.ts'
export { defineElement, type HostdElement } from './element.tsx'
export { Button, IconButton, type ButtonProps, type IconButtonProps } from './button.tsx'
export { Icon, Spinner, iconNames, type IconProps } from './icons.tsx'
export { Form, FieldErrors, TextField, TextArea, Select, Checkbox, type FormValues, type FormProps } from './form.tsx'
export { DataTable, type Column, type DataTableProps } from './table.tsx'
export { Dialog, ConfirmHost, confirm, type DialogProps, type ConfirmOptions } from './dialog.tsx'
export { toast, ToastRegion, type Toaster } from './toast.tsx'
export {
  Loading,
  Empty,
  ErrorState,
  ErrorDetails,
  ProgressBar,
  Badge,
  Async,
  StaleNotice,
  Callout,
  type AsyncProps,
  type CalloutProps,
  type Tone,
} from './feedback.tsx'
export {
  useResource,
  startRefreshing,
  type Resource,
  type ResourceOptions,
  type RefreshOptions,
  type Refresher,
} from './resource.ts'
export { PageHeader, Card, Tabs, KeyValues } from './layout.tsx'
export { TimeSeries, TimeChart, type ChartSeries, type TimeChartProps } from './chart.tsx'
export { LogView, ProgressList, Countdown, FileDrop, type ProgressItem } from './live.tsx'
export { formatBytes, formatRate, formatPercent, formatDuration, formatDateTime, formatRelative } from './format.ts'
export { CopyButton, type CopyButtonProps } from './copy.tsx'
export { adoptStyles } from './styles.ts'
export { useUniqueId } from './ids.ts'
export { PrivilegesMissing, isPrivilegesMissing, type PrivilegesMissingProps } from './privileges.tsx'
