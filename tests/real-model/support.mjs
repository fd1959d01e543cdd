// The local model server these tests talk to. pkg-scripts/test.sh (tier real-model) starts it
// and passes its address in KL_LOCAL_MODEL_URL; without it the tests fail (never skip).

import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { OUTPUT_DIR } from '../e2e/support/browser.mjs';

/** {baseUrl (…/v1), origin, name} of the running local model server. */
export function localModel() {
  const baseUrl = process.env.KL_LOCAL_MODEL_URL;
  if (!baseUrl) {
    throw new Error('KL_LOCAL_MODEL_URL is not set: run these tests with `pkg-scripts/test.sh --tier real-model`, ' +
      'which fetches the embedded model and starts its server.');
  }
  return {
    baseUrl,
    origin: new URL(baseUrl).origin,
    name: process.env.KL_LOCAL_MODEL_NAME || 'local-model',
  };
}

/** The server's /stats (cumulative counters and token rates). */
export async function serverStats() {
  const res = await fetch(`${localModel().origin}/stats`);
  if (!res.ok) throw new Error(`GET /stats answered ${res.status}`);
  return res.json();
}

/** POST /v1/chat/completions; returns the fetch Response. */
export function chat(body, { signal } = {}) {
  return fetch(`${localModel().baseUrl}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: localModel().name, ...body }),
    signal,
  });
}

/** Whether the run asked for the larger local set (pkg-scripts/test.sh --full). */
export const FULL = process.env.KL_REAL_MODEL_FULL === '1';

/** Writes test-output/<name> as pretty JSON; returns its path. */
export async function writeReport(name, value) {
  await mkdir(OUTPUT_DIR, { recursive: true });
  const path = join(OUTPUT_DIR, name);
  await writeFile(path, `${JSON.stringify(value, null, 2)}\n`);
  return path;
}
