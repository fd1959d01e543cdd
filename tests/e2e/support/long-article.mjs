// The long fixture article (tests/e2e/fixtures/long-article.html, about 100 KB): a made-up
// history of a canal, with headings and paragraphs composed from sentence templates by a
// seeded random source, so the page is the same on every run. Eight facts, one a section
// spread through the text, carry the answers the context tests ask for.
//
//   node tests/e2e/support/long-article.mjs    rewrites the committed fixture
//
// tests/unit/long-article.test.mjs checks that the committed file is this generator's output.

import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const LONG_ARTICLE_PATH = fileURLToPath(new URL('../fixtures/long-article.html', import.meta.url));

/** The facts the questions ask about, in page order (one per section they open). */
export const FACTS = [
  'The first boat through the Harrow locks, the Patience, carried 31 tons of slate in April 1794.',
  'The Castlebeck aqueduct took 212 navvies three summers to build and was finished in 1797.',
  'Engineer Miriam Osgood lined the summit pound with puddled clay from the Wenning valley.',
  'At its busiest, in 1836, the canal carried 418,000 tons of coal, lime and grain.',
  'The tunnel at Greyholme is 1,142 yards long and has no towpath, so boats were legged through.',
  'The railway company bought the canal in 1852 for 96,000 pounds and cut its tolls by half.',
  'The last commercial cargo, 40 tons of timber, reached Lune Basin on 9 March 1963.',
  'Volunteers of the Harrow Canal Trust reopened the eleven-mile summit in June 2004.',
];

const SECTIONS = [
  'Surveys and the Act of 1792', 'Cutting the Harrow Locks', 'The Castlebeck Aqueduct',
  'Water for the Summit', 'Boats, Boatmen and their Families', 'The Trade in Coal and Lime',
  'Greyholme Tunnel', 'Tolls, Debts and Shareholders', 'The Coming of the Railway',
  'Floods and Repairs', 'Decline in the Twentieth Century', 'The Last Cargoes',
  'Abandonment and Neglect', 'The Restoration Campaign', 'The Canal Today',
];

/** The section (index into SECTIONS) each fact opens. */
const FACT_SECTIONS = [1, 2, 3, 5, 6, 8, 11, 13];

const PEOPLE = ['Miriam Osgood', 'Thomas Fell', 'Agnes Pratt', 'John Rawlinson', 'Edward Capstick',
  'Hannah Lowther', 'William Bainbridge', 'Sarah Metcalfe', 'Robert Dent', 'Isaac Thwaite'];
const PLACES = ['Harrow', 'Castlebeck', 'Greyholme', 'Lune Basin', 'Wenning Bridge', 'Kirkby Moor',
  'Sedgwick Wharf', 'Hale End', 'Burton Fold', 'Crook Lane'];
const GOODS = ['coal', 'lime', 'slate', 'grain', 'timber', 'wool', 'salt', 'stone', 'bricks', 'peat'];
const THINGS = ['lock gates', 'the towpath', 'the wharf cranes', 'the stop planks', 'the toll house',
  'the lengthsman\'s cottage', 'the feeder channel', 'the culverts', 'the swing bridge', 'the stables'];
const FEELINGS = ['cautious', 'hopeful', 'impatient', 'sceptical', 'proud', 'weary', 'determined'];

