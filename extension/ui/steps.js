// @ts-check
// The Steps region: the run's trajectory as the worker sent it (SessionView.steps, extended by
// step_item events in view-state.js), grouped by step. A research run's `phase` entries begin
// its stages: each stage is a list item with its heading, holding its steps (a run without
// them is a plain list of steps). Each entry is built once per content and kept, so an open
// result stays open while later entries arrive.

import { formatCount, h, setChildren } from './dom.js';

/** Results longer than this start collapsed. */
const COLLAPSE_CHARS = 280;

const LABELS = {
  thought: 'Reasoning',
  tool_call: 'Tool call',
  tool_result: 'Result',
  observation: 'Observation',
  reflection: 'Reflection',
  error: 'Error',
  answer: 'Answer',
  compaction: 'Compaction',
  search: 'Web search',
  grades: 'Grades',
  rewrite: 'Rewritten query',
  search_fallback: 'Search fallback',
  section_summary: 'Section summary',
};

/** A result's grade as its mark shows it; anything else counts as ungraded. */
const GRADE_MARKS = {
  relevant: 'relevant',
  not_relevant: 'not relevant',
  ungraded: 'ungraded',
};

/** `text` as pretty JSON when it is JSON, else unchanged. */
function pretty(text) {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text ?? '';
  }
}

/** "(first 4,000 of 9,120 characters)" when the worker cut the text, else ''. */
function cutNote(shown, total) {
  const full = Number(total);
  if (!Number.isFinite(full) || full <= (shown ?? '').length) return '';
  return ` (first ${formatCount((shown ?? '').length)} of ${formatCount(full)} characters)`;
}

function marks(item) {
  return [
    item.failed ? h('span', { className: 'mark mark-failed' }, 'failed') : null,
    item.retrying ? h('span', { className: 'mark mark-retry' }, 'retrying') : null,
  ];
}

function heading(item, label) {
  return h('p', { className: 'entry-label' }, label, ...marks(item));
}

