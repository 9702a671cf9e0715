/**
 * The `inspect` option (API.md, `createRuntime({ inspect })`): xstate's inspection observer — a function or an
 * `{ next }` object, such as `createInspector()` from `zlink/inspect` — given to every machine actor of the host
 * (lifecycle, relocation supervisor and its unit actors, target units, shutdown).
 *
 * Several hosts of one process may share one observer, so the host tags every inspection event with its nodeId
 * before passing it on: the observer receives `{ ...event, nodeId }` (NodeInspectionEvent). The host wraps the
 * observer once, at construction, and every createActor receives the wrapped one; nothing else in the runtime
 * knows about inspection. A host without `inspect` pays nothing (xstate skips inspection without an observer).
 */
import type { InspectionEvent } from 'xstate';

/** An xstate inspection event, with the nodeId of the host whose actor emitted it. */
export type NodeInspectionEvent = InspectionEvent & { readonly nodeId: string };

type Next = (event: InspectionEvent) => void;

/**
 * The observer the host's actors get: each event is passed on with `nodeId` added. Returns `inspect` unchanged
 * when it is neither a function nor an object with a `next` function (xstate then ignores it as before).
 */
export function tagInspection(inspect: unknown, nodeId: string): unknown {
  let next: Next | undefined;
  if (typeof inspect === 'function') next = (event) => (inspect as Next)({ ...event, nodeId } as NodeInspectionEvent);
  else if (typeof inspect === 'object' && inspect !== null && typeof (inspect as { next?: unknown }).next === 'function') {
    const observer = inspect as { next: Next };
    next = (event) => observer.next({ ...event, nodeId } as NodeInspectionEvent);
  }
  return next ?? inspect;
}
