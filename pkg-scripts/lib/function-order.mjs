// Names the functions of a wasm module for the order they should have in the shipped file,
// so that `wasm-opt --reorder-functions-by-name` lays like code next to like.
//
//   node pkg-scripts/lib/function-order.mjs [--keep-names] IN.wasm OUT.wasm
//
// gzip finds repeats only within the last 32 KB it read, and the linker leaves a type's
// trait methods, its generic instances and its drop glue scattered across the module. Named
// by these keys, the instances of one trait method (every `Clone::clone`), the JSON codec's
// decoders and writers, the async state machines and the drop glue each sit together: 6 KB
// off the gzipped wasm for no change in the code (docs/decisions/function-order.md). Only the "name"
// custom section changes (its function names subsection, which wasm-opt --strip-debug
// drops afterwards); every other byte is copied as it is.

import { readFileSync, writeFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

/** The key a function with (demangled) `name` is sorted by. */
export function sortKey(name) {
  let key = name.replace(/::h[0-9a-f]{16}$/, '');
  const impl = key.match(/^<(.*?) as (.*)>::(.*)$/);
  if (impl) {
    // A trait method: by trait and method first, then by the type.
    key = `${impl[2]}::${impl[3]}|${impl[1]}`;
  }
  // The JSON codec's decoders and writers of every type, together.
  if (/FromJson|ToJson|Slot>::decode|json::fields::Fields/.test(name)) return `!json|${key}`;
  if (key.startsWith('core::ptr::drop_in_place')) return `~~${key}`;
  if (key.includes('{{closure}}')) return `~closure|${key}`;
  return key;
}

function readLeb(bytes, at) {
  let value = 0;
  let shift = 0;
  for (;;) {
    const byte = bytes[at++];
    value += (byte & 0x7f) * 2 ** shift;
    shift += 7;
    if (byte < 0x80) return [value, at];
  }
}

function leb(value) {
  const out = [];
  do {
    const low = value & 0x7f;
    value = Math.floor(value / 128);
    out.push(value ? low | 0x80 : low);
  } while (value);
  return Buffer.from(out);
}

/** `bytes` (a wasm module) with each named function renamed to its place in the order
 * (`f` and the zero-padded place; with `keepNames`, then a space and its name). */
export function renameForOrder(bytes, { keepNames = false } = {}) {
  bytes = Buffer.from(bytes);
  if (bytes.length < 8 || bytes.readUInt32LE(0) !== 0x6d736100) {
    throw new Error('not a wasm module');
  }
  const out = [bytes.subarray(0, 8)];
  let renamed = 0;
  let at = 8;
  while (at < bytes.length) {
    const id = bytes[at];
    const [size, start] = readLeb(bytes, at + 1);
    const end = start + size;
    let section = bytes.subarray(at, end);
    if (id === 0) {
      const [nameLength, nameStart] = readLeb(bytes, start);
      if (bytes.subarray(nameStart, nameStart + nameLength).toString() === 'name') {
        const body = [bytes.subarray(start, nameStart + nameLength)];
        let sub = nameStart + nameLength;
        while (sub < end) {
          const kind = bytes[sub];
          const [subSize, subStart] = readLeb(bytes, sub + 1);
          let content = bytes.subarray(subStart, subStart + subSize);
          if (kind === 1) {
            const [count, first] = readLeb(content, 0);
            const names = [];
            let p = first;
            for (let n = 0; n < count; n++) {
              let index;
              let length;
              [index, p] = readLeb(content, p);
              [length, p] = readLeb(content, p);
              const name = content.subarray(p, p + length).toString();
              names.push({ index, name, key: sortKey(name) });
              p += length;
            }
            const order = [...names].sort((a, b) =>
              a.key < b.key ? -1 : a.key > b.key ? 1 : a.index - b.index,
            );
            const place = new Map(order.map((entry, rank) => [entry.index, rank]));
            const width = String(names.length).length;
            const parts = [leb(count)];
            // The map keeps its ascending index order; only the names change.
            for (const { index, name: own } of names) {
              const placed = `f${String(place.get(index)).padStart(width, '0')}`;
              const name = Buffer.from(keepNames ? `${placed} ${own}` : placed);
              parts.push(leb(index), leb(name.length), name);
            }
            content = Buffer.concat(parts);
            renamed = count;
          }
          body.push(Buffer.from([kind]), leb(content.length), content);
          sub = subStart + subSize;
        }
        const newBody = Buffer.concat(body);
        section = Buffer.concat([Buffer.from([0]), leb(newBody.length), newBody]);
      }
    }
    out.push(section);
    at = end;
  }
  return { bytes: Buffer.concat(out), renamed };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const args = process.argv.slice(2);
  const keepNames = args[0] === '--keep-names';
  const [input, output] = keepNames ? args.slice(1) : args;
  if (!input || !output) {
    console.error('usage: node pkg-scripts/lib/function-order.mjs [--keep-names] IN.wasm OUT.wasm');
    process.exit(2);
  }
  const { bytes, renamed } = renameForOrder(readFileSync(input), { keepNames });
  if (renamed === 0) {
    console.error(`${input} has no function names: build it with its name section kept`);
    process.exit(1);
  }
  writeFileSync(output, bytes);
}
