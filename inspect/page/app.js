// The inspector page: one WebSocket to its own server (/ws), messages `def` (a machine's structure, once per
// machine id) and `view` (the aggregate, at most maxUpdatesPerSecond). Nothing else is loaded or contacted.
// Panels: each host's lifecycle, its relocation supervisor, shutdown steps, every other machine (the relocation
// units) counted by state with a sample of actors, unit-event counts, and each machine's diagram with its state lit.
'use strict';
(function () {
  const LIFECYCLE = 'hostLifecycle';
  const SUPERVISOR = 'relocationSupervisor';
  const SHUTDOWN = 'shutdown';
  const SINGLE = new Set([LIFECYCLE, SUPERVISOR, SHUTDOWN]);

  const defs = new Map();
  /** nodeId → { section, diagrams: Map<machine, diagram> } */
  const nodes = new Map();
  let lastView;

  const $ = (sel, root) => (root || document).querySelector(sel);
  const esc = (s) => String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
  const attr = esc;

  function connect() {
    const conn = $('#conn');
    const ws = new WebSocket(`${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/ws`);
    ws.onopen = () => {
      conn.dataset.state = 'open';
      conn.textContent = 'live';
    };
    ws.onclose = () => {
      conn.dataset.state = 'closed';
      conn.textContent = 'disconnected (retrying)';
      setTimeout(connect, 1000);
    };
    ws.onmessage = (m) => {
      const message = JSON.parse(m.data);
      if (message.t === 'def') {
        defs.set(message.diagram.machine, message.diagram);
        if (lastView) render(lastView);
      } else if (message.t === 'view') {
        lastView = message.view;
        render(message.view);
      }
    };
  }

  function render(view) {
    $('#updated').textContent = `updated ${new Date(view.at).toLocaleTimeString()}`;
    const empty = $('#empty');
    if (empty && view.nodes.length) empty.remove();
    const units = new Map(view.units.map((u) => [u.unit, u]));
    for (const node of view.nodes) renderNode(node, units);
    renderUnits(view.units);
  }

  function nodeSection(nodeId) {
    let entry = nodes.get(nodeId);
    if (entry) return entry;
    const section = document.createElement('section');
    section.className = 'node';
    section.dataset.node = nodeId;
    section.innerHTML =
      `<header><h2>${esc(nodeId)}</h2><span class="state-badge lifecycle-state">—</span><span class="muted lifecycle-since"></span></header>` +
      '<ol class="history lifecycle-history"></ol>' +
      '<div class="panels"><div class="panel supervisor"></div><div class="panel units"></div><div class="panel shutdown"></div></div>' +
      '<div class="diagrams"></div>';
    $('#nodes').appendChild(section);
    entry = { section, diagrams: new Map() };
    nodes.set(nodeId, entry);
    return entry;
  }

  function history(list, current) {
    return list.map((s, i) => `<li data-state="${attr(s)}"${i === list.length - 1 && s === current ? ' class="current"' : ''}>${esc(s)}</li>`).join('');
  }

  function renderNode(node, units) {
    const { section, diagrams } = nodeSection(node.nodeId);
    const byId = new Map(node.machines.map((m) => [m.machine, m]));
    const life = byId.get(LIFECYCLE);
    const badge = $('.lifecycle-state', section);
    if (life) {
      badge.textContent = life.latest.state;
      badge.dataset.state = life.latest.state;
      $('.lifecycle-since', section).textContent = `since ${new Date(life.latest.since).toLocaleTimeString()}`;
      $('.lifecycle-history', section).innerHTML = history(life.latest.history, life.latest.state);
    }
    $('.supervisor', section).innerHTML = supervisorPanel(byId.get(SUPERVISOR));
    $('.shutdown', section).innerHTML = shutdownPanel(byId.get(SHUTDOWN));
    $('.units', section).innerHTML = unitsPanel(node, units);
    for (const m of node.machines) {
      const def = defs.get(m.machine);
      if (!def) continue;
      let d = diagrams.get(m.machine);
      if (!d) {
        const fig = document.createElement('figure');
        fig.className = 'diagram-wrap';
        fig.dataset.machine = m.machine;
        fig.innerHTML = `<figcaption>${esc(m.machine)} <small class="muted"></small></figcaption>`;
        d = ZlinkDiagram.build(def);
        d.caption = $('small', fig);
        fig.appendChild(d.element);
        $('.diagrams', section).appendChild(fig);
        diagrams.set(m.machine, d);
        requestAnimationFrame(d.draw);
      }
      const counts = new Map();
      const single = SINGLE.has(m.machine);
      const states = single ? { [m.latest.state]: 1 } : m.byState;
      for (const [path, n] of Object.entries(states)) for (const p of path.split(',')) counts.set(`${m.machine}.${p}`, (counts.get(`${m.machine}.${p}`) || 0) + n);
      d.light(counts, !single);
      d.caption.textContent = single ? `${m.latest.state} (${m.latest.status})` : `${m.live} live of ${m.total}`;
    }
  }

  function supervisorPanel(m) {
    if (!m) return '<h3>Relocation</h3><p class="muted">no Relocate on this host</p>';
    const l = m.latest;
    const c = l.context || {};
    const batch = /batch(\d+)/.exec(l.state);
    const counts = c.counts ? [c.counts.batch1, c.counts.batch2, c.counts.batch3] : undefined;
    return (
      `<h3>Relocation supervisor <small class="muted">${m.total > 1 ? `operation ${m.total} on this host` : ''}</small></h3>` +
      '<dl class="kv">' +
      `<dt>state</dt><dd><span class="state-badge supervisor-state" data-state="${attr(l.state)}">${esc(l.state)}</span> <span class="muted">${esc(l.status)}</span></dd>` +
      `<dt>batch</dt><dd class="supervisor-batch">${batch ? `${batch[1]} of 3` : '—'}${counts ? ` <span class="muted">(units per batch ${counts.join(' / ')})</span>` : ''}</dd>` +
      `<dt>target</dt><dd>${c.target ? `${esc(c.target.nodeId)} <span class="muted">generation ${esc(c.target.lifecycleGeneration)}</span>` : '—'}</dd>` +
      (c.blockedReason !== undefined ? `<dt>blocked reason</dt><dd>${esc(c.blockedReason)}</dd>` : '') +
      `<dt>path</dt><dd><ol class="history">${history(l.history, l.state)}</ol></dd>` +
      '</dl>'
    );
  }

  /** Leaf states of a definition in declaration order (the steps of a sequential machine). */
  function leaves(state, out) {
    if (!state.children.length) out.push(state.id);
    for (const c of state.children) leaves(c, out);
    return out;
  }

  function shutdownPanel(m) {
    if (!m) return '<h3>Shutdown</h3><p class="muted">not started</p>';
    const l = m.latest;
    const def = defs.get(m.machine);
    const prefix = `${m.machine}.`;
    const steps = def ? leaves(def.root, []).map((id) => id.slice(prefix.length)) : l.history;
    const visited = new Set(l.history);
    const items = steps
      .map((s) => `<li data-step="${attr(s)}" class="${s === l.state ? 'current' : visited.has(s) ? 'visited' : 'pending'}">${esc(s)}${visited.has(s) && s !== l.state ? ' ✓' : ''}</li>`)
      .join('');
    return `<h3>Shutdown steps <small class="muted">${esc(l.status)}</small></h3><ol class="steps">${items}</ol>`;
  }

  /** A §8 point of a sampled unit: S0 as a time of day, the others relative to it. */
  function point(u, p) {
    if (!u || u.points[p] === undefined) return '';
    if (p === 'S0') return new Date(u.points.S0).toLocaleTimeString();
    return u.points.S0 === undefined ? '✓' : `+${u.points[p] - u.points.S0} ms`;
  }
  const POINTS = ['S0', 'S1', 'S2', 'S3', 'S4'];

  function unitsPanel(node, units) {
    const machines = node.machines.filter((m) => !SINGLE.has(m.machine));
    let html = '<h3>Unit machines</h3>';
    if (!machines.length) html += '<p class="muted">none on this host yet</p>';
    for (const m of machines) {
      const def = defs.get(m.machine);
      const order = def ? leaves(def.root, []).map((id) => id.slice(m.machine.length + 1)) : [];
      const states = Object.keys(m.byState).sort((a, b) => rank(order, a) - rank(order, b) || a.localeCompare(b));
      const max = Math.max(1, ...Object.values(m.byState));
      html += `<div class="machine" data-machine="${attr(m.machine)}"><h3>${esc(m.machine)} <small class="muted">${m.live} live / ${m.total} seen</small></h3>`;
      for (const s of states) {
        const n = m.byState[s];
        const final = def && isFinal(def.root, `${m.machine}.${s}`);
        html += `<div class="bar${final ? '' : ' live'}" data-state="${attr(s)}"><span class="fill" style="width:${((100 * n) / max).toFixed(1)}%"></span><span class="name">${esc(s)}</span><span class="count">${n}</span></div>`;
      }
      if (m.samples.length) {
        // Actors whose id is a sampled unit's (source unit machines) show that unit's S0–S4 too.
        const joined = m.samples.some((s) => units.has(s.id));
        html += `<table class="samples"><thead><tr><th>sample</th><th>state</th><th>path</th>${joined ? POINTS.map((p) => `<th class="num">${p}</th>`).join('') : ''}</tr></thead><tbody>`;
        for (const s of m.samples) {
          const u = units.get(s.id);
          html += `<tr data-sample="${attr(s.id)}"><td class="id">${esc(s.id)}</td><td>${esc(s.state)}</td><td class="muted path">${esc(s.history.join(' → '))}</td>`;
          if (joined) html += POINTS.map((p) => `<td class="num" data-point="${p}">${point(u, p)}</td>`).join('');
          html += '</tr>';
        }
        html += '</tbody></table>';
      }
      html += '</div>';
    }
    if (node.units) html += unitEventsTable(node.units);
    return html;
  }

  function rank(order, s) {
    const i = order.indexOf(s);
    return i < 0 ? order.length : i;
  }

  function isFinal(state, id) {
    if (state.id === id) return state.type === 'final';
    return state.children.some((c) => isFinal(c, id));
  }

  function unitEventsTable(units) {
    let html = '<h3>Unit events <small class="muted">(host.on(UNIT_CHANGED))</small></h3>';
    for (const side of Object.keys(units.byKind)) {
      const kinds = units.byKind[side];
      const states = [...new Set(Object.values(kinds).flatMap((k) => Object.keys(k)))];
      html += `<table class="unit-events" data-side="${attr(side)}"><thead><tr><th>${esc(side)}</th>${states.map((s) => `<th class="num">${esc(s)}</th>`).join('')}</tr></thead><tbody>`;
      for (const [kind, counts] of Object.entries(kinds)) html += `<tr><td>${esc(kind)}</td>${states.map((s) => `<td class="num">${counts[s] || ''}</td>`).join('')}</tr>`;
      html += '</tbody></table>';
    }
    return html;
  }

  function renderUnits(units) {
    const section = $('#units');
    section.hidden = units.length === 0;
    $('#unit-samples tbody').innerHTML = units
      .map(
        (u) =>
          `<tr data-unit="${attr(u.unit)}"><td>${esc(u.unit)}</td><td>${esc(u.kind)}</td><td>${u.batch ?? ''}</td><td>${esc(u.source || '?')} → ${esc(u.target || '?')}</td>` +
          `<td>${esc(u.sourceState || '')}</td><td>${esc(u.targetState || '')}</td>` +
          POINTS.map((p) => `<td class="num" data-point="${p}">${point(u, p)}</td>`).join('') +
          '</tr>',
      )
      .join('');
  }

  connect();
})();
