// Combines the per-model results of bench/quality/run.mjs into one file and prints the table
// docs/performance.md shows: per model, ours and the baseline side by side.
//
//   node bench/quality/report.mjs --out target/bench/quality.json RESULT.json...

import { readFileSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

const { values, positionals } = parseArgs({ options: { out: { type: 'string' } }, allowPositionals: true });
if (positionals.length === 0) {
  process.stderr.write('usage: node bench/quality/report.mjs --out FILE RESULT.json...\n');
  process.exit(2);
}
const results = positionals.map((p) => JSON.parse(readFileSync(p, 'utf8')));

const pct = (n, d) => (d ? `${n}/${d} (${Math.round((100 * n) / d)}%)` : '–');
const num = (v, digits = 1) => (v === null || v === undefined ? '–' : Number(v).toFixed(digits));
const secs = ({ median, p90 }) => `${num(median)} / ${num(p90)}`;

const lines = [
  '| model (GGUF sha256) | system | answerable right | past the excerpt right | "does not say" on unanswerable | explain: key facts | prompt echoes | model calls | prompt tokens (first request) | first token s (median / p90) | seconds per answer (median / p90) |',
  '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
];
for (const r of results) {
  for (const system of ['ours', 'baseline']) {
    const s = r[system];
    lines.push(`| ${system === 'ours' ? `${r.label} (\`${r.model_sha256?.slice(0, 12)}…\`)` : ''} | ${system} | ` +
      `${pct(s.correct, s.answerable)} | ${pct(s.past_excerpt.correct, s.past_excerpt.n)} | ${pct(s.abstained, s.unanswerable)} | ` +
      `${s.explain_facts === null ? '–' : `${Math.round(s.explain_facts * 100)}%`} | ${s.echoes}/${s.items} | ${num(s.model_calls_mean)} | ` +
      `${num(s.prompt_tokens_median, 0)} (${num(s.first_request_tokens_median, 0)}) | ${secs(s.first_token_s)} | ${secs(s.seconds)} |`);
  }
}
// Questions answerable within the first excerpt: what one answer costs, ours against the
// baseline (the target: one model call, at most 1.25 times the baseline's prompt tokens).
lines.push('', '| model | within the excerpt: right (ours / baseline) | model calls (ours) | prompt tokens, median (ours / baseline) | ratio |', '| --- | --- | --- | --- | --- |');
for (const r of results) {
  const [o, b] = [r.ours.within_excerpt, r.baseline.within_excerpt];
  const ratio = o.prompt_tokens_median && b.prompt_tokens_median ? (o.prompt_tokens_median / b.prompt_tokens_median).toFixed(2) : '–';
  lines.push(`| ${r.label} | ${o.correct}/${o.n} / ${b.correct}/${b.n} | ${num(o.model_calls_mean, 2)} | ${num(o.prompt_tokens_median, 0)} / ${num(b.prompt_tokens_median, 0)} | ${ratio} |`);
}
const table = lines.join('\n');
if (values.out) {
  writeFileSync(values.out, `${JSON.stringify({
    generated: new Date().toISOString(),
    models: results.map(({ rows, ...summary }) => summary),
    results,
  }, null, 2)}\n`);
  process.stderr.write(`[bench-quality] wrote ${values.out}\n`);
}
process.stdout.write(`${table}\n`);
