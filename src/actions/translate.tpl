# template translate
- {{selection}}: string
- {{context}}: string (optional)
- {{title}}: string (optional)
- {{page_language}}: string (optional)
- {{target_language}}: string (optional)

## request
Translate the text I selected on the page into {{target_language}}. Reply with the translation only, keeping its meaning, tone, names and numbers.
The selected text:
{{selection}}
The paragraph around it, for context only (do not translate it):
{{context}}
