// colors.js: the flame graphs' and timelines' colours: by frame kind, the
// hue from the function's name (the same name, the same colour in every
// view), and the legend of the kinds.
import { el } from './util.js';

export const HIGHLIGHT = '#e600e6';
const KINDS = [
  ['user', 'user-space function'],
  ['kernel', 'kernel function'],
  ['marker', 'trap or interrupt entry, [unknown]'],
  ['process', 'process root'],
  ['inline', 'inlined function'],
  ['firmware', 'machine-mode firmware (OpenSBI)'],
];

// Kernel frames in blues, user frames in oranges: told apart also by people
// who do not see red and green apart. Light fills keep black labels readable.
function hashOf(name) {
  let h = 0;
  for (let i = 0; i < name.length; i++) h = (h * 31 + name.charCodeAt(i)) >>> 0;
  return h;
}

export function frameColor(libtype, name) {
  const v = (hashOf(name || '') % 1000) / 1000;
  switch (libtype) {
    case 'kernel': return `hsl(${205 + 20 * v}, 70%, ${68 + 12 * v}%)`;
    case 'marker': return `hsl(0, 0%, ${72 + 8 * v}%)`;
    case 'process': return `hsl(${150 + 15 * v}, 40%, ${66 + 10 * v}%)`;
    case 'inline': return `hsl(${48 + 8 * v}, 85%, ${70 + 10 * v}%)`;
    case 'firmware': return `hsl(${270 + 20 * v}, 45%, ${72 + 10 * v}%)`;
    case 'root': return 'hsl(0, 0%, 86%)';
    default: return `hsl(${12 + 28 * v}, 85%, ${64 + 12 * v}%)`;
  }
}

export function legend() {
  return el('ul', { class: 'legend', 'aria-label': 'colours' },
    KINDS.map(([k, label]) => el('li', {},
      el('span', { class: 'swatch', style: `background:${frameColor(k, 'sample')}` }), label)),
    el('li', {}, el('span', { class: 'swatch', style: `background:${HIGHLIGHT}` }), 'search match'));
}
