# template prompted_tools
- {{name}}: string
- {{description}}: string
- {{schema}}: string
- {{content}}: string

<section name="instructions" optional>
You can use these tools. To use one, reply with only a JSON object of the form {"name": "<tool name>", "arguments": {...}} and nothing else. To answer, reply in plain prose.
</section>

<section name="tool" optional>
- {{name}}: {{description}} Arguments (JSON schema): {{schema}}
</section>

<section name="result" optional>
Tool result:
{{content}}
</section>