function toolCall(item) {
  // Older snapshots carry "name(arguments)" in `text`.
  const tool = item.tool ?? /^([\w.-]+)\(/.exec(item.text ?? '')?.[1] ?? '';
  const args = item.arguments ?? (tool ? (item.text ?? '').slice(tool.length + 1, -1) : item.text);
  return [
    heading(item, `${LABELS.tool_call}: ${tool || 'unknown tool'}`),
    h('p', { className: 'entry-sub' }, `Arguments${cutNote(args, item.arguments_chars)}`),
    h('pre', { className: 'entry-code' }, pretty(args)),
  ];
}

function toolResult(item) {
  const text = item.text ?? '';
  const label = `${LABELS.tool_result}${item.tool ? ` of ${item.tool}` : ''}`;
  const note = cutNote(text, item.text_chars);
  const body = h('pre', { className: 'entry-code' }, text);
  if (text.length <= COLLAPSE_CHARS) return [heading(item, label + note), body];
  const chars = formatCount(item.text_chars ?? text.length);
  return [
    heading(item, label),
    h('details', { className: 'entry-details' }, h('summary', {}, `Show the result (${chars} characters)${note}`), body),
  ];
}

/** `url` as a link when it is http(s), else as text: results come from the web. */
function urlNode(url) {
  const text = String(url ?? '');
  let web = false;
  try {
    web = ['http:', 'https:'].includes(new URL(text).protocol);
  } catch {
    web = false;
  }
  if (!web) return h('span', { className: 'grade-url' }, text);
  return h('a', { className: 'grade-url', href: text, target: '_blank', rel: 'noopener noreferrer' }, text);
}

/** "confidence 85%", or '' when the grader gave none. */
function confidenceText(confidence) {
  if (confidence === null || confidence === undefined || confidence === '') return '';
  const value = Number(confidence);
  if (!Number.isFinite(value)) return '';
  return `confidence ${Math.round(Math.min(1, Math.max(0, value)) * 100)}%`;
}

function gradeNode(result) {
  const grade = Object.hasOwn(GRADE_MARKS, result?.grade) ? result.grade : 'ungraded';
  const confidence = confidenceText(result?.confidence);
  const reason = String(result?.reason ?? '');
  return h(
    'li',
    { className: `grade grade-${grade}` },
    h(
      'p',
      { className: 'grade-head' },
      h('span', { className: `mark mark-${grade.replace('_', '-')}` }, GRADE_MARKS[grade]),
      h('span', { className: 'grade-title' }, String(result?.title ?? '') || '(untitled)'),
    ),
    urlNode(result?.url),
    confidence || reason
      ? h(
        'p',
        { className: 'grade-note' },
        confidence ? h('span', { className: 'grade-confidence' }, confidence) : null,
        confidence && reason ? ' — ' : null,
        reason ? h('span', { className: 'grade-reason' }, reason) : null,
      )
      : null,
  );
}

function grades(item) {
  const content = [heading(item, LABELS.grades), h('p', { className: 'entry-text' }, item.text ?? '')];
  const results = Array.isArray(item.grades) ? item.grades : [];
  if (results.length) {
    content.push(h('ul', { className: 'grade-list', 'aria-label': 'Result grades' }, results.map(gradeNode)));
  }
  return content;
}

function entryNode(item) {
  const kind = LABELS[item.kind] ? item.kind : 'thought';
  let content;
  if (kind === 'tool_call') content = toolCall(item);
  else if (kind === 'tool_result') content = toolResult(item);
  else if (kind === 'grades') content = grades(item);
  else content = [heading(item, LABELS[kind]), h('p', { className: 'entry-text' }, item.text ?? '')];
  const classes = ['entry', `entry-${kind}`, item.failed ? 'is-failed' : '', item.retrying ? 'is-retrying' : ''];
  return h('li', { className: classes.filter(Boolean).join(' '), 'data-index': item.index }, ...content);
}

function stepNode(step) {
  const list = h('ol', { className: 'entries' });
  const node = h(
    'li',
    { className: 'step', 'data-step': step },
    h('p', { className: 'step-head' }, h('span', { className: 'step-badge' }, String(step)), `Step ${step}`),
    list,
  );
  return { node, list };
}

/** A research stage: its heading (a real heading, for screen readers) and its steps. */
function stageNode(heading) {
  const list = h('ol', { className: 'stage-steps' });
  const node = h('li', { className: 'stage' }, h('h3', { className: 'stage-head' }, heading), list);
  return { node, list };
}

/** Whether `item` begins a research stage (it is its heading, not an entry). */
const isPhase = (item) => item?.kind === 'phase';

/** How many steps and entries `steps` holds (a stage's heading is neither). */
export function stepCounts(steps) {
  const entries = (steps ?? []).filter((item) => !isPhase(item));
  return { steps: new Set(entries.map((item) => item.step)).size, entries: entries.length };
}

/**
 * `steps` split into stages: [{phase, items}] in order, where `phase` is the entry that began
 * the stage (null for the entries before any) and `items` the entries after it.
 */
export function stagesOf(steps) {
  const stages = [];
  let current = null;
  for (const item of steps ?? []) {
    if (isPhase(item)) {
      current = { phase: item, items: [] };
      stages.push(current);
    } else {
      if (!current) {
        current = { phase: null, items: [] };
        stages.push(current);
      }
      current.items.push(item);
    }
  }
  return stages;
}

/** Renders `steps` into `listElement` (an `<ol>`), reusing the nodes of unchanged entries. */
export function createStepsView(listElement) {
  /** index -> {key, node} */
  const entries = new Map();
  /** "stage/step" -> {node, list} */
  const groups = new Map();
  /** "phase index/heading" -> {node, list} */
  const stageNodes = new Map();

  /** The step nodes of `items` (entries of one stage, `stage` its key), by step. */
  function stepNodes(stage, items, seen, used) {
    const byStep = new Map();
    for (const item of items) {
      const key = JSON.stringify(item);
      let cached = entries.get(item.index);
      if (!cached || cached.key !== key) {
        cached = { key, node: entryNode(item) };
        entries.set(item.index, cached);
      }
      seen.add(item.index);
      const step = Number(item.step) || 0;
      if (!byStep.has(step)) byStep.set(step, []);
      byStep.get(step).push(cached.node);
    }
    const nodes = [];
    for (const [step, stepItems] of byStep) {
      const id = `${stage}/${step}`;
      if (!groups.has(id)) groups.set(id, stepNode(step));
      used.add(id);
      const group = groups.get(id);
      setChildren(group.list, stepItems);
      nodes.push(group.node);
    }
    return nodes;
  }

  return {
    render(steps) {
      const seen = new Set();
      const used = new Set();
      const usedStages = new Set();
      const nodes = [];
      for (const { phase, items } of stagesOf(steps)) {
        if (!phase) {
          nodes.push(...stepNodes('', items, seen, used));
          continue;
        }
        const id = `${phase.index}/${phase.text ?? ''}`;
        if (!stageNodes.has(id)) stageNodes.set(id, stageNode(String(phase.text ?? '')));
        usedStages.add(id);
        const stage = stageNodes.get(id);
        setChildren(stage.list, stepNodes(String(phase.index), items, seen, used));
        nodes.push(stage.node);
      }
      for (const index of [...entries.keys()]) if (!seen.has(index)) entries.delete(index);
      for (const id of [...groups.keys()]) if (!used.has(id)) groups.delete(id);
      for (const id of [...stageNodes.keys()]) if (!usedStages.has(id)) stageNodes.delete(id);
      setChildren(listElement, nodes);
    },
  };
}