const TEMPLATES = [
  (r) => `In ${r.year()}, ${r.pick(PEOPLE)} wrote to the committee that ${r.pick(THINGS)} near ${r.pick(PLACES)} needed repair before the autumn traffic began.`,
  (r) => `Boats leaving ${r.pick(PLACES)} usually carried ${r.pick(GOODS)} outward and came back with ${r.pick(GOODS)}, so that no horse walked the towpath for nothing.`,
  (r) => `The minutes of the company record a ${r.pick(FEELINGS)} debate about ${r.pick(THINGS)}, which ended only when ${r.pick(PEOPLE)} offered to pay for the work.`,
  (r) => `A lengthsman was responsible for about ${r.int(2, 6)} miles of bank, and he walked his length every morning, looking for leaks and fallen stones.`,
  (r) => `Local farmers complained that the cut had divided their fields, and the company built ${r.int(3, 19)} accommodation bridges to answer them.`,
  (r) => `Tolls were charged by the ton and by the mile; a cargo of ${r.pick(GOODS)} paid ${r.int(1, 4)}d. a ton-mile for most of the century.`,
  (r) => `Near ${r.pick(PLACES)} the canal follows the contour of the hill so closely that a walker can see the same chimney from four sides.`,
  (r) => `Letters kept in the county archive show that ${r.pick(PEOPLE)} was ${r.pick(FEELINGS)} about the cost, which had risen to ${r.int(2, 40) * 1000} pounds by ${r.year()}.`,
  (r) => `Children of boat families often had no fixed school, and a mission at ${r.pick(PLACES)} taught reading in the evenings during the winter stoppage.`,
  (r) => `When frost closed the canal, gangs broke the ice with a heavy boat rocked from side to side by a dozen men holding a rail along its middle.`,
  (r) => `The wharf at ${r.pick(PLACES)} had a warehouse of ${r.int(2, 4)} storeys, a weighing machine and a public house that served the boatmen until late.`,
  (r) => `Engineers argued for years about whether ${r.pick(THINGS)} should be rebuilt in stone or in cast iron, and the records show no clear winner.`,
  (r) => `A survey of ${r.year()} counted ${r.int(20, 90)} boats registered at ${r.pick(PLACES)}, most of them owned by families rather than by carrying companies.`,
  (r) => `The water bailiff measured the level of the reservoir every week, and in dry summers the company limited each boat to ${r.int(12, 25)} tons.`,
  (r) => `Old photographs show horses in leather blinkers, a boy walking beside them, and ${r.pick(GOODS)} piled high under tarpaulins on the deck.`,
  (r) => `Repairs to ${r.pick(THINGS)} at ${r.pick(PLACES)} were paid for out of the toll receipts, which the treasurer reported to the shareholders each quarter.`,
];

/** mulberry32: a small seeded random source (same sequence on every run). */
function seeded(seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    int: (lo, hi) => lo + Math.floor(next() * (hi - lo + 1)),
    pick: (list) => list[Math.floor(next() * list.length)],
    year: () => 1792 + Math.floor(next() * 170),
  };
}

const escape = (text) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** The whole page, deterministic. */
export function longArticleHtml() {
  const r = seeded(1792);
  const factAt = new Map(FACTS.map((fact, i) => [FACT_SECTIONS[i], fact]));
  const body = [];
  SECTIONS.forEach((heading, s) => {
    body.push(`<h2>${escape(heading)}</h2>`);
    for (let p = 0; p < 9; p++) {
      const sentences = [];
      if (p === 0 && factAt.has(s)) sentences.push(factAt.get(s));
      const count = r.int(4, 7);
      for (let i = 0; i < count; i++) sentences.push(r.pick(TEMPLATES)(r));
      body.push(`<p>${escape(sentences.join(' '))}</p>`);
    }
  });
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>The Harrow and Lune Canal: A History</title>
</head>
<body>
<header><nav><a href="#">Local History Society</a> · <a href="#">Waterways</a></nav></header>
<main>
<article>
<h1>The Harrow and Lune Canal: A History</h1>
<p class="byline">By the Waterways Group of the Harrow Local History Society</p>
${body.join('\n')}
</article>
</main>
<footer><p>Generated fixture for the KnowledgeLens context tests; all people and places are invented.</p></footer>
</body>
</html>
`;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  writeFileSync(LONG_ARTICLE_PATH, longArticleHtml());
  console.log(`wrote ${LONG_ARTICLE_PATH} (${Buffer.byteLength(longArticleHtml())} bytes)`);
}
