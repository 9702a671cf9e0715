/**
 * The user docs (docs/*.md) checked against the code, so they cannot silently fall behind it:
 * - every option the code accepts (read from the option interfaces with the TypeScript parser, and — for
 *   createRuntime — from the list of known names its validation reports) appears in docs/options.md, in its section;
 * - every error class exported by the package, every RequestError kind and every relocation / termination outcome
 *   and reason appears in docs/errors.md;
 * - every OpenTelemetry instrument created in runtime/telemetry.ts appears in docs/metrics.md;
 * - relative links between the docs resolve (file and #anchor), and nothing points at material users do not have.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import * as api from '../runtime';
import { ArgumentError } from '../runtime/errors';
import { DEFAULT_TIMING, parseRuntimeOptions } from '../runtime/options';
import { MEMORY_STORE_DEFAULTS, memoryStores, REDIS_STORE_DEFAULTS, redisStores } from '../stores';
import { REDIS_CLUSTER_OPTION_NAMES } from '../stores/redis/options';
import { RelocationOutcome, RelocationReason, TerminationOutcome, TerminationReason } from '../vocabulary';

const root = path.resolve(__dirname, '..');
const read = (file: string) => readFileSync(path.join(root, file), 'utf8');
const docs = {
  options: read('docs/options.md'),
  errors: read('docs/errors.md'),
  metrics: read('docs/metrics.md'),
};

/** Property names of an interface (nested type literals as `a.b`), read with the TypeScript parser. */
function interfaceKeys(file: string, name: string): string[] {
  const source = ts.createSourceFile(file, read(file), ts.ScriptTarget.ES2022, true);
  let found: ts.InterfaceDeclaration | undefined;
  const visit = (node: ts.Node) => {
    if (ts.isInterfaceDeclaration(node) && node.name.text === name) found = node;
    else ts.forEachChild(node, visit);
  };
  visit(source);
  if (!found) throw new Error(`interface ${name} not found in ${file}`);
  const keys: string[] = [];
  const collect = (members: ts.NodeArray<ts.TypeElement>, prefix: string) => {
    for (const member of members) {
      if (!ts.isPropertySignature(member) || !member.name) continue;
      const key = prefix + member.name.getText(source);
      keys.push(key);
      if (member.type && ts.isTypeLiteralNode(member.type)) collect(member.type.members, `${key}.`);
    }
  };
  collect(found.members, '');
  return keys;
}

/** The text of one `## heading` section (up to the next `## `). */
function section(markdown: string, heading: string): string {
  const start = markdown.indexOf(`\n## ${heading}\n`);
  if (start < 0) throw new Error(`section '## ${heading}' missing`);
  const end = markdown.indexOf('\n## ', start + 1);
  return markdown.slice(start, end < 0 ? undefined : end);
}

const mentions = (text: string, word: string) => text.includes(`\`${word}\``);
const missing = (text: string, words: readonly string[]) => words.filter((w) => !mentions(text, w));

/** The known names the option validation lists for an unknown key (so the list comes from the schema itself). */
function knownNames(options: object): string[] {
  try {
    parseRuntimeOptions(options);
  } catch (error) {
    expect(error).toBeInstanceOf(ArgumentError);
    const match = /\(known: ([^)]*)\)/.exec((error as Error).message);
    if (match) return match[1]!.split(', ');
    throw new Error(`no list of known names in: ${(error as Error).message}`);
  }
  throw new Error('an unknown option was accepted');
}

const UNKNOWN = 'qqqqqqqqqqqqqqqqqqqqqqqq';

/** The known names redisStores lists for an unknown option. */
function knownRedisNames(options: object): string[] {
  try {
    redisStores(options as never);
  } catch (error) {
    expect(error).toBeInstanceOf(ArgumentError);
    const match = /\(known: ([^)]*)\)/.exec((error as Error).message);
    if (match) return match[1]!.split(', ');
    throw new Error(`no list of known names in: ${(error as Error).message}`);
  }
  throw new Error('an unknown redisStores option was accepted');
}

