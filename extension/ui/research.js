// @ts-check
// Research mode in the popup: the "Research" checkbox and the "Subtopics" spinbutton of the
// question form, the research bound shown instead of "Max steps", and the status line of a
// research run (its current stage, from the `phase` entries of the steps, with the activity).
// The pure functions are tested in tests/unit/research.test.mjs.

import { RESEARCH_SUBTOPICS, RESEARCH_SUBTOPIC_ROUNDS } from '../protocol.gen.js';
import { phaseLabel } from '../view-state.js';

/** The trajectory entry kind that begins a research stage (its text is the heading). */
export const PHASE_KIND = 'phase';

/** `value` as a number of subtopics: rounded into 2..6, or the default when not a number. */
export function clampSubtopics(value) {
  const text = String(value ?? '').trim();
  const n = Number(text);
  if (!text || !Number.isFinite(n)) return RESEARCH_SUBTOPICS.default;
  return Math.min(RESEARCH_SUBTOPICS.max, Math.max(RESEARCH_SUBTOPICS.min, Math.round(n)));
}

/** Most rounds a research run of `subtopics` takes: planning, 3 per subtopic, report, review. */
export function researchBound(subtopics) {
  return 1 + clampSubtopics(subtopics) * RESEARCH_SUBTOPIC_ROUNDS + 2;
}

/** The bound as the popup says it: "Up to 15 rounds". */
export function boundText(subtopics) {
  return `Up to ${researchBound(subtopics)} rounds`;
}

/** The heading of the stage a research run is in (its last `phase` entry), or null. */
export function currentStage(steps) {
  const list = Array.isArray(steps) ? steps : [];
  for (let i = list.length - 1; i >= 0; i -= 1) {
    if (list[i]?.kind === PHASE_KIND) return String(list[i].text ?? '');
  }
  return null;
}

/**
 * The status line of a running run: what it does ("Stopping…" once asked to stop), its step
 * and tool. A research run names its stage before the activity; its `max_steps` is the
 * research bound (1 + subtopics × 3 + 2, by the subtopics found once they are known).
 */
export function runningStatus(view, stopping = false) {
  const stage = currentStage(view?.steps);
  const doing = stopping ? 'Stopping…' : phaseLabel(view);
  const parts = [stage === null ? doing : `${stage} — ${doing}`];
  if (view.step > 0) parts.push(`Step ${view.step} of ${view.max_steps}`);
  if (view.tool) parts.push(`using ${view.tool}`);
  return parts.join(' · ');
}

/**
 * Wires the research controls: `checkbox` (Research), `subtopics` (the spinbutton), `bound`
 * (the bound text, the spinbutton's description) and `maxSteps` (disabled in research mode).
 */
export function createResearchControls({ checkbox, subtopics, bound, maxSteps }) {
  subtopics.min = String(RESEARCH_SUBTOPICS.min);
  subtopics.max = String(RESEARCH_SUBTOPICS.max);
  subtopics.value = String(RESEARCH_SUBTOPICS.default);
  let running = false;

  function render(isRunning = running) {
    running = isRunning;
    const on = checkbox.checked;
    checkbox.disabled = running;
    subtopics.disabled = running || !on;
    maxSteps.disabled = running || on;
    bound.hidden = !on;
    bound.textContent = boundText(subtopics.value);
  }

  checkbox.addEventListener('change', () => render());
  subtopics.addEventListener('input', () => render());

  return {
    render,
    /** The `research` field of an ask ({subtopics}, the box set to what is sent), or null. */
    request() {
      if (!checkbox.checked) return null;
      const n = clampSubtopics(subtopics.value);
      subtopics.value = String(n);
      render();
      return { subtopics: n };
    },
  };
}
