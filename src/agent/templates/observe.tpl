# template observe

## instruction
Judge the tool result above against the question. Reply with only a JSON object: {"should_continue": true, "final_answer": null} if more information is needed, or {"should_continue": false, "final_answer": "<the complete answer to the question>"} if you can answer now.
