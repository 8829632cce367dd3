// Time-series charts for the overview (uPlot, vendored: no build, no CDN). Each chart is a <section>
// with a heading, a one-sentence summary, the plot (canvas and uPlot's visible legend) and a <details>
// data table: the canvas is drawn for sighted mouse users, the summary and the table carry the same
// numbers for keyboard and screen-reader users (WCAG 2.2 SC 1.1.1, non-text content).
// uPlot styles its elements through the CSSOM (element.style), which a CSP without 'unsafe-inline'
// allows; only style *attributes* and <style> elements would be refused.
import uPlot from '/console/vendor/uplot.js';
import { html, useEffect, useRef, useState } from './html.js';

const PLOT_HEIGHT = 220;
const UPLOT_CSS = '/console/vendor/uplot.css';

/** uPlot's stylesheet, linked once (the shell links only console.css). */
function loadUplotCss() {
  if (document.querySelector(`link[href="${UPLOT_CSS}"]`)) return;
  const link = document.createElement('link');
  link.rel = 'stylesheet';
  link.href = UPLOT_CSS;
  document.head.append(link);
}

/** Axis ticks and legend times in UTC, as the API and the data tables give them. */
const utc = (seconds) => uPlot.tzDate(new Date(seconds * 1000), 'Etc/UTC');

/** From 0, at least to 1: an all-zero series still gets a readable axis instead of a collapsed one. */
function fromZero(_u, _min, max) {
  return uPlot.rangeNum(0, Math.max(max ?? 0, 1), 0.1, true);
}

function plotOptions({ width, series, yLabel, yRange, yValue }) {
  return {
    width,
    height: PLOT_HEIGHT,
    tzDate: utc,
    scales: { x: { time: true }, y: { range: yRange ?? fromZero } },
    axes: [
      { label: 'Time (UTC)' },
      { label: yLabel, size: 60, values: yValue ? (_u, ticks) => ticks.map(yValue) : undefined },
    ],
    series: [
      { label: 'Time (UTC)' },
      ...series.map((s) => ({
        label: s.label,
        stroke: s.color,
        width: 2,
        points: { show: false },
        value: yValue ? (_u, v) => (v == null ? '—' : yValue(v)) : undefined,
      })),
    ],
    legend: { show: true },
  };
}

/**
 * The plot: uPlot in a div, rebuilt when the data change and resized with its container
 * (ResizeObserver: the window, a sidebar, a zoom). `x` is in Unix seconds; each series has
 * `label`, `color` and `values` (null for a gap).
 */
export function Plot({ x, series, yLabel, yRange, yValue }) {
  const ref = useRef(null);
  useEffect(() => {
    loadUplotCss();
    const box = ref.current;
    const width = () => Math.max(box.clientWidth, 200);
    const data = [x, ...series.map((s) => s.values)];
    const plot = new uPlot(plotOptions({ width: width(), series, yLabel, yRange, yValue }), data, box);
    const observer = new ResizeObserver(() => {
      if (plot.width !== width()) plot.setSize({ width: width(), height: PLOT_HEIGHT });
    });
    observer.observe(box);
    return () => {
      observer.disconnect();
      plot.destroy();
    };
  }, [x, series]);
  return html`<div class="chart-plot" ref=${ref} aria-hidden="true"></div>`;
}

/** A data table behind a disclosure; its rows are rendered only once opened (a day of minutes is long). */
export function DataTableToggle({ caption, columns, rows, note }) {
  const [open, setOpen] = useState(false);
  return html`<details class="chart-data" onToggle=${(e) => setOpen(e.currentTarget.open)}>
    <summary>Data table: ${caption}</summary>
    ${
      open
        ? html`${note ? html`<p class="hint">${note}</p>` : null}
            <div class="table-wrap" tabindex="0" role="region" aria-label=${`Data table: ${caption}`}>
              <table>
                <caption>
                  ${caption}
                </caption>
                <thead>
                  <tr>
                    ${columns.map((c) => html`<th scope="col">${c}</th>`)}
                  </tr>
                </thead>
                <tbody>
                  ${rows.map(
                    (row) =>
                      html`<tr>
                        <th scope="row">${row[0]}</th>
                        ${row.slice(1).map((cell) => html`<td>${cell}</td>`)}
                      </tr>`,
                  )}
                </tbody>
              </table>
            </div>`
        : null
    }
  </details>`;
}

/**
 * One chart: heading, optional headline figure, summary sentence, plot and data table.
 * `table`: { caption, columns, rows, note }.
 */
export function Chart({ id, title, headline, summary, plot, table }) {
  return html`<section class="chart" id=${id} aria-labelledby=${`${id}-title`}>
    <h3 id=${`${id}-title`}>${title}</h3>
    ${headline ? html`<p class="chart-headline">${headline}</p>` : null}
    <p class="chart-summary">${summary}</p>
    <${Plot} ...${plot} />
    <${DataTableToggle} ...${table} />
  </section>`;
}
