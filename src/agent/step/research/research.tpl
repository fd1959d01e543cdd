# template research
- {{question}}: string
- {{count}}: string
- {{subtopic}}: string
- {{index}}: string
- {{of}}: string
- {{others}}: string
- {{findings}}: string
- {{report}}: string

<section name="decompose" optional>
Research mode. The user's question: {{question}}

Split the question into at most {{count}} subtopics that together answer it, each a short phrase that can be researched on its own (with the page above and, where it is on, web search). No two subtopics may cover the same ground. Reply with only a JSON object: {"subtopics": ["<subtopic>", "..."]}.
</section>

<section name="subtopic" optional>
Research mode. The user's question: {{question}}

Research subtopic {{index}} of {{of}}: {{subtopic}}
The other subtopics are researched separately: {{others}}

Use the tools you are given to find what is known about this subtopic: query_page and read_page for the page above, and search_web_for_info for the web when it is offered. You have at most 3 rounds of tool calls. When you know enough, or nothing more can be found, reply without a tool call with your findings: a few short paragraphs of facts, each followed by the citation of its source exactly as the tools gave it, like [2] for a web result or [p3] for a page passage. Cite nothing else, and say plainly what could not be found.
</section>

<section name="fallback" optional>
Research mode. The user's question: {{question}}

Research subtopic {{index}} of {{of}}: {{subtopic}}
No tool can be used for it: from the page above and what you know, reply with your findings in a few short paragraphs. Cite page passages as [p3] where you use them, and cite nothing else.
</section>

<section name="synthesize" optional>
Research mode. The user's question: {{question}}

The research of each subtopic found the following (each finding keeps the citations of its sources):

{{findings}}

Write the report that answers the question, using only these findings. Start with one section per subtopic, each headed "## " and the subtopic, then a last section "## Synthesis" that answers the question by bringing the subtopics together. Keep each section short. Keep every citation next to the claim it supports, exactly as the findings give it ([2], [p3]); never invent a citation, and leave out any claim the findings do not support. Where a subtopic found nothing, say so in its section.
</section>

<section name="review" optional>
Research mode: review. The user's question: {{question}}

The findings of the research:

{{findings}}

The report written from them:

{{report}}

Check the report against the findings: claims the findings do not support, subtopics the report leaves out, and citations that are not next to a claim their finding supports. Reply with only a JSON object: {"fixes": [{"find": "<an exact sentence or phrase of the report>", "replace": "<what it should say instead; empty to remove it>"}]}. Give an empty list when the report needs no fix.
</section>
