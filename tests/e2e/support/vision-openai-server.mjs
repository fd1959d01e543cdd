// A scripted OpenAI-compatible vision model on 127.0.0.1, for the screenshot tests: the
// ScriptedOpenAI server (openai-server.mjs) whose transcription requests (system message
// "You read text from screenshots ...") are answered here after checking their image, as a
// vision model would receive it: one user message whose content parts are a text part and an
// `image_url` part holding `data:image/png;base64,...` (OpenAI's wire format,
// https://platform.openai.com/docs/guides/images-vision). The PNG's header is decoded and
// its size checked against the 1,568-pixel limit. Every other request goes to `respond(body)`.
//
//   startScriptedVision({transcript, respond, refuseImages})
//     transcript    the text the model "reads" in the image
//     refuseImages  answer transcription requests as llama.cpp's server does for a model
//                   without a vision projector (HTTP 400, "image input is not supported")
//   server.images   every image received: {width, height, bytes, url}
//   server.problems what was wrong with a request's image (empty when all were right)

import { ScriptedOpenAI } from './openai-server.mjs';

export const MAX_SIDE = 1568;
const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

/** The size in a PNG's header (signature, then IHDR), or null when `bytes` is not a PNG. */
export function pngSize(bytes) {
  if (bytes.length < 24 || PNG_SIGNATURE.some((b, i) => bytes[i] !== b)) return null;
  if (bytes.subarray(12, 16).toString('latin1') !== 'IHDR') return null;
  return { width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20) };
}

/** The `image_url` parts of every message of a chat request: [{role, url}]. */
export function imageParts(body) {
  return (body?.messages ?? []).flatMap((m) =>
    Array.isArray(m.content)
      ? m.content.filter((p) => p?.type === 'image_url').map((p) => ({ role: m.role, url: p.image_url?.url ?? '' }))
      : []);
}

/** Whether a chat request is the screenshot tool's transcription. */
export function isTranscription(body) {
  const system = body?.messages?.find((m) => m.role === 'system')?.content;
  return typeof system === 'string' && system.startsWith('You read text from screenshots');
}

/** Checks one transcription request's image; returns [image, problems]. */
export function checkImage(body) {
  const problems = [];
  const parts = imageParts(body);
  if (parts.length !== 1) problems.push(`expected one image_url part, got ${parts.length}`);
  const last = body?.messages?.at(-1);
  if (last?.role !== 'user' || !Array.isArray(last.content)) problems.push('the image is not in the last user message');
  else if (last.content[0]?.type !== 'text') problems.push('the first content part is not the text');
  const url = parts[0]?.url ?? '';
  const prefix = 'data:image/png;base64,';
  if (!url.startsWith(prefix)) {
    problems.push(`not a PNG data URL: ${url.slice(0, 40)}`);
    return [null, problems];
  }
  const bytes = Buffer.from(url.slice(prefix.length), 'base64');
  const size = pngSize(bytes);
  if (!size) {
    problems.push('the data is not a PNG');
    return [null, problems];
  }
  if (Math.max(size.width, size.height) > MAX_SIDE) problems.push(`${size.width}x${size.height} is over ${MAX_SIDE} px`);
  return [{ ...size, bytes: bytes.length, url }, problems];
}

export class ScriptedVision extends ScriptedOpenAI {
  constructor({ transcript = '', respond, refuseImages = false }) {
    super();
    this.transcript = transcript;
    this.refuseImages = refuseImages;
    this.images = [];
    this.problems = [];
    this.respondWith(async (body, record) => {
      if (!isTranscription(body)) return respond(body, record);
      const [image, problems] = checkImage(body);
      if (image) this.images.push(image);
      this.problems.push(...problems);
      if (this.refuseImages) {
        return {
          status: 400,
          body: { error: { code: 400, message: 'image input is not supported - hint: if this is unexpected, you may need to provide the mmproj', type: 'invalid_request_error' } },
        };
      }
      return { content: this.transcript };
    });
  }
}

/** Starts a scripted vision model; `await server.close()` when done. */
export async function startScriptedVision(options) {
  return new ScriptedVision(options).listen();
}
