// Mozilla's Readability, injected from vendor/readability/ before content/extract.js (the npm
// package @mozilla/readability at the version package.json pins, which declares its types):
// globals of the content scripts' isolated world, absent if the injection failed. For
// `tsc --noEmit`; build.sh leaves *.d.ts files out of dist/.
import type { Readability as ReadabilityClass, isProbablyReaderable as readerable } from '@mozilla/readability';

declare global {
  const Readability: typeof ReadabilityClass | undefined;
  const isProbablyReaderable: typeof readerable | undefined;
}
