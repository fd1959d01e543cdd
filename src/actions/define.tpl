# template define
- {{selection}}: string
- {{context}}: string (optional)
- {{title}}: string (optional)
- {{page_language}}: string (optional)
- {{target_language}}: string (optional)

## request
List the terms and names in the text I selected on the page, each with a one-line definition of what it means there (the paragraph around it tells you). One per line: the term, a colon, its definition. Answer in the language of the selected text.
The selected text:
{{selection}}
The paragraph around it:
{{context}}
