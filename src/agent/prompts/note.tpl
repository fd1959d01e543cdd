# template note
- {{tool}}: string
- {{error_type}}: string
- {{analysis}}: string
- {{suggested_fix}}: string

<section name="note" optional>
Reflection on the failed call to {{tool}} ({{error_type}}): {{analysis}} Suggested fix: {{suggested_fix}}
</section>

<section name="alternative" optional>

This kind of failure happened before, or the call was repeated: do not make the same call again. Take an alternative approach: another tool, or other arguments.
</section>
