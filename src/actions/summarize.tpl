# template summarize
- {{selection}}: string
- {{context}}: string (optional)
- {{title}}: string (optional)
- {{page_language}}: string (optional)
- {{target_language}}: string (optional)

## request
Summarize the text I selected on the page in a few sentences, in the language of the selected text. Keep its key points, names and numbers, and add nothing it does not say.
The selected text:
{{selection}}
The paragraph around it, for context:
{{context}}
