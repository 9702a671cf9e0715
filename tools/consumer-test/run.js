#!/usr/bin/env node
/**
 * Scratch-consumer test (`npm run test:consumer`): zlink as a user gets it, not as this repository's tests see it.
 *
 *  1. `npm run build`, then `npm pack` the library into a temp dir.
 *  2. A new project there: `npm install <tarball> @opentelemetry/api @opentelemetry/sdk-metrics` — the versions npm
 *     picks for this Node, as a user's install would. No ERESOLVE (peer conflict), no EBADENGINE warning.
 *  3. The README quickstart as .cjs and as .mjs, each with a MeterProvider (periodic reader, in-memory exporter)
 *     installed first: the quickstart values are right, the instruments recorded, and the process exits by itself.
 *  4. A second project with only the tarball (no @opentelemetry/api: it is an optional peer): the quickstart runs.
 *
 * Needs the npm registry; takes a minute or two. Not part of `npm test`.
 * Flags: --keep (leave the temp dir), --no-build (pack the existing dist/).
 */
'use strict';
const { spawnSync, spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const root = path.join(__dirname, '..', '..');
const keep = process.argv.includes('--keep');
const build = !process.argv.includes('--no-build');
/** A quickstart run must end by itself well within this (it takes about a second). */
const EXIT_BOUND_MS = 60_000;

const failures = [];
function check(ok, what) {
  console.log(`${ok ? '  ok  ' : '  FAIL'} ${what}`);
  if (!ok) failures.push(what);
}

function run(cmd, args, cwd) {
  console.log(`$ ${cmd} ${args.join(' ')}   (in ${cwd})`);
  const r = spawnSync(cmd, args, { cwd, encoding: 'utf8', env: { ...process.env, npm_config_fund: 'false', npm_config_audit: 'false' } });
  if (r.status !== 0) {
    process.stdout.write(r.stdout ?? '');
    process.stderr.write(r.stderr ?? '');
    throw new Error(`${cmd} ${args.join(' ')} exited ${r.status}`);
  }
  return r;
}

/** Runs `node file` in `cwd`; resolves with its output and whether it ended by itself (not killed at the bound). */
function runApp(cwd, file) {
  return new Promise((resolve) => {
    const started = Date.now();
    // The consumer's environment, not this repository's test settings.
    const env = { ...process.env };
    delete env.ZLINK_LOG_LEVEL;
    const child = spawn(process.execPath, [file], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => (stdout += c));
    child.stderr.on('data', (c) => (stderr += c));
    let killed = false;
    const timer = setTimeout(() => {
      killed = true;
      child.kill('SIGKILL');
    }, EXIT_BOUND_MS);
    child.on('exit', (code) => {
      clearTimeout(timer);
      const json = stdout
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .pop();
      let result;
      try {
        result = json ? JSON.parse(json) : undefined;
      } catch {
        result = undefined;
      }
      resolve({ code, killed, ms: Date.now() - started, stdout, stderr, result });
    });
  });
}

function npmWarnings(stderr) {
  return stderr.split('\n').filter((l) => /EBADENGINE|ERESOLVE|peer dep/i.test(l));
}

async function main() {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'zlink-consumer-'));
  console.log(`temp dir: ${tmp}`);
  try {
    if (build) run('npm', ['run', 'build'], root);
    const packed = JSON.parse(run('npm', ['pack', '--json', '--pack-destination', tmp], root).stdout);
    const tarball = path.join(tmp, packed[0].filename);
    check(fs.existsSync(tarball), `packed ${packed[0].filename} (${packed[0].entryCount} files)`);
    check(
      packed[0].files.every((f) => f.path.startsWith('dist/') || f.path.startsWith('docs/') || ['package.json', 'README.md', 'CHANGELOG.md', 'LICENSE'].includes(f.path)),
      'the tarball holds dist/, docs/, package.json and the README/CHANGELOG only',
    );
    check(packed[0].files.some((f) => f.path === 'docs/concepts.md'), 'the README\'s links into docs/ resolve in the tarball');

    // ── with OpenTelemetry ────────────────────────────────────────────────────────────────────
    const app = path.join(tmp, 'app');
    fs.mkdirSync(app);
    fs.writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'zlink-consumer', version: '1.0.0', private: true }, null, 2));
    const install = run('npm', ['install', tarball, '@opentelemetry/api', '@opentelemetry/sdk-metrics'], app);
    const warnings = npmWarnings(install.stderr);
    check(warnings.length === 0, `npm install: no ERESOLVE / EBADENGINE / peer warnings${warnings.length ? `: ${warnings.join(' | ')}` : ''}`);
    const versions = JSON.parse(run('npm', ['ls', '--json', '--depth', '0'], app).stdout).dependencies;
    console.log(`  installed: ${Object.entries(versions).map(([n, d]) => `${n}@${d.version}`).join(', ')}`);
    const apiCopies = run('npm', ['ls', '--parseable', '--all', '@opentelemetry/api'], app).stdout.trim().split('\n').filter(Boolean);
    check(apiCopies.length === 1, `one copy of @opentelemetry/api in the project (zlink uses the application's): ${apiCopies.length}`);

    for (const file of ['quickstart.cjs', 'quickstart.mjs']) {
      fs.copyFileSync(path.join(__dirname, file), path.join(app, file));
      const r = await runApp(app, file);
      console.log(`  ${file}: exit ${r.code} after ${r.ms} ms${r.killed ? ' (killed at the bound)' : ''}`);
      if (r.code !== 0) process.stderr.write(r.stderr);
      check(!r.killed && r.code === 0, `${file}: the process exits by itself with code 0`);
      check(r.stderr === '', `${file}: nothing on stderr${r.stderr ? `: ${r.stderr.slice(0, 500)}` : ''}`);
      check(/\[zlink node-a\] host serving /.test(r.stdout), `${file}: the default console logger writes info lines with the node id`);
      const res = r.result ?? {};
      check(res.before === 2 && res.after === 3 && res.owner === 'node-b', `${file}: quickstart values ${JSON.stringify({ before: res.before, after: res.after, owner: res.owner })}`);
      const m = res.recorded ?? {};
      for (const name of [
        'zlink.runtime.message.routed',
        'zlink.runtime.request.duration',
        'zlink.store.call.duration',
        'zlink.runtime.host.state_transitions',
        'zlink.runtime.host.relocations',
        'zlink.runtime.host.terminations',
        'zlink.relocation.interruption',
      ])
        check(m[name] > 0, `${file}: ${name} recorded (${m[name]})`);
      check(res.unitsObserved === true, `${file}: zlink.relocation.units observed while the hosts run`);
      check(JSON.stringify(m['zlink.runtime.host.relocations{outcome}']) === '["Relocated"]', `${file}: relocation outcome label Relocated`);
      const ids = ['node-a', 'node-b', 'counter-1', 'a:counter-1'];
      const labelValues = Object.entries(m).filter(([k]) => k.includes('{')).flatMap(([, v]) => v);
      check(!labelValues.some((v) => ids.includes(v)), `${file}: no node or object id in any label`);
    }

    // ── without @opentelemetry/api (optional peer) ───────────────────────────────────────────
    const bare = path.join(tmp, 'bare');
    fs.mkdirSync(bare);
    fs.writeFileSync(path.join(bare, 'package.json'), JSON.stringify({ name: 'zlink-consumer-bare', version: '1.0.0', private: true }, null, 2));
    const bareInstall = run('npm', ['install', tarball], bare);
    check(npmWarnings(bareInstall.stderr).length === 0, 'npm install of the tarball alone: no peer warnings');
    fs.copyFileSync(path.join(__dirname, 'no-otel.cjs'), path.join(bare, 'no-otel.cjs'));
    const r = await runApp(bare, 'no-otel.cjs');
    if (r.code !== 0) process.stderr.write(r.stderr);
    check(!r.killed && r.code === 0 && r.stderr === '', `no-otel.cjs: exits by itself with code 0 (${r.ms} ms)`);
    check(r.result?.otel === 'absent' && r.result?.before === 2 && r.result?.after === 3, `no-otel.cjs: runs without @opentelemetry/api ${JSON.stringify(r.result)}`);
  } finally {
    if (keep) console.log(`kept ${tmp}`);
    else fs.rmSync(tmp, { recursive: true, force: true });
  }
  if (failures.length) {
    console.error(`\nconsumer test FAILED (${failures.length}):\n${failures.map((f) => `  - ${f}`).join('\n')}`);
    process.exitCode = 1;
  } else console.log('\nconsumer test passed');
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
