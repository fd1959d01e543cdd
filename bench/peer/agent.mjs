// LangGraph.js's prebuilt ReAct agent on the trajectory of our engine-overhead benchmark
// (src/bench.rs): 5 `read_page` tool steps plus a final answer, a ~1 KB question, ~2 KB tool
// results, against a zero-latency scripted chat model. Development only: never shipped.
// This file is also the entry of the peer's browser bundle (pkg-scripts/bench.sh).
import { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { AIMessage, HumanMessage } from '@langchain/core/messages';
import { tool } from '@langchain/core/tools';
import { MemorySaver } from '@langchain/langgraph';
import { createReactAgent } from '@langchain/langgraph/prebuilt';
import { z } from 'zod';

/** Tool steps per run; the answer is one more step, as in src/bench.rs (STEPS_PER_RUN = 6). */
export const TOOL_STEPS = 5;
export const STEPS_PER_RUN = TOOL_STEPS + 1;

// The same page and question as src/bench.rs.
const PAGE = 'Chlorophyll absorbs light. '.repeat(500);
const QUESTION = 'Explain, step by step, how the light reactions feed the Calvin cycle. '.repeat(14);
const ANSWER = 'Plants turn light, water and carbon dioxide into sugar and oxygen.';

/**
 * A scripted chat model with no latency: it calls `read_page` until TOOL_STEPS tool results
 * are in the conversation, then answers. What it returns depends only on the messages, so one
 * instance serves every run. `bindTools` returns the model itself (no schema conversion),
 * which if anything favours the peer.
 */
class ScriptedChatModel extends BaseChatModel {
  _llmType() {
    return 'scripted';
  }

  bindTools() {
    return this;
  }

  async _generate(messages) {
    const results = messages.filter((m) => m.getType() === 'tool').length;
    const message = results < TOOL_STEPS
      ? new AIMessage({
        content: '',
        tool_calls: [{
          id: `call_${results}`,
          name: 'read_page',
          args: { offset: results * 2000, max_chars: 2000 },
          type: 'tool_call',
        }],
      })
      : new AIMessage(ANSWER);
    return { generations: [{ text: typeof message.content === 'string' ? message.content : '', message }] };
  }
}

const readPage = tool(
  ({ offset, max_chars: maxChars }) => PAGE.slice(offset, offset + maxChars),
  {
    name: 'read_page',
    description: 'Reads part of the page text.',
    schema: z.object({ offset: z.number().int().min(0), max_chars: z.number().int().min(1) }),
  },
);

/** A compiled agent; with `checkpointer`, LangGraph's in-memory MemorySaver. */
export function makeAgent({ checkpointer = false } = {}) {
  return createReactAgent({
    llm: new ScriptedChatModel({}),
    tools: [readPage],
    ...(checkpointer ? { checkpointer: new MemorySaver() } : {}),
  });
}

let thread = 0;

/** One run of the trajectory; resolves to its duration in ms (performance.now()). */
export async function oneRun(agent, { checkpointer = false } = {}) {
  const config = checkpointer ? { configurable: { thread_id: `t${thread++}` } } : {};
  const start = performance.now();
  const out = await agent.invoke({ messages: [new HumanMessage(QUESTION)] }, config);
  const elapsed = performance.now() - start;
  const tools = out.messages.filter((m) => m.getType() === 'tool');
  const last = out.messages.at(-1);
  if (tools.length !== TOOL_STEPS || tools[0].content.length !== 2000 || last.content !== ANSWER) {
    throw new Error('the LangGraph run did not follow the script');
  }
  return elapsed;
}
