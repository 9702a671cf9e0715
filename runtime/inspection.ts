/**
 * The `inspect` option (API.md, `createRuntime({ inspect })`): xstate's inspection observer — a function or an
 * `{ next }` object, such as `createInspector()` from `zlink/inspect` — given to every machine actor of the host
 * (lifecycle, relocation supervisor and its unit actors, target units, shutdown).
 *
 * Several hosts of one process may share one observer, so the host tags every inspection event with its nodeId
 * before passing it on: the observer receives the event with `nodeId` set (NodeInspectionEvent). The host wraps the
 * observer once, at construction, and every createActor receives the wrapped one; nothing else in the runtime
 * knows about inspection. A host without `inspect` pays nothing (xstate skips inspection without an observer).
 *
 * The tag is set on the event object itself: xstate builds a fresh object for every emission (`{ ...event, rootId }`
 * in its system), and a host's actors share one system observer, so no one else holds it. Measured: copying each
 * event instead (`{ ...event, nodeId }`) cost as much as xstate's own inspection work on a 10k-unit relocation.
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
  if (typeof inspect === 'function') {
    const fn = inspect as Next;
    next = (event) => fn(tag(event, nodeId));
  } else if (typeof inspect === 'object' && inspect !== null && typeof (inspect as { next?: unknown }).next === 'function') {
    const observer = inspect as { next: Next };
    next = (event) => observer.next(tag(event, nodeId));
  }
  return next ?? inspect;
}

function tag(event: InspectionEvent, nodeId: string): NodeInspectionEvent {
  (event as { nodeId?: string }).nodeId = nodeId;
  return event as NodeInspectionEvent;
}
