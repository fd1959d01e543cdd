# template observe
- {{question}}: string

## instruction
Judge the tool result above against the question below, and reply with only a JSON object with three fields. "should_continue": false if you can answer now, true if more information is needed. "final_answer": when you can answer now, your complete answer to the question, written out from what you found (or, when the page does not hold the answer, exactly: The page does not say.); else null. "failed": true when the tool result shows that the call failed (an error, or nothing of what it was called for), else false.

The question: {{question}}
