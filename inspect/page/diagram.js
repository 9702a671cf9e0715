// State diagram of one machine, drawn from its definition (inspect/diagram.ts → MachineDiagram): states as nested
// boxes (children of a compound state in columns by their distance from its initial state, final states last),
// transitions as SVG arrows measured from the boxes' positions. `light()` marks the current state(s).
'use strict';
(function () {
  const SVG = 'http://www.w3.org/2000/svg';

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function build(def) {
    const parentOf = new Map();
    const index = (s, parent) => {
      parentOf.set(s.id, parent);
      for (const c of s.children) index(c, s.id);
    };
    index(def.root, null);

    const boxes = new Map();
    const render = (s, isRoot) => {
      const box = el('div', `state ${s.type}`);
      box.dataset.id = s.id;
      box.appendChild(el('div', 'title', isRoot ? s.id : s.key));
      if (s.invoke.length) box.appendChild(el('div', 'invoke', `⟳ ${s.invoke.join(', ')}`));
      box.appendChild(el('span', 'badge'));
      boxes.set(s.id, box);
      if (s.children.length) {
        const grid = el('div', 'children');
        const place = columnsOf(s, def.edges, parentOf);
        for (const child of s.children) {
          const c = render(child, false);
          const { col, row } = place.get(child.id);
          c.style.gridColumn = String(col + 1);
          c.style.gridRow = String(row + 1);
          if (child.id === s.initial) c.classList.add('initial-state');
          grid.appendChild(c);
        }
        box.appendChild(grid);
      }
      return box;
    };

    const element = el('div', 'diagram');
    element.appendChild(render(def.root, true));
    const svg = document.createElementNS(SVG, 'svg');
    svg.setAttribute('class', 'edges');
    element.appendChild(svg);
    const draw = () => drawEdges(element, svg, boxes, def.edges);
    if (typeof ResizeObserver === 'function') new ResizeObserver(draw).observe(element);
    return {
      element,
      draw,
      /** `counts`: state id → number of actors in it (1 for a single actor); ancestors are marked too. */
      light(counts, showCounts) {
        const lit = new Set();
        const parents = new Set();
        for (const [id, n] of counts) {
          if (!(n > 0)) continue;
          lit.add(id);
          for (let p = parentOf.get(id); p; p = parentOf.get(p)) parents.add(p);
        }
        for (const [id, box] of boxes) {
          box.classList.toggle('lit', lit.has(id));
          box.classList.toggle('lit-parent', !lit.has(id) && parents.has(id));
          const badge = box.querySelector(':scope > .badge');
          const n = counts.get(id);
          badge.textContent = showCounts && n > 0 ? String(n) : '';
        }
      },
    };
  }

  /** Columns by BFS distance from the initial child over transitions between children; final states in the last column. */
  function columnsOf(s, edges, parentOf) {
    const ids = s.children.map((c) => c.id);
    const childOf = (id) => {
      for (let cur = id; cur; cur = parentOf.get(cur)) if (parentOf.get(cur) === s.id) return cur;
      return undefined;
    };
    const next = new Map(ids.map((id) => [id, []]));
    for (const e of edges) {
      const a = childOf(e.source);
      const b = childOf(e.target);
      if (a && b && a !== b) next.get(a).push(b);
    }
    const depth = new Map();
    const start = s.initial || ids[0];
    const queue = [start];
    depth.set(start, 0);
    while (queue.length) {
      const id = queue.shift();
      for (const n of next.get(id)) if (!depth.has(n)) (depth.set(n, depth.get(id) + 1), queue.push(n));
    }
    const finals = new Set(s.children.filter((c) => c.type === 'final').map((c) => c.id));
    let last = 0;
    for (const id of ids) if (!finals.has(id) && depth.has(id)) last = Math.max(last, depth.get(id));
    const rows = new Map();
    const place = new Map();
    for (const id of ids) {
      const col = finals.has(id) && id !== start ? last + 1 : depth.has(id) ? depth.get(id) : last + 1;
      const row = rows.get(col) || 0;
      rows.set(col, row + 1);
      place.set(id, { col, row });
    }
    return place;
  }

  function drawEdges(element, svg, boxes, edges) {
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    const base = element.getBoundingClientRect();
    if (base.width === 0) return; // not displayed yet
    svg.setAttribute('width', String(element.scrollWidth));
    svg.setAttribute('height', String(element.scrollHeight));
    const defs = document.createElementNS(SVG, 'defs');
    defs.innerHTML = '<marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#8a96a8" stroke="none"/></marker>';
    svg.appendChild(defs);
    const grouped = new Map();
    for (const e of edges) {
      const key = `${e.source}\u0000${e.target}`;
      const g = grouped.get(key) || { source: e.source, target: e.target, labels: [] };
      if (!g.labels.includes(e.label)) g.labels.push(e.label);
      grouped.set(key, g);
    }
    const rel = (r) => ({ left: r.left - base.left, right: r.right - base.left, top: r.top - base.top, bottom: r.bottom - base.top, width: r.width, height: r.height });
    let backward = 0;
    for (const g of grouped.values()) {
      const sa = boxes.get(g.source);
      const sb = boxes.get(g.target);
      if (!sa || !sb || sa.contains(sb) || sb.contains(sa)) continue;
      const a = rel(sa.getBoundingClientRect());
      const b = rel(sb.getBoundingClientRect());
      const ya = a.top + Math.min(a.height / 2, 12);
      const yb = b.top + Math.min(b.height / 2, 12);
      let p;
      if (b.left >= a.right - 4) {
        const dx = Math.max(16, (b.left - a.right) / 2);
        p = [a.right, ya, a.right + dx, ya, b.left - dx, yb, b.left, yb];
      } else if (b.right <= a.left + 4) {
        const dip = 22 + 8 * (backward++ % 3);
        const x1 = a.left + a.width / 2;
        const x2 = b.left + b.width / 2;
        p = [x1, a.bottom, x1, a.bottom + dip, x2, b.bottom + dip, x2, b.bottom];
      } else if (b.top >= a.bottom) {
        const x = Math.max(a.left, b.left) + 10;
        p = [x, a.bottom, x, a.bottom + 6, x, b.top - 6, x, b.top];
      } else {
        const x = Math.min(a.right, b.right) - 10;
        p = [x, a.top, x, a.top - 6, x, b.bottom + 6, x, b.bottom];
      }
      const path = document.createElementNS(SVG, 'path');
      path.setAttribute('d', `M${p[0]},${p[1]} C${p[2]},${p[3]} ${p[4]},${p[5]} ${p[6]},${p[7]}`);
      path.setAttribute('marker-end', 'url(#arrow)');
      svg.appendChild(path);
      // One line per event (at most 3), centred on the curve's midpoint; the full list is the tooltip.
      const lines = g.labels.length > 3 ? [...g.labels.slice(0, 2), `+${g.labels.length - 2} more`] : g.labels;
      const text = document.createElementNS(SVG, 'text');
      const mx = (p[0] + 3 * p[2] + 3 * p[4] + p[6]) / 8;
      const my = (p[1] + 3 * p[3] + 3 * p[5] + p[7]) / 8 - 3 - 10 * (lines.length - 1);
      text.setAttribute('text-anchor', 'middle');
      lines.forEach((line, i) => {
        const span = document.createElementNS(SVG, 'tspan');
        span.setAttribute('x', String(mx));
        span.setAttribute('y', String(my + 10 * i));
        span.textContent = line.length > 26 ? `${line.slice(0, 25)}…` : line;
        text.appendChild(span);
      });
      const title = document.createElementNS(SVG, 'title');
      title.textContent = g.labels.join('\n');
      text.appendChild(title);
      svg.appendChild(text);
    }
  }

  window.ZlinkDiagram = { build };
})();
