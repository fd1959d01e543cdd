// Not part of the vendored package: the declarations of pdf.min.mjs (the npm package
// `pdfjs-dist` at the version package.json pins, which build.sh copies here) for
// `tsc --noEmit`. build.sh leaves declaration files out of every build.
export * from 'pdfjs-dist';
