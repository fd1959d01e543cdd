// The agent's read_page tool as the extension sends it to an OpenAI-compatible server: its
// argument schema as schemars writes it (tests/fixtures/ollama/chat_request.json). Shared by
// the wire tests and the tool-calling tests.

export const READ_PAGE = {
  type: 'function',
  function: {
    name: 'read_page',
    description: 'Reads more of the page.',
    parameters: {
      additionalProperties: false,
      properties: {
        max_chars: { default: null, format: 'uint32', maximum: 8000, minimum: 1, type: ['integer', 'null'] },
        offset: { default: 0, format: 'uint32', minimum: 0, type: 'integer' },
      },
      title: 'ReadPageArgs',
      type: 'object',
    },
  },
};
