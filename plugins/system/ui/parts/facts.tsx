/** The host's facts (`/api/system/info`): the overview's "This server" card and the system page show the same list. */
import { Async, KeyValues, formatBytes, formatDateTime, formatDuration, useResource, type PageContext } from '@hostd/ui'
import type { SystemInfo } from './model.ts'

/** `detailed` adds free memory and the boot time; a new `generation` reads the facts again. */
export function HostFacts({
  ctx,
  detailed = false,
  generation = 0,
}: {
  ctx: PageContext
  detailed?: boolean
  generation?: number
}) {
  const info = useResource((signal) => ctx.api.get<SystemInfo>('/api/system/info', { signal }), [generation])
  return (
    <Async resource={info} label="Reading the host's facts…">
      {(i) => (
        <KeyValues
          items={[
            ['Host name', i.hostname],
            ['System', i.os.prettyName ?? i.os.name ?? 'unknown'],
            ['Kernel', `${i.kernel.release} (${i.arch})`],
            ['Processor', `${i.cpu.model ?? 'unknown'} · ${i.cpu.cores} cores, ${i.cpu.threads} threads`],
            [
              'Memory',
              detailed
                ? `${formatBytes(i.memory.totalBytes)} (${formatBytes(i.memory.availableBytes)} available)`
                : formatBytes(i.memory.totalBytes),
            ],
            ['Hardware', [i.hardware.vendor, i.hardware.product].filter(Boolean).join(' ') || 'virtual or unknown'],
            ['Up for', formatDuration(i.uptimeSeconds)],
            ...(detailed ? [['Started', formatDateTime(i.bootTime)] as [string, string]] : []),
          ]}
        />
      )}
    </Async>
  )
}
