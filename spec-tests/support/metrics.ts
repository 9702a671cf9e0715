/**
 * Metric contract tests: installs an OpenTelemetry SDK MeterProvider as the global provider (runtime/telemetry.ts
 * re-reads the global provider lazily) and reads what the runtime recorded. One per test file: jest gives every
 * file its own global object, and the OTel API accepts one global provider per global.
 */
import { metrics, type Attributes } from '@opentelemetry/api';
import { AggregationTemporality, MeterProvider, MetricReader, type DataPoint, type Histogram } from '@opentelemetry/sdk-metrics';

class TestReader extends MetricReader {
  constructor() {
    super({ aggregationTemporalitySelector: () => AggregationTemporality.CUMULATIVE });
  }
  protected async onShutdown(): Promise<void> {}
  protected async onForceFlush(): Promise<void> {}
}

export interface MetricPoint<T> {
  readonly attributes: Attributes;
  readonly value: T;
}

export interface TestMetrics {
  /** Every data point of the instrument `name` (cumulative since install), across meters. */
  points<T = number | Histogram>(name: string): Promise<MetricPoint<T>[]>;
  histogram(name: string): Promise<MetricPoint<Histogram>[]>;
  /** Sum of a counter's points whose attributes contain `match`. */
  counter(name: string, match?: Attributes): Promise<number>;
  shutdown(): Promise<void>;
}

/** Installs the provider globally (once per test file) and returns a reader for it. */
export function installTestMetrics(): TestMetrics {
  const reader = new TestReader();
  const provider = new MeterProvider({ readers: [reader] });
  if (!metrics.setGlobalMeterProvider(provider)) throw new Error('a global MeterProvider is already installed in this test file');
  const points = async <T>(name: string): Promise<MetricPoint<T>[]> => {
    const { resourceMetrics } = await reader.collect();
    const out: MetricPoint<T>[] = [];
    for (const scope of resourceMetrics.scopeMetrics)
      for (const metric of scope.metrics)
        if (metric.descriptor.name === name)
          for (const p of metric.dataPoints as DataPoint<T>[]) out.push({ attributes: p.attributes, value: p.value });
    return out;
  };
  return {
    points,
    histogram: (name) => points<Histogram>(name),
    async counter(name, match = {}) {
      let total = 0;
      for (const p of await points<number>(name)) if (Object.entries(match).every(([k, v]) => p.attributes[k] === v)) total += p.value;
      return total;
    },
    async shutdown() {
      metrics.disable();
      await provider.shutdown();
    },
  };
}