describe('docs/options.md', () => {
  const runtimeKeys = interfaceKeys('runtime/options.ts', 'RuntimeOptions');

  test('every createRuntime option', () => {
    const validated = knownNames({ [UNKNOWN]: 1 });
    // The interface and the validation agree, and the docs name every one of them.
    expect([...validated].sort()).toEqual([...runtimeKeys].sort());
    expect(missing(section(docs.options, 'createRuntime'), runtimeKeys)).toEqual([]);
  });

  test('every mesh, listen, tls and timing field', () => {
    const base = { nodeId: 'docs', applicationVersion: 1, stores: memoryStores() };
    const meshKeys = interfaceKeys('transport/types.ts', 'MeshConfig');
    const validatedMesh = knownNames({ ...base, meshes: [{ name: 'm', [UNKNOWN]: 1 }] });
    for (const key of validatedMesh) expect(meshKeys).toContain(key);
    const listen = knownNames({ ...base, meshes: [{ name: 'm', listen: { host: '127.0.0.1', port: 0, [UNKNOWN]: 1 } }] });
    for (const key of listen) expect(meshKeys).toContain(`listen.${key}`);
    const meshes = section(docs.options, 'createRuntime');
    expect(missing(meshes, meshKeys.map((k) => `meshes[].${k}`).filter((k) => !k.startsWith('meshes[].tls.')))).toEqual([]);
    expect(missing(meshes, meshKeys.filter((k) => k.startsWith('tls.')))).toEqual([]);
    expect(missing(meshes, Object.keys(DEFAULT_TIMING).map((k) => `timing.${k}`))).toEqual([]);
  });

  test('every redisStores and memoryStores option', () => {
    const redisKeys = interfaceKeys('stores/redis/options.ts', 'RedisStoresOptions');
    for (const key of Object.keys(REDIS_STORE_DEFAULTS)) expect(redisKeys).toContain(key);
    // The interface and the validation agree (top level), and the docs name every option and cluster field.
    expect([...knownRedisNames({ url: 'redis://h', keyPrefix: '', [UNKNOWN]: 1 })].sort()).toEqual(redisKeys.filter((k) => !k.includes('.')).sort());
    expect(missing(section(docs.options, 'redisStores'), redisKeys)).toEqual([]);
    const clusterKeys = interfaceKeys('stores/redis/options.ts', 'RedisClusterOptions');
    expect([...clusterKeys].sort()).toEqual([...REDIS_CLUSTER_OPTION_NAMES].sort());
    expect(missing(section(docs.options, 'redisStores'), clusterKeys.map((k) => `cluster.options.${k}`))).toEqual([]);
    const memoryKeys = interfaceKeys('stores/memory/memory-stores.ts', 'MemoryStoresOptions');
    for (const key of Object.keys(MEMORY_STORE_DEFAULTS)) expect(memoryKeys).toContain(key);
    expect(missing(section(docs.options, 'memoryStores'), memoryKeys)).toEqual([]);
  });

  test('relocate(), request(), consoleLogger and inspector options', () => {
    expect(missing(section(docs.options, 'relocate()'), interfaceKeys('vocabulary/index.ts', 'RelocationOptions'))).toEqual([]);
    expect(missing(section(docs.options, 'shutdown()'), ['deadlineMs', 'signal'])).toEqual([]);
    expect(missing(section(docs.options, 'request()'), interfaceKeys('runtime/context.ts', 'RequestOptions'))).toEqual([]);
    expect(missing(section(docs.options, 'consoleLogger'), interfaceKeys('runtime/logger.ts', 'ConsoleLoggerOptions'))).toEqual([]);
    const inspector = section(docs.options, 'createInspector / connectInspector');
    expect(missing(inspector, interfaceKeys('inspect/server.ts', 'InspectorOptions'))).toEqual([]);
    expect(missing(inspector, interfaceKeys('inspect/feed.ts', 'InspectorFeedOptions'))).toEqual([]);
  });
});

describe('docs/errors.md', () => {
  test('every exported error class', () => {
    const classes = Object.entries(api)
      .filter(([, value]) => typeof value === 'function' && (value as { prototype?: unknown }).prototype instanceof Error)
      .map(([name]) => name);
    expect(classes).toEqual(expect.arrayContaining(['ArgumentError', 'RequestError', 'NodeIdInUseError', 'LeaseHeldError']));
    expect(missing(section(docs.errors, 'Error classes'), classes)).toEqual([]);
  });

  test('every RequestError kind', () => {
    const kinds = [...read('runtime/errors.ts').matchAll(/readonly kind: ([^,\n]+),/g)].flatMap((m) => [...m[1]!.matchAll(/'([a-z-]+)'/g)].map((k) => k[1]!));
    expect(kinds.length).toBeGreaterThanOrEqual(6);
    expect(missing(section(docs.errors, 'RequestError kinds'), kinds)).toEqual([]);
  });

  test('every relocation and termination outcome and reason', () => {
    expect(missing(section(docs.errors, 'Relocation results'), [...Object.keys(RelocationOutcome), ...Object.keys(RelocationReason)])).toEqual([]);
    expect(missing(section(docs.errors, 'Termination results'), [...Object.keys(TerminationOutcome), ...Object.keys(TerminationReason)])).toEqual([]);
  });
});

test('docs/metrics.md names every instrument', () => {
  const instruments = [...read('runtime/telemetry.ts').matchAll(/create\w+\('(zlink\.[a-z_.]+)'/g)].map((m) => m[1]!);
  expect(instruments.length).toBeGreaterThanOrEqual(16);
  expect(missing(docs.metrics, instruments)).toEqual([]);
});

describe('links', () => {
  const files = ['README.md', 'docs/concepts.md', 'docs/options.md', 'docs/errors.md', 'docs/operations.md', 'docs/metrics.md'];

  /** GitHub's heading anchors: lower case, punctuation dropped, spaces to '-'. */
  const anchors = (markdown: string) =>
    new Set(
      [...markdown.replace(/```[\s\S]*?```/g, '').matchAll(/^#{1,6} (.+)$/gm)].map((m) =>
        m[1]!.trim().toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-'),
      ),
    );

  test.each(files)('%s: relative links resolve, nothing points at material users do not have', (file) => {
    const text = read(file);
    expect(text).not.toMatch(/\.\.\/shared/);
    expect(text).not.toMatch(/§/);
    for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:/.test(target!)) continue;
      const [ref, hash] = target!.split('#');
      const resolved = ref ? path.join(path.dirname(path.join(root, file)), ref) : path.join(root, file);
      expect({ link: target, exists: existsSync(resolved) }).toEqual({ link: target, exists: true });
      if (hash && resolved.endsWith('.md')) expect({ link: target, anchor: anchors(readFileSync(resolved, 'utf8')).has(hash) }).toEqual({ link: target, anchor: true });
    }
  });
});
