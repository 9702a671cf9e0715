// The README quickstart as an ES module application (zlink is CommonJS: imported through Node's interop), with an
// OpenTelemetry MeterProvider installed first. Prints one JSON line; never calls process.exit.
import { metrics } from '@opentelemetry/api';
import { MeterProvider, PeriodicExportingMetricReader, InMemoryMetricExporter, AggregationTemporality } from '@opentelemetry/sdk-metrics';
import { createRuntime, defineActor, memoryStores, preserveState, RelocationMode, RelocationOutcome } from 'zlink';

const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 60_000 });
const provider = new MeterProvider({ readers: [reader] });
metrics.setGlobalMeterProvider(provider);

const Counter = defineActor({
  type: 'Counter',
  relocation: preserveState({
    capture: (s) => Buffer.from(JSON.stringify(s)),
    restore: (bytes) => JSON.parse(bytes.toString()),
  }),
  create: () => ({ n: 0 }),
  receive: (state, message) => {
    if (message.op === 'add') state.n += message.by;
    return state.n;
  },
});

const stores = memoryStores();
const a = await createRuntime({ nodeId: 'node-a', applicationVersion: 1, stores, types: [Counter] });
const b = await createRuntime({ nodeId: 'node-b', applicationVersion: 1, stores, types: [Counter] });

await a.createActor('Counter', 'counter-1');
a.send({ actor: 'counter-1' }, { op: 'add', by: 2 });
const before = await b.request({ actor: 'counter-1' }, { op: 'get' });
// While both hosts run: the units gauge is observed from live hosts only.
await reader.forceFlush();
const midRun = summarize(exporter.getMetrics().at(-1));

const result = await a.relocate({ mode: RelocationMode.PlannedMaintenance });
if (result.outcome === RelocationOutcome.Relocated) await a.shutdown();

const after = await b.request({ actor: 'counter-1' }, { op: 'add', by: 1 });
const owner = (await b.locate({ actor: 'counter-1' })).nodeId;
await b.shutdown();
await stores.close();

await reader.forceFlush();
const recorded = summarize(exporter.getMetrics().at(-1));
await provider.shutdown();
process.stdout.write(`${JSON.stringify({ module: 'esm', before, after, owner, recorded, unitsObserved: 'zlink.relocation.units' in midRun })}\n`);

/** Instrument name → sum of its points (histograms: their counts); `name{label}` → the label values seen. */
function summarize(resourceMetrics) {
  const out = {};
  for (const scope of resourceMetrics ? resourceMetrics.scopeMetrics : [])
    for (const metric of scope.metrics) {
      const name = metric.descriptor.name;
      out[name] ??= 0;
      for (const point of metric.dataPoints) {
        out[name] += typeof point.value === 'number' ? point.value : point.value.count;
        for (const [k, v] of Object.entries(point.attributes)) if (!(out[`${name}{${k}}`] ??= []).includes(v)) out[`${name}{${k}}`].push(v);
      }
    }
  return out;
}
