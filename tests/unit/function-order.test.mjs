// pkg-scripts/lib/function-order.mjs: the names that put like functions together when
// wasm-opt sorts by name, written into a module without touching anything else.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { renameForOrder, sortKey } from '../../pkg-scripts/lib/function-order.mjs';

function leb(value) {
  const out = [];
  do {
    const low = value & 0x7f;
    value >>>= 7;
    out.push(value ? low | 0x80 : low);
  } while (value);
  return out;
}

const section = (id, body) => [id, ...leb(body.length), ...body];
const text = (s) => [...leb(Buffer.byteLength(s)), ...Buffer.from(s)];

/** A module of `names.length` empty functions, named `names` (or unnamed), and where its
 * name section starts. */
function module(names, { named = true } = {}) {
  const n = names.length;
  const bytes = [0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00];
  bytes.push(...section(1, [1, 0x60, 0, 0]));
  bytes.push(...section(3, [n, ...Array(n).fill(0)]));
  const bodies = names.flatMap(() => [2, 0, 0x0b]);
  bytes.push(...section(10, [n, ...bodies]));
  const nameAt = bytes.length;
  if (named) {
    const entries = names.flatMap((name, i) => [...leb(i), ...text(name)]);
    const functions = [n, ...entries];
    bytes.push(...section(0, [...text('name'), 1, ...leb(functions.length), ...functions]));
  }
  return { input: Buffer.from(bytes), nameAt };
}

/** The function names of `bytes`' name section, by index. */
function namesOf(bytes) {
  const at = bytes.lastIndexOf(Buffer.from('name'));
  let p = at + 4;
  assert.equal(bytes[p], 1);
  p += 2; // subsection id, size (small)
  const count = bytes[p++];
  const names = [];
  for (let i = 0; i < count; i++) {
    const index = bytes[p++];
    const length = bytes[p++];
    names[index] = bytes.subarray(p, p + length).toString();
    p += length;
  }
  return names;
}

test('trait methods sort by trait and method, closures and drop glue last', () => {
  assert.equal(sortKey('<a::B as c::Tr>::m::h0123456789abcdef'), 'c::Tr::m|a::B');
  assert.equal(sortKey('a::f::h0123456789abcdef'), 'a::f');
  assert.equal(
    sortKey('<a::B as kljson::from::FromJson>::from_json::h0123456789abcdef'),
    '!json|kljson::from::FromJson::from_json|a::B',
  );
  assert.equal(sortKey('a::f::{{closure}}::h0123456789abcdef'), '~closure|a::f::{{closure}}');
  assert.equal(
    sortKey('core::ptr::drop_in_place<a::B>::h0123456789abcdef'),
    '~~core::ptr::drop_in_place<a::B>',
  );
  const keys = ['~~core::ptr::drop_in_place<X>', '~closure|a', 'z::plain', 'c::Tr::m|a::B'];
  assert.deepEqual([...keys].sort(), ['c::Tr::m|a::B', 'z::plain', '~closure|a', '~~core::ptr::drop_in_place<X>']);
});

test('each function is renamed to its place, and nothing else changes', () => {
  const names = [
    'core::ptr::drop_in_place<X>::h0123456789abcdef',
    '<a::B as c::Tr>::m::h0123456789abcdef',
    'a::f::{{closure}}::h0123456789abcdef',
    'z::plain',
  ];
  const { input, nameAt } = module(names);
  const { bytes, renamed } = renameForOrder(input);
  assert.equal(renamed, 4);
  assert.deepEqual(namesOf(bytes), ['f3', 'f0', 'f2', 'f1']);
  // Every section before the name section is copied byte for byte.
  assert.deepEqual(bytes.subarray(0, nameAt), input.subarray(0, nameAt));
  assert.equal(bytes[nameAt], 0, 'the name section follows');
  // The result is a module the engine accepts.
  assert.ok(WebAssembly.validate(bytes));
});

test('equal keys keep index order, and the places are zero-padded', () => {
  const names = Array.from({ length: 12 }, (_, i) => `same::h${String(i).padStart(16, '0')}`);
  const { bytes } = renameForOrder(module(names).input);
  assert.deepEqual(
    namesOf(bytes),
    names.map((_, i) => `f${String(i).padStart(2, '0')}`),
  );
});

test('a module without names is left as it is, and other input is refused', () => {
  const { input } = module(['a', 'b'], { named: false });
  const { bytes, renamed } = renameForOrder(input);
  assert.equal(renamed, 0);
  assert.deepEqual(bytes, input);
  assert.throws(() => renameForOrder(Buffer.from('not wasm at all')), /not a wasm module/);
});

test('with keepNames each place is followed by the own name of the function', () => {
  const { input } = module(['z::b', 'a::a']);
  const { bytes } = renameForOrder(input, { keepNames: true });
  assert.deepEqual(namesOf(bytes), ['f1 z::b', 'f0 a::a']);
});
