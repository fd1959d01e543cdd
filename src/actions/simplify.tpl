# template simplify
- {{selection}}: string
- {{context}}: string (optional)
- {{title}}: string (optional)
- {{page_language}}: string (optional)
- {{target_language}}: string (optional)

## request
Rewrite the text I selected on the page in plain, everyday words and short sentences, keeping its meaning. If a technical term cannot be avoided, explain it in a few words. Answer in the language of the selected text.
The selected text:
{{selection}}
The paragraph around it, for context:
{{context}}
