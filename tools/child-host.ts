/**
 * One host per child process, driven over IPC: used by `npm run bench` (redis stack) and `npm run demo --processes`.
 * The orchestrator forks the host script with its JSON config and calls commands by id; the child answers each call
 * once and exits after `stop` (or when the orchestrator goes away).
 */
import { fork, type ChildProcess } from 'node:child_process';

export interface Call {
  readonly id: number;
  readonly cmd: string;
  readonly args: Record<string, unknown>;
}

export type Reply = { readonly id: number; readonly ok: true; readonly value: unknown } | { readonly id: number; readonly ok: false; readonly error: string };

export interface ChildPeer {
  readonly child: ChildProcess;
  call<T>(cmd: string, args?: Record<string, unknown>): Promise<T>;
}

/** Forks `script` with `config` (its first argument, as JSON); `label` names the host in errors. */
export function forkHost(script: string, config: unknown, label: string, execArgv: string[] = []): ChildPeer {
  const child = fork(script, [JSON.stringify(config)], { stdio: 'inherit', execArgv });
  const waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  let next = 0;
  child.on('message', (r: Reply) => {
    const w = waiting.get(r.id);
    waiting.delete(r.id);
    if (r.ok) w?.resolve(r.value);
    else w?.reject(new Error(`${label} host: ${r.error}`));
  });
  child.on('exit', (code, signal) => {
    for (const w of waiting.values()) w.reject(new Error(`${label} host exited (code ${code}, signal ${signal})`));
    waiting.clear();
  });
  return {
    child,
    call: <T>(cmd: string, args: Record<string, unknown> = {}) =>
      new Promise<T>((resolve, reject) => {
        if (!child.connected) return reject(new Error(`${label} host is not running`));
        const id = next++;
        waiting.set(id, { resolve: resolve as (v: unknown) => void, reject });
        child.send({ id, cmd, args } satisfies Call);
      }),
  };
}

/** The child side: answers the orchestrator's calls with `handle`; exits after `stop` or when the parent is gone. */
export function serveParent(name: string, handle: (cmd: string, args: Record<string, unknown>) => Promise<unknown>): void {
  if (!process.send) {
    console.error(`${name}: run by its orchestrator through child_process.fork, not directly`);
    process.exit(2);
  }
  process.on('message', (call: Call) => {
    const done = call.cmd === 'stop' ? () => process.exit(0) : undefined;
    handle(call.cmd, call.args).then(
      (value) => process.send!({ id: call.id, ok: true, value } satisfies Reply, undefined, {}, done),
      (error: unknown) =>
        process.send!({ id: call.id, ok: false, error: error instanceof Error ? (error.stack ?? error.message) : String(error) } satisfies Reply, undefined, {}, done),
    );
  });
  // The orchestrator went away (crashed or interrupted): do not linger with a listening host.
  process.on('disconnect', () => process.exit(1));
}
