/** `zlink/machines`: the package export points at this module's build output, and it exports the five machines. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as machines from './index';
import { hostLifecycleMachine } from './host-lifecycle.machine';
import { relocationSupervisorMachine } from './relocation-supervisor.machine';
import { shutdownMachine } from './shutdown.machine';
import { unitSourceMachine } from './unit-source.machine';
import { unitTargetMachine } from './unit-target.machine';

test('the five machines are exported with their ids, as the runtime runs them', () => {
  expect(machines.hostLifecycleMachine).toBe(hostLifecycleMachine);
  expect(machines.relocationSupervisorMachine).toBe(relocationSupervisorMachine);
  expect(machines.shutdownMachine).toBe(shutdownMachine);
  expect(machines.unitSourceMachine).toBe(unitSourceMachine);
  expect(machines.unitTargetMachine).toBe(unitTargetMachine);
  expect(Object.fromEntries(Object.entries(machines.MACHINES).map(([key, m]) => [key, m.id]))).toEqual({
    hostLifecycle: 'hostLifecycle',
    relocationSupervisor: 'relocationSupervisor',
    shutdown: 'shutdown',
    unitSource: 'unitSource',
    unitTarget: 'unitTarget',
  });
  expect(machines.DETACHED_STATES.has('following')).toBe(true);
});

test("package.json exports 'zlink/machines' from the build of machines/index.ts (tsconfig.build.json → dist/)", () => {
  const root = join(__dirname, '..');
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { exports: Record<string, { types: string; default: string }> };
  const build = JSON.parse(readFileSync(join(root, 'tsconfig.json'), 'utf8')) as { compilerOptions: { outDir: string; rootDir: string } };
  expect(build.compilerOptions).toMatchObject({ outDir: 'dist', rootDir: '.' });
  expect(pkg.exports['.']).toEqual({ types: './dist/runtime/index.d.ts', default: './dist/runtime/index.js' });
  expect(pkg.exports['./machines']).toEqual({ types: './dist/machines/index.d.ts', default: './dist/machines/index.js' });
});
