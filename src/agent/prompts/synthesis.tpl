# template synthesis
- {{question}}: string

## ready (optional)
Write the final answer to the question now, from the information above, in plain prose.

## step_limit (optional)
You have used all your steps. Write the best answer you can to the question now, from the information above, in plain prose. Say briefly if something is uncertain.

## stopped (optional)
The user asked you to stop. Write the best short answer you can from the information gathered so far, in plain prose.

## repeating (optional)
You were stopped from repeating a tool call that kept giving the same result. Write the best answer you can to the question now, from the information above, in plain prose. Say briefly if something is uncertain.

<section name="abstain" optional>
 If the page does not hold the answer, answer exactly: The page does not say.
</section>

<section name="question">


The question: {{question}}
</section>
