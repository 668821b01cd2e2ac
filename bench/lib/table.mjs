/** The text table: one block per figure, its rows, ratios, survivors, and each goal's verdict. */

function fmt(value, unit) {
  if (!Number.isFinite(value)) return '-';
  // Ratios and shares of a core read to two places, as the ratio column does.
  if (unit === '×' || unit === 'core') return value.toFixed(2);
  if (unit === 'ms' || unit === 'ms/s') return value >= 100 ? value.toFixed(0) : value >= 10 ? value.toFixed(1) : value >= 1 ? value.toFixed(2) : value.toFixed(3);
  return value >= 100 ? value.toFixed(0) : value.toFixed(1);
}

function fmtRate(value) {
  if (!Number.isFinite(value)) return '';
  if (value >= 1e6) return `${(value / 1e6).toFixed(2)}M`;
  if (value >= 1e4) return `${(value / 1e3).toFixed(0)}k`;
  return value >= 100 ? value.toFixed(0) : value.toFixed(1);
}

const pad = (text, width) => String(text).padEnd(width);
const lpad = (text, width) => String(text).padStart(width);

export function renderFigure(figure) {
  const lines = [`${figure.number}. ${figure.title}`];
  const nameWidth = Math.max(28, ...figure.groups.flatMap((g) => g.rows.map((r) => r.name.length + (r.ours ? 7 : 0))));
  lines.push(`   ${pad('', nameWidth)} ${lpad('n', 4)} ${lpad('min', 9)} ${lpad('median', 9)} ${lpad('p95', 9)}  ${pad('unit', 4)} ${lpad('rate', 16)}  ${pad('ours ÷ this', 14)} survivors`);
  for (const g of figure.groups) {
    if (g.name) lines.push(`  ${g.name}`);
    for (const r of g.rows) {
      const name = r.ours ? `${r.name} (ours)` : r.name;
      if (r.skipped) {
        lines.push(`   ${pad(name, nameWidth)} skipped: ${r.skipped}`);
        continue;
      }
      const rate = r.rate === undefined ? '' : `${fmtRate(r.rate)} ${r.rateUnit}`;
      const ratio = r.ratio === undefined ? '' : `${r.ratio.toFixed(2)}× ${r.ratioKind}`;
      const survivors = r.survivors ? `${r.survivors.max} (max of ${r.survivors.runs} runs)` : '';
      lines.push(
        `   ${pad(name, nameWidth)} ${lpad(r.n, 4)} ${lpad(fmt(r.min, r.unit), 9)} ${lpad(fmt(r.median, r.unit), 9)} ${lpad(fmt(r.p95, r.unit), 9)}  ${pad(r.unit, 4)} ${lpad(rate, 16)}  ${pad(ratio, 14)} ${survivors}`.trimEnd(),
      );
      if (r.note) lines.push(`   ${pad('', nameWidth)}   ${r.note}`);
    }
  }
  for (const g of figure.goals) {
    const verdict = g.met === null ? 'NOT MEASURED' : g.met ? 'goal met' : 'GOAL MISSED';
    lines.push(`   goal ${g.text}: ${g.shown} — ${verdict}`);
  }
  for (const note of figure.notes) lines.push(`   note: ${note}`);
  return lines.join('\n');
}

export function renderSummary(figures) {
  const missed = figures.flatMap((f) => f.goals.filter((g) => g.met === false).map((g) => `${f.number}. ${f.title}: ${g.text} (got ${g.shown})`));
  const unmeasured = figures.flatMap((f) => f.goals.filter((g) => g.met === null).map((g) => `${f.number}. ${f.title}: ${g.text}`));
  const lines = [];
  lines.push(missed.length === 0 ? 'All measured goals met.' : `GOAL MISSED (${missed.length}):`);
  for (const line of missed) lines.push(`  - ${line}`);
  if (unmeasured.length) {
    lines.push(`Not measured (${unmeasured.length}):`);
    for (const line of unmeasured) lines.push(`  - ${line}`);
  }
  return lines.join('\n');
}
