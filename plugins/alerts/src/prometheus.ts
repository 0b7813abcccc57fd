/**
 * Alert states in the Prometheus text format, like the `ALERTS` series Prometheus keeps for its own rules: one
 * sample of value 1 per pending or firing alert, labelled `alertname`, `alertstate` (pending, firing), `severity`,
 * `rule`, `target`, and `silenced`. The name is `hostd_alerts`: a scraped `ALERTS` would sit beside Prometheus's own.
 */
import type { Alert } from './schemas.ts'

const escapeLabel = (v: string) => v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')

export function prometheusSection(alerts: Alert[], hostname: string): string {
  const lines = [
    '# HELP hostd_alerts Alerts pending or firing on this host (1 per alert), as Prometheus ALERTS.',
    '# TYPE hostd_alerts gauge',
  ]
  for (const a of alerts) {
    const labels = {
      alertname: a.ruleName,
      alertstate: a.state,
      severity: a.severity,
      rule: a.ruleId,
      target: a.target,
      silenced: String(a.silenced),
      instance: hostname,
    }
    lines.push(
      `hostd_alerts{${Object.entries(labels)
        .map(([k, v]) => `${k}="${escapeLabel(v)}"`)
        .join(',')}} 1`,
    )
  }
  lines.push(
    '# HELP hostd_alerts_firing Firing alerts that are not silenced.',
    '# TYPE hostd_alerts_firing gauge',
    `hostd_alerts_firing ${alerts.filter((a) => a.state === 'firing' && !a.silenced).length}`,
  )
  return `${lines.join('\n')}\n`
}
