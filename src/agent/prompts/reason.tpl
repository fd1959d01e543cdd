# template reason
- {{observation}}: string

## observation
Observation: {{observation}}
