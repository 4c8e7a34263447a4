// flame.js: what the job page adds to d3-flame-graph: a tooltip that stays
// inside the window (the library's compares page coordinates with the
// window's size, so it leaves the screen once the page is scrolled), frames
// reachable by keyboard, the frame orderings, and the sandwich view of one
// function (its callers and its callees) computed from the flame graph JSON.

// A tooltip with the interface d3-flame-graph calls (a function of the svg
// selection, with show(event, d), hide() and destroy()). position: fixed and
// the pointer's client coordinates, clamped to the viewport.
export function screenTooltip(html) {
  let div = null;
  function tip() {
    if (!div) {
      div = document.createElement('div');
      div.className = 'd3-flame-graph-tip screen-tip';
      div.setAttribute('role', 'tooltip');
      div.style.display = 'none';
      document.body.append(div);
    }
  }
  tip.show = (event, d) => {
    tip();
    div.innerHTML = html(d);
    div.style.display = 'block';
    div.style.opacity = '1';
    // a frame focused by keyboard has no pointer: place the tip by the frame
    let x = event && event.clientX !== undefined ? event.clientX : 0;
    let y = event && event.clientY !== undefined ? event.clientY : 0;
    if (event && event.rect) ({ x, y } = { x: event.rect.left + 10, y: event.rect.bottom });
    const w = div.offsetWidth;
    const h = div.offsetHeight;
    let left = x + 12;
    let top = y + 12;
    if (left + w > window.innerWidth - 4) left = Math.max(4, x - w - 12);
    if (top + h > window.innerHeight - 4) top = Math.max(4, y - h - 12);
    div.style.left = left + 'px';
    div.style.top = top + 'px';
  };
  tip.hide = () => {
    if (div) div.style.display = 'none';
  };
  tip.destroy = () => {
    if (div) div.remove();
    div = null;
  };
  tip.element = () => div;
  return tip;
}

// Orderings of the frames of one parent, left to right: by weight (the
// heaviest first: "left-heavy") or by name.
export const ORDERS = {
  weight: (a, b) => (b.data.value - a.data.value) || a.data.name.localeCompare(b.data.name),
  name: (a, b) => a.data.name.localeCompare(b.data.name),
};

// Roving focus over the drawn frames: one frame is in the tab order (the
// last focused, else the root); arrows move to the parent, the heaviest
// drawn child, or the previous/next drawn sibling; Enter zooms;
// Escape resets the zoom. up/down follow the layout (icicle: root on top).
export function keyboardFrames(container, opts) {
  let current = null; // id of the frame in the tab order

  function frames() {
    return [...container.querySelectorAll('g.frame')];
  }
  function gOf(id) {
    return container.querySelector(`g.frame[data-id="${id}"]`);
  }
  function refresh() {
    const gs = frames();
    for (const g of gs) {
      const d = d3.select(g).datum();
      g.setAttribute('data-id', d.id);
      g.setAttribute('tabindex', '-1');
      g.setAttribute('role', 'button');
      g.setAttribute('aria-label', opts.label(d));
    }
    const g = (current !== null && gOf(current)) || gs[0];
    if (g) g.setAttribute('tabindex', '0');
  }
  function move(to) {
    if (!to) return;
    const g = gOf(to.id);
    if (!g) return;
    for (const x of container.querySelectorAll('g.frame[tabindex="0"]')) x.setAttribute('tabindex', '-1');
    g.setAttribute('tabindex', '0');
    current = to.id;
    g.focus();
  }
  const drawn = (ds) => (ds || []).filter((d) => gOf(d.id));
  container.addEventListener('focusin', (ev) => {
    const g = ev.target.closest && ev.target.closest('g.frame');
    if (!g) return;
    current = Number(g.getAttribute('data-id'));
    opts.onFocus(d3.select(g).datum(), g);
  });
  container.addEventListener('focusout', () => opts.onBlur());
  container.addEventListener('keydown', (ev) => {
    const g = ev.target.closest && ev.target.closest('g.frame');
    if (!g) return;
    const d = d3.select(g).datum();
    const up = opts.inverted() ? 'ArrowDown' : 'ArrowUp';
    const down = opts.inverted() ? 'ArrowUp' : 'ArrowDown';
    const sibs = d.parent ? drawn(d.parent.children).sort((a, b) => a.x0 - b.x0) : [d];
    const i = sibs.findIndex((s) => s.id === d.id);
    let to = null;
    if (ev.key === up) to = drawn(d.children).sort((a, b) => b.value - a.value)[0];
    else if (ev.key === down) to = d.parent;
    else if (ev.key === 'ArrowLeft') to = sibs[i - 1];
    else if (ev.key === 'ArrowRight') to = sibs[i + 1];
    else if (ev.key === 'Enter' || ev.key === ' ') {
      opts.zoom(d);
      ev.preventDefault();
      return;
    } else if (ev.key === 'Escape') {
      opts.reset();
      return;
    } else if (opts.keys && opts.keys[ev.key] && !ev.ctrlKey && !ev.metaKey && !ev.altKey) {
      opts.keys[ev.key](d);
      ev.preventDefault();
      return;
    } else return;
    ev.preventDefault();
    move(to);
  });
  return { refresh, current: () => current };
}

// ---- the sandwich ----

// Adds a path of names with weight w into a tree {name, value, children}.
function addPath(tree, names, w) {
  tree.value += w;
  let t = tree;
  for (const name of names) {
    let c = t.kids.get(name);
    if (!c) t.kids.set(name, (c = { name, value: 0, kids: new Map() }));
    c.value += w;
    t = c;
  }
}

function addSubtree(into, node) {
  for (const ch of node.children || []) {
    let c = into.kids.get(ch.name);
    if (!c) into.kids.set(ch.name, (c = { name: ch.name, value: 0, kids: new Map() }));
    c.value += ch.value;
    addSubtree(c, ch);
  }
}

// d3-flame-graph's shape: children arrays, heaviest first.
function finish(t) {
  const children = [...t.kids.values()].map(finish).sort((a, b) => b.value - a.value);
  return { name: t.name, value: t.value, children };
}

// The callers and callees of the function named fn in a flame graph JSON
// tree (the API's: value = total, self = own weight). Each outermost
// instance of fn counts once (recursion is not counted twice): callers is
// the tree of the paths that lead to those instances, read from fn
// outwards, weighted by their totals; callees merges their subtrees.
// The root ("all") and nothing above it is left out of the callers.
export function sandwich(root, fn) {
  const callers = { name: fn, value: 0, kids: new Map() };
  const callees = { name: fn, value: 0, kids: new Map() };
  let self = 0;
  let instances = 0;
  (function walk(n, path, inside) {
    const here = n.name === fn && n !== root;
    if (here) {
      self += n.self || 0;
      instances++;
    }
    if (here && !inside) {
      addPath(callers, [...path].reverse(), n.value);
      callees.value += n.value;
      addSubtree(callees, n);
    } else if (here) {
      // a recursive instance: its weight is in the outer one's already;
      // its own self weight is counted above (the function's self)
    }
    const next = n === root ? [] : [...path, n.name];
    for (const c of n.children || []) walk(c, next, inside || here);
  })(root, [], false);
  return { callers: finish(callers), callees: finish(callees), total: callers.value, self, instances };
}
