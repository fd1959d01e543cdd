# template observe

## instruction
Judge the tool result above against the question. Reply with only a JSON object: {"should_continue": true, "final_answer": null, "failed": false} if more information is needed, or {"should_continue": false, "final_answer": "<the complete answer to the question>", "failed": false} if you can answer now. Set "failed" to true when the tool result shows that the call failed: an error, or nothing of what it was called for.
