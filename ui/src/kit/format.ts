const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB']

/** 1536 -> "1.5 KiB". */
export function formatBytes(bytes: number | null | undefined, digits = 1): string {
  if (bytes === null || bytes === undefined || !Number.isFinite(bytes)) return '–'
  let value = Math.abs(bytes)
  let unit = 0
  while (value >= 1024 && unit < UNITS.length - 1) {
    value /= 1024
    unit++
  }
  return `${bytes < 0 ? '-' : ''}${unit === 0 ? value : value.toFixed(value >= 100 ? 0 : digits)} ${UNITS[unit]}`
}

/** Bytes per second -> "1.5 MiB/s". */
export function formatRate(bytesPerSecond: number | null | undefined): string {
  return bytesPerSecond === null || bytesPerSecond === undefined ? '–' : `${formatBytes(bytesPerSecond)}/s`
}

export function formatPercent(value: number | null | undefined, digits = 0): string {
  return value === null || value === undefined || !Number.isFinite(value) ? '–' : `${value.toFixed(digits)} %`
}

/** 93784 -> "1 d 2 h". The two largest units. */
export function formatDuration(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined || !Number.isFinite(seconds)) return '–'
  const parts: [number, string][] = [
    [Math.floor(seconds / 86400), 'd'],
    [Math.floor((seconds % 86400) / 3600), 'h'],
    [Math.floor((seconds % 3600) / 60), 'min'],
    [Math.floor(seconds % 60), 's'],
  ]
  const first = parts.findIndex(([n]) => n > 0)
  if (first < 0) return '0 s'
  return parts
    .slice(first, first + 2)
    .filter(([n]) => n > 0)
    .map(([n, u]) => `${n} ${u}`)
    .join(' ')
}

const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' })

/** An ISO time (or ms) in the reader's locale. */
export function formatDateTime(time: string | number | Date | null | undefined): string {
  if (time === null || time === undefined) return '–'
  const d = new Date(time)
  return Number.isNaN(d.getTime()) ? '–' : dateTime.format(d)
}

const relative = new Intl.RelativeTimeFormat(undefined, { numeric: 'auto' })

/** "3 minutes ago", "in 2 hours". */
export function formatRelative(time: string | number | Date, now = Date.now()): string {
  const seconds = (new Date(time).getTime() - now) / 1000
  const abs = Math.abs(seconds)
  const [value, unit]: [number, Intl.RelativeTimeFormatUnit] =
    abs < 60
      ? [seconds, 'second']
      : abs < 3600
        ? [seconds / 60, 'minute']
        : abs < 86400
          ? [seconds / 3600, 'hour']
          : [seconds / 86400, 'day']
  return relative.format(Math.round(value), unit)
}
