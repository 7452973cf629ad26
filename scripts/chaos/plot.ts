// A plot of series over time, drawn as SVG by hand and rendered to PNG with resvg: panels stacked on one time axis,
// each with its own y axis and a legend, so an operator sees at a glance whether a line is flat.
import { Resvg } from '@resvg/resvg-js';

export interface Series {
  name: string;
  /** [seconds from the start, value] */
  points: Array<[number, number]>;
}

export interface Panel {
  title: string;
  unit: string;
  series: Series[];
}

const WIDTH = 1000;
const PANEL_HEIGHT = 260;
const MARGIN = { left: 70, right: 200, top: 30, bottom: 40 };
const COLOURS = [
  '#1f77b4',
  '#ff7f0e',
  '#2ca02c',
  '#d62728',
  '#9467bd',
  '#8c564b',
  '#e377c2',
  '#7f7f7f',
  '#bcbd22',
  '#17becf',
];

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** A "nice" step for about `ticks` ticks over `span`. */
function step(span: number, ticks: number): number {
  const raw = span / Math.max(1, ticks);
  const mag = 10 ** Math.floor(Math.log10(raw || 1));
  return ([1, 2, 5, 10].find((m) => m * mag >= raw) ?? 10) * mag;
}

function panelSvg(panel: Panel, top: number, tMax: number): string {
  const w = WIDTH - MARGIN.left - MARGIN.right;
  const h = PANEL_HEIGHT - MARGIN.top - MARGIN.bottom;
  const values = panel.series.flatMap((s) => s.points.map(([, v]) => v)).filter(Number.isFinite);
  const yMax = Math.max(1, ...values) * 1.1;
  const x = (t: number) => MARGIN.left + (t / Math.max(1, tMax)) * w;
  const y = (v: number) => top + MARGIN.top + h - (v / yMax) * h;
  const out: string[] = [
    `<text x="${MARGIN.left}" y="${top + 20}" font-size="15" font-weight="bold">${esc(panel.title)}</text>`,
  ];
  const yStep = step(yMax, 5);
  for (let v = 0; v <= yMax; v += yStep) {
    out.push(`<line x1="${MARGIN.left}" x2="${MARGIN.left + w}" y1="${y(v)}" y2="${y(v)}" stroke="#ddd"/>`);
    out.push(`<text x="${MARGIN.left - 6}" y="${y(v) + 4}" font-size="11" text-anchor="end">${+v.toFixed(2)}</text>`);
  }
  const tStep = step(tMax, 10);
  for (let t = 0; t <= tMax; t += tStep)
    out.push(
      `<text x="${x(t)}" y="${top + MARGIN.top + h + 16}" font-size="11" text-anchor="middle">${Math.round(t)}</text>`,
    );
  out.push(
    `<text x="${MARGIN.left + w / 2}" y="${top + PANEL_HEIGHT - 6}" font-size="12" text-anchor="middle">seconds</text>`,
  );
  out.push(
    `<text x="16" y="${top + MARGIN.top + h / 2}" font-size="12" transform="rotate(-90 16 ${top + MARGIN.top + h / 2})" text-anchor="middle">${esc(panel.unit)}</text>`,
  );
  out.push(`<rect x="${MARGIN.left}" y="${top + MARGIN.top}" width="${w}" height="${h}" fill="none" stroke="#888"/>`);
  panel.series.forEach((s, i) => {
    const colour = COLOURS[i % COLOURS.length]!;
    const pts = s.points.filter(([, v]) => Number.isFinite(v)).map(([t, v]) => `${x(t).toFixed(1)},${y(v).toFixed(1)}`);
    if (pts.length) out.push(`<polyline fill="none" stroke="${colour}" stroke-width="1.6" points="${pts.join(' ')}"/>`);
    const ly = top + MARGIN.top + 12 + i * 16;
    out.push(
      `<line x1="${MARGIN.left + w + 12}" x2="${MARGIN.left + w + 30}" y1="${ly - 4}" y2="${ly - 4}" stroke="${colour}" stroke-width="3"/>`,
    );
    out.push(`<text x="${MARGIN.left + w + 36}" y="${ly}" font-size="11">${esc(s.name)}</text>`);
  });
  return out.join('\n');
}

/** The panels, one under the other, as a PNG. */
export function plotPng(panels: Panel[]): Buffer {
  const tMax = Math.max(1, ...panels.flatMap((p) => p.series.flatMap((s) => s.points.map(([t]) => t))));
  const height = PANEL_HEIGHT * panels.length;
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" font-family="DejaVu Sans, sans-serif"><rect width="100%" height="100%" fill="white"/>${panels.map((p, i) => panelSvg(p, i * PANEL_HEIGHT, tMax)).join('\n')}</svg>`;
  return Buffer.from(new Resvg(svg, { background: 'white' }).render().asPng());
}
