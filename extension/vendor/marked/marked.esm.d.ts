// Not part of the vendored package: the declarations of marked.esm.js (the npm package
// `marked` at the version package.json pins) for `tsc --noEmit`, so the vendored code itself is
// not type-checked. build.sh leaves *.d.ts files out of dist/.
export * from 'marked';
