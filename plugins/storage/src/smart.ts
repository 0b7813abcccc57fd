import { StorageErrors } from './errors.ts'

export interface SmartAttribute {
  id: number | null
  name: string
  value: number | null
  worst: number | null
  threshold: number | null
  raw: string
  failing: boolean
}

export interface SmartReport {
  device: string
  model: string | null
  serial: string | null
  health: 'passed' | 'failed' | 'unknown'
  temperatureC: number | null
  powerOnHours: number | null
  attributes: SmartAttribute[]
  raw: unknown
}

// smartctl's exit status is a bit mask (smartctl(8) "RETURN VALUES"): bit 1 = command line did not parse,
// bit 2 = device open failed or device did not return IDENTIFY, bit 3 = a SMART command failed.
const NO_DEVICE_BITS = 0b11

/** The parts of `smartctl -j -a` output read here (smartctl's JSON schema); each may be absent, by device type. */
interface SmartctlOutput {
  smartctl?: { messages?: { string?: string }[] }
  smart_support?: { available?: boolean }
  smart_status?: { passed?: boolean }
  nvme_smart_health_information_log?: Record<string, unknown>
  ata_smart_attributes?: { table?: SmartctlAtaAttribute[] }
  model_name?: string
  model_family?: string
  serial_number?: string
  temperature?: { current?: number }
  power_on_time?: { hours?: number }
}

interface SmartctlAtaAttribute {
  id?: number
  name?: string
  value?: number
  worst?: number
  thresh?: number
  raw?: { string?: string; value?: number }
  when_failed?: string
}

const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null)

/** Turns `smartctl -j -a` output into a report; a device without SMART data is a 409 with smartctl's own reason. */
export function parseSmart(device: string, stdout: string, exitCode: number): SmartReport {
  let json: SmartctlOutput | null
  try {
    json = JSON.parse(stdout)
  } catch {
    throw StorageErrors.noSmart(`${device}: smartctl gave no readable report (exit ${exitCode})`)
  }
  const messages = (json?.smartctl?.messages ?? []).flatMap((m) => (m?.string ? [m.string] : []))
  const reason = messages.join('; ')
  if (exitCode & NO_DEVICE_BITS)
    throw StorageErrors.noSmart(`${device} has no SMART data: ${reason || `smartctl exit ${exitCode}`}`)
  if (json?.smart_support?.available === false)
    throw StorageErrors.noSmart(`${device} has no SMART support${reason ? `: ${reason}` : ''}`)
  const nvme = json?.nvme_smart_health_information_log
  const ata = json?.ata_smart_attributes?.table
  if (!json?.smart_status && !nvme && !Array.isArray(ata))
    throw StorageErrors.noSmart(`${device} has no SMART data${reason ? `: ${reason}` : ''}`)

  let attributes: SmartAttribute[] = []
  if (Array.isArray(ata)) {
    attributes = ata.map((a: SmartctlAtaAttribute) => ({
      id: num(a.id),
      name: String(a.name ?? ''),
      value: num(a.value),
      worst: num(a.worst),
      threshold: num(a.thresh),
      raw: String(a.raw?.string ?? a.raw?.value ?? ''),
      // "when_failed" is "now" or "past" once the normalized value fell to the threshold.
      failing: typeof a.when_failed === 'string' && a.when_failed !== '',
    }))
  } else if (nvme && typeof nvme === 'object') {
    attributes = Object.entries(nvme)
      .filter(([, v]) => typeof v === 'number')
      .map(([name, v]) => ({
        id: null,
        name,
        value: null,
        worst: null,
        threshold: null,
        raw: String(v),
        failing: name === 'critical_warning' && v !== 0,
      }))
  }
  const passed = json?.smart_status?.passed
  return {
    device,
    model: json?.model_name ?? json?.model_family ?? null,
    serial: json?.serial_number ?? null,
    health: passed === true ? 'passed' : passed === false ? 'failed' : 'unknown',
    temperatureC: num(json?.temperature?.current) ?? num(nvme?.temperature),
    powerOnHours: num(json?.power_on_time?.hours) ?? num(nvme?.power_on_hours),
    attributes,
    raw: json,
  }
}
