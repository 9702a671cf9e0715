// Runs a .ts entry point in a plain Node process, with nothing but what `npm ci` installs: a require hook that
// compiles each .ts module with the project's own TypeScript (transpile only — type checking is `npm run typecheck`).
// Used by spec-tests that must observe a real process (process-exits-after-close.test.ts):
//   node -r ./spec-tests/no-loss/support/ts-require.js some-script.ts
const fs = require('node:fs');
const ts = require('typescript');

const compilerOptions = {
  module: ts.ModuleKind.CommonJS,
  target: ts.ScriptTarget.ES2022,
  esModuleInterop: true,
  sourceMap: false,
  inlineSourceMap: true,
};

require.extensions['.ts'] = (module, filename) => {
  const { outputText } = ts.transpileModule(fs.readFileSync(filename, 'utf8'), { compilerOptions, fileName: filename });
  module._compile(outputText, filename);
};
