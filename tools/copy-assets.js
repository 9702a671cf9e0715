// tsc does not copy non-TS assets: the Redis provider loads its Lua scripts from .lua files at run time, and the
// inspector serves its page (inspect/page: HTML, JS, CSS) from files next to its compiled code.
const fs = require('node:fs');
const path = require('node:path');
const root = path.join(__dirname, '..');
function copy(dir, extensions) {
  for (const entry of fs.readdirSync(path.join(root, dir), { withFileTypes: true })) {
    const rel = path.join(dir, entry.name);
    if (entry.isDirectory()) copy(rel, extensions);
    else if (extensions.some((ext) => entry.name.endsWith(ext))) {
      fs.mkdirSync(path.join(root, 'dist', dir), { recursive: true });
      fs.copyFileSync(path.join(root, rel), path.join(root, 'dist', rel));
    }
  }
}
copy('stores', ['.lua']);
copy(path.join('inspect', 'page'), ['.html', '.js', '.css']);
