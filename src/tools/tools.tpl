# template tools

<section name="read_page" optional>
Read the page in order, whole passages from a character offset on. Use it to read on from a passage you were given; to find something, use query_page.
</section>

<section name="query_page" optional>
Find the passages of the page that best match a query (words that would appear in them), best first, each with its label and heading path. Use it when the passages you were given do not hold what you need.
</section>

<section name="request_input" optional>
Ask the user one short clarifying question and wait for the answer. Use it only when the question is ambiguous and neither the page nor general knowledge can settle it.
</section>

<section name="explain_text_with_context" optional>
Return the text the user selected on the page with its context: the enclosing paragraph, the heading path, the page title, URL and language. Makes no model call.
</section>

<section name="summarize_page_content" optional>
Summarize the whole page, however long (section by section when needed). Use it for a summary or an overview of the page.
</section>

<section name="extract_screenshot_text" optional>
Read the text the user sees on the page from a screenshot of the visible part of the tab, for pages whose text cannot be read otherwise (drawings, canvas apps, images of text, PDFs). Returns the text found in the screenshot.
</section>

<section name="search_web_for_info" optional>
Search the web. The results are graded for relevance to the query and the user's question; when too few are relevant the query is rewritten and searched again (at most 3 searches). Returns the relevant results numbered [1], [2], ...: cite them by those numbers.
</section>

<section name="grade_search_results" optional>
Grade search results for relevance to a query and the user's question: each gets relevant or not_relevant, a confidence in [0, 1] and a one-line reason.
</section>

<section name="rewrite_search_query" optional>
Rewrite a web search query that found nothing useful into a different one (other keywords, more specific or more general).
</section>
