# template reflect
- {{tool}}: string
- {{arguments}}: string
- {{error_type}}: string
- {{error}}: string
- {{earlier}}: list

<section name="instruction" optional>
Your call to {{tool}} with the arguments {{arguments}} failed ({{error_type}}): {{error}}
Before you try again, reflect on this failure. Reply with only a JSON object: {"error_type": "<a short name for the kind of error>", "analysis": "<why the call failed>", "suggested_fix": "<what to do differently in the next call>"}.
</section>

<section name="earlier" optional>

Reflections on earlier failures of the same tool or of the same kind:
{{earlier}}
</section>
