# template user
- {{page_data}}: string
- {{shown}}: string
- {{total}}: string
- {{action}}: string

<section name="page" optional>
The page the user is reading (its title and URL, then its text as passages, each under a label such as [p1] and its headings):
{{page_data}}
When your answer uses a passage, cite its label in square brackets, e.g. [p1], after the sentence it supports. Cite only labels you were given.
</section>

<section name="page_cut" optional>
You have seen only part of the page ({{shown}} of its {{total}} passages). When the passages you were given do not hold the answer, call query_page to find the passages that do.
</section>

<section name="page_extra" optional>
Passages from further on in the page that match the question best:
{{page_data}}
</section>

<section name="page_unreadable" optional>
The user is on this page, but its text could not be read: answer from general knowledge and say so.
{{page_data}}
</section>

<section name="no_page" optional>
No page text is available: answer from general knowledge.
</section>

<section name="explain_request" optional>
Explain the text I selected on the page.
</section>

<section name="explain_close" optional>
Explain the selected text above: what it means where it stands on the page.
</section>

<section name="explained_selection" optional>
Explain the text I selected on the page:
{{page_data}}
</section>

<section name="action_selection" optional>
{{action}}: the text I selected on the page:
{{page_data}}
</section>

<section name="action_cut" optional>
The selection was cut: only its first {{shown}} characters (of {{total}}) are shown. Say so in your answer.
</section>
