// tsc does not copy non-TS assets; the Redis provider loads its Lua scripts from .lua files at run time.
const fs = require('node:fs');
const path = require('node:path');
const root = path.join(__dirname, '..');
function copy(dir) {
  for (const entry of fs.readdirSync(path.join(root, dir), { withFileTypes: true })) {
    const rel = path.join(dir, entry.name);
    if (entry.isDirectory()) copy(rel);
    else if (entry.name.endsWith('.lua')) {
      fs.mkdirSync(path.join(root, 'dist', dir), { recursive: true });
      fs.copyFileSync(path.join(root, rel), path.join(root, 'dist', rel));
    }
  }
}
copy('stores');
