/**
 * The metrics plugin's contract with other plugins (types only; a consumer makes its own token with the id named in
 * `ProvidedServices`, see plugins/alerts/src/sources.ts).
 */
import type { MetricsSnapshot } from './schemas.ts'

export type { MetricsSnapshot }

/** The services this plugin provides, by token id. */
export interface ProvidedServices {
  /** Optional for others (the alerts plugin evaluates its rules on these samples). */
  'metrics.samples': MetricsSamplesService
}

export interface MetricsSamplesService {
  /**
   * Calls `listener` with each snapshot the background history sampler takes (once a minute by default): no extra
   * reading of the host. Answers the function that unsubscribes.
   */
  subscribe(listener: (snapshot: MetricsSnapshot) => void): () => void
  /**
   * Adds a section to `GET /api/metrics/prometheus` (text exposition lines, each family with its HELP and TYPE),
   * called on every scrape. Answers the function that removes it.
   */
  addPrometheusSection(section: () => string): () => void
}
